"""Every fenced code block of README.md runs, one test case per block (named by its heading and
its position under it), so a failing case names the block. How blocks run and the
``<!-- readme-test: ... -->`` markers that steer them: tests/doc_blocks.py (shared with
tests/docs/test_docs_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from doc_blocks import ROOT, SHELLS, Block, params, parse_blocks, run_block, runnable

README = ROOT / "README.md"
BLOCKS = parse_blocks(README.read_text(encoding="utf-8"), "README")
CASES = runnable(BLOCKS)


def test_the_readme_has_runnable_blocks_and_few_skips() -> None:
    ids = [b.id for b in CASES]
    assert len(ids) == len(set(ids)), ids
    assert any(b.lang == "python" for b in CASES) and any(b.lang in SHELLS for b in CASES)
    skipped = [f"{b.id}: {b.skip}" for b in CASES if b.skip]
    print("README blocks not run:", *skipped, sep="\n  ")
    assert len(skipped) <= len(CASES) // 2, skipped


@pytest.mark.parametrize("block", params(CASES))
def test_readme_block(block: Block, tmp_path: Path) -> None:
    run_block(block, BLOCKS, tmp_path, hide="README.md")
