"""Every code block of docs/*.md runs, as README.md's do (tests/doc_blocks.py): python scripts,
shell commands, YAML blueprints compiled. The tutorial's blocks run a team on the local model
(marked slow) and must end with a non-empty answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from doc_blocks import ROOT, Block, params, parse_blocks, run_block, runnable

DOCS = sorted((ROOT / "docs").glob("*.md"))
BLOCKS = {page.name: parse_blocks(page.read_text(encoding="utf-8"), f"docs/{page.name}") for page in DOCS}
CASES = [(page, block) for page, blocks in BLOCKS.items() for block in runnable(blocks)]
_RUN = re.compile(r"^slateboard run\b")
_ANSWER = re.compile(r"^Answer: \S", re.M)


def test_the_docs_have_runnable_blocks() -> None:
    assert "tutorial.md" in BLOCKS
    tutorial = runnable(BLOCKS["tutorial.md"])
    assert any(b.lang == "python" and not b.skip for b in tutorial)
    assert any(b.lang == "bash" and not b.skip for b in tutorial)
    for page, block in CASES:
        assert block.skip or block.lang in ("yaml", "yml", "json") or block.slow or page != "tutorial.md", block.id


@pytest.mark.parametrize(
    ("page", "block"),
    [pytest.param(page, *p.values, id=p.id, marks=p.marks) for page, b in CASES for p in params([b], f"{page}:")],
)
def test_docs_block(page: str, block: Block, tmp_path: Path) -> None:
    outputs = run_block(block, BLOCKS[page], tmp_path, hide="")
    if block.lang == "bash":
        from doc_blocks import commands

        for command, out in zip(commands(block, block.code()), outputs, strict=True):
            if _RUN.match(command):
                assert _ANSWER.search(out), f"{block.where}: {command!r} printed no answer:\n{out[-2000:]}"
