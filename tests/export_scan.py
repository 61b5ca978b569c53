"""Where the exported names of slateboard's subpackages are referenced outside their subpackage.

``references(package, names)`` answers, for each name of ``names`` (the ``__all__`` of the
dotted ``package``), the files outside the package's own folder that refer to it: the sources of
the other subpackages and of ``slateboard`` itself, ``eval/src``, ``benchmarks/``, ``examples/``,
``docs/**/*.md`` and ``README.md``. Tests never count: a name only tests use is not public.

What counts as a reference, so that a common word (``wait``, ``tool``) is not found by accident:

* Python: an import of the name from the package or one of its modules (relative imports are
  resolved), or an attribute ``M.name`` where ``M`` is bound to the package or one of its modules,
  or a dotted ``slateboard.<package>[.module].name``;
* Markdown: the name as a word inside code (inline or fenced: docs mention API names as code)
  on a page that names the package (``slateboard.team``) somewhere, and the Python of fenced
  blocks like Python files;
* any file: a dotted path ``slateboard.<package>[.module].name`` or ``...module:name`` (the
  function-worker form of blueprints).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".json", ".txt"}
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`([^`\n]+)`")


def _corpus() -> Iterator[Path]:
    """Every file whose references count (tests excluded)."""
    yield from sorted((SRC / "slateboard").rglob("*.py"))
    for folder in (ROOT / "eval" / "src", ROOT / "benchmarks", ROOT / "examples"):
        yield from sorted(p for p in folder.rglob("*") if p.suffix in TEXT_SUFFIXES and p.is_file())
    yield from sorted(p for p in (ROOT / "docs").rglob("*.md"))
    yield ROOT / "README.md"


def _module_of(path: Path) -> str | None:
    """The dotted module a file of src/ is (``None`` elsewhere)."""
    try:
        rel = path.relative_to(SRC)
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _inside(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _absolute(node: ast.ImportFrom, module: str | None, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` names (relative ones resolved against ``module``)."""
    if not node.level:
        return node.module or ""
    if module is None:
        return node.module or ""
    base = module.split(".")
    # A package's own module is its package; a plain module's package is its parent.
    drop = node.level - 1 if is_package else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join([*base, *([node.module] if node.module else [])])


def _python_refs(source: str, package: str, names: set[str], module: str | None, is_package: bool) -> set[str]:
    """The ``names`` of ``package`` a piece of Python refers to (imports and ``M.name``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    found: set[str] = set()
    bound: set[str] = set()  # local names bound to the package or one of its modules
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(node, module, is_package)
            for alias in node.names:
                if _inside(origin, package) and alias.name in names:
                    found.add(alias.name)
                elif _inside(f"{origin}.{alias.name}", package):
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _inside(alias.name, package) and alias.asname:
                    bound.add(alias.asname)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in names:
            owner = _dotted(node.value)
            if owner is not None and (owner in bound or _inside(owner, package)):
                found.add(node.attr)
    return found


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _dotted(node.value)
        return None if owner is None else f"{owner}.{node.attr}"
    return None


def _dotted_refs(text: str, package: str, names: set[str]) -> set[str]:
    pattern = re.compile(re.escape(package) + r"(?:\.\w+)*[.:](\w+)")
    return {m.group(1) for m in pattern.finditer(text) if m.group(1) in names}


def _markdown_refs(text: str, package: str, names: set[str]) -> set[str]:
    found: set[str] = set()
    code = [m.group(2) for m in FENCE.finditer(text)]
    for block in code:
        found |= _python_refs(block, package, names, None, False)
    if not re.search(re.escape(package) + r"\b(?!\.\w)", text):
        return found
    code += INLINE_CODE.findall(FENCE.sub("", text))
    words = {w for chunk in code for w in re.findall(r"\w+", chunk)}
    return found | (words & names)


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8", errors="replace")


def references(package: str, names: Iterable[str]) -> dict[str, list[str]]:
    """For each of ``names`` (exported by the dotted ``package``), the repository-relative files
    outside the package's folder that refer to it (empty: nothing outside uses it)."""
    wanted = set(names)
    result: dict[str, list[str]] = {name: [] for name in wanted}
    for path in _corpus():
        module = _module_of(path)
        if module is not None and _inside(module, package):
            continue
        text = _text(path)
        found = _dotted_refs(text, package, wanted)
        if path.suffix == ".py":
            found |= _python_refs(text, package, wanted, module, path.name == "__init__.py")
        elif path.suffix == ".md":
            found |= _markdown_refs(text, package, wanted)
        for name in found:
            result[name].append(path.relative_to(ROOT).as_posix())
    return result


def unreferenced(package: str, names: Iterable[str]) -> list[str]:
    """The ``names`` of ``package`` nothing outside it refers to, sorted."""
    return sorted(name for name, where in references(package, names).items() if not where)
