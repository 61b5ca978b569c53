"""No module is a big room without a reason: a source module over ``MAX_LINES`` lines must be split,
or say at the top of its docstring, in a paragraph starting ``Long by design:``, why it is one."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "src" / "slateboard", ROOT / "eval" / "src" / "slateboard_eval")
MAX_LINES = 600
MARK = "Long by design:"


def big_rooms_without_reason(roots: tuple[Path, ...], max_lines: int = MAX_LINES) -> list[str]:
    """Every module under ``roots`` longer than ``max_lines`` whose docstring gives no reason."""
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            lines = text.count("\n")
            if lines <= max_lines:
                continue
            doc = ast.get_docstring(ast.parse(text)) or ""
            if not any(p.startswith(MARK) for p in doc.split("\n\n")):
                found.append(f"{path.relative_to(root)}: {lines} lines and no '{MARK}' paragraph")
    return found


def test_every_big_module_is_split_or_says_why() -> None:
    assert big_rooms_without_reason(SOURCES) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    body = "x = 1\n" * (MAX_LINES + 1)
    (tmp_path / "silent.py").write_text('"""A module."""\n' + body)
    (tmp_path / "reasoned.py").write_text(f'"""A module.\n\n{MARK} one job, one reading.\n"""\n' + body)
    (tmp_path / "small.py").write_text('"""Small."""\nx = 1\n')
    found = big_rooms_without_reason((tmp_path,))
    assert len(found) == 1 and "silent.py" in found[0]
