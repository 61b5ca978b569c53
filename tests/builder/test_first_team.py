"""The first-team example (examples/builder_notes.py) runs end to end and its log replays."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

EXAMPLE = Path(__file__).parents[2] / "examples" / "builder_notes.py"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("builder_notes", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reply(path: str, value: object) -> str:
    return json.dumps({"patch": [{"op": "add", "path": path, "value": value}]})


async def test_first_team_on_a_scripted_model(tmp_path: Path) -> None:
    replies = [
        _reply("/notes/-", "Bring bread"),
        _reply("/notes/-", "Bring fruit"),
        _reply("/answer", "Bread and fruit"),
    ]
    state = await _example().main("scripted:" + json.dumps(replies), f"sqlite:///{tmp_path / 'b.db'}")
    assert state.notes == ["Bring bread", "Bring fruit"] and state.answer == "Bread and fruit"


@pytest.mark.slow
async def test_first_team_on_the_local_model(tmp_path: Path) -> None:
    """The README's first team on the embedded default model: it ends with notes and an answer."""
    pytest.importorskip("llama_cpp", reason="the local extra (llama-cpp-python) is not installed")
    state = await _example().main("local", f"sqlite:///{tmp_path / 'b.db'}")
    assert state.notes and all(isinstance(n, str) and n for n in state.notes)
    assert state.answer
