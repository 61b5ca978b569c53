"""slateboard-eval uses only the core's public API: no module of ``slateboard_eval`` imports a
``_``-prefixed module of ``slateboard`` (``slateboard.cli._common``) or a ``_``-prefixed name
from one, read from the source with ``ast`` (every import: module level, ``TYPE_CHECKING`` and
inside functions). Its CLI takes what it needs from ``slateboard.cli.plugin``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "slateboard_eval"


def _private_imports(path: Path) -> Iterator[str]:
    """``LINE: what`` for each import in ``path`` that reaches into slateboard's private parts."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            modules, names = [node.module], [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            modules, names = [a.name for a in node.names], []
        else:
            continue
        for module in modules:
            parts = module.split(".")
            if parts[0] != "slateboard":
                continue
            if any(p.startswith("_") for p in parts):
                yield f"{node.lineno}: {module}"
            yield from (f"{node.lineno}: {module}.{n}" for n in names if n.startswith("_"))


def test_the_walk_sees_a_private_import(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from slateboard.cli._common import console\n"
        "from slateboard.cli.plugin import console\n"
        "def f():\n    import slateboard.cli._errors\n    from slateboard.models import _hidden\n",
        encoding="utf-8",
    )
    assert list(_private_imports(sample)) == [
        "1: slateboard.cli._common",
        "4: slateboard.cli._errors",
        "5: slateboard.models._hidden",
    ]


def test_slateboard_eval_imports_nothing_private_from_slateboard() -> None:
    files = sorted(SRC.rglob("*.py"))
    assert len(files) > 20 and any(f.parent.name == "cli" for f in files)  # the walk reads the package
    found = [f"{f.relative_to(SRC.parent)}:{hit}" for f in files for hit in _private_imports(f)]
    assert found == []


def test_the_eval_cli_uses_the_plugin_module() -> None:
    cli = SRC / "cli"
    users = [f.name for f in sorted(cli.glob("*.py")) if "slateboard.cli.plugin" in f.read_text(encoding="utf-8")]
    assert users == ["_eval.py", "_faults.py", "_suites.py"]
