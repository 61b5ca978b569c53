"""README's Runner example, as written, on the embedded local model: the blueprint block and the
Python block are taken from README.md and run unchanged (only the store path is the test's)."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
from pathlib import Path

import pytest

from slateboard.blueprint import load_blueprint
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

README = Path(__file__).resolve().parents[2] / "README.md"


def _notes_yaml() -> str:
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- readme-test: file notes\.yaml -->\s*```yaml\n(.*?)```", text, re.S)
    assert found is not None, "README lost its notes.yaml block"
    return found.group(1)


@pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama_cpp is not installed (pip install 'slateboard[local]')"
)
def test_the_readme_runner_example_passes_on_the_local_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_LOCAL_THREADS", os.environ.get("SLATEBOARD_LOCAL_THREADS", "1"))
    (tmp_path / "notes.yaml").write_text(_notes_yaml(), encoding="utf-8")

    async def main() -> tuple[str, str, object]:
        store = await open_store(f"sqlite:///{tmp_path / 'boards.db'}")
        try:
            board = await create_board(store, load_blueprint(tmp_path / "notes.yaml"), inputs={"task": "Plan a picnic"})
            result = await Runner(store, board, model="local").run()
            return result.end_reason, result.end_status, result.answer
        finally:
            await store.close()

    reason, status, answer = asyncio.run(main())
    assert (reason, status) == ("done", "solved")
    assert isinstance(answer, str) and answer.strip()
