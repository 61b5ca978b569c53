"""The first team (examples/builder_notes.py, shown by docs/first-team.md) runs end to end, its
answer is a typed ``Plan``, its log replays, and the page shows exactly the example's code."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "builder_notes.py"
PAGE = ROOT / "docs" / "first-team.md"


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("builder_notes", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _reply(path: str, value: object) -> str:
    return json.dumps({"patch": [{"op": "add", "path": path, "value": value}]})


def test_the_page_and_the_readme_show_the_example() -> None:
    """One first team: the page's Python block and the README's are the example file's code (its
    docstring aside)."""
    code = EXAMPLE.read_text(encoding="utf-8").split('"""\n', 1)[1].lstrip("\n")
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
    assert blocks and blocks[0] == code
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("### Your first team in Python", 1)[1]
    assert re.findall(r"```python\n(.*?)```", section, re.S)[0] == code


async def test_first_team_on_a_scripted_model(tmp_path: Path) -> None:
    example = _example()
    replies = [
        _reply("/notes/-", "Bring bread"),
        _reply("/notes/-", "Bring fruit"),
        json.dumps({"title": "Picnic", "steps": ["Pack bread", "Pack fruit"]}),
    ]
    plan = await example.main("scripted:" + json.dumps(replies), f"sqlite:///{tmp_path / 'b.db'}")
    assert isinstance(plan, example.Plan) and plan.steps == ["Pack bread", "Pack fruit"]


async def test_a_plan_that_does_not_fit_is_retried_with_the_reason(tmp_path: Path) -> None:
    example = _example()
    replies = [
        _reply("/notes/-", "Bring bread"),
        _reply("/notes/-", "Bring fruit"),
        json.dumps({"title": "Picnic", "steps": []}),  # min_length=1: the kernel rejects it
        json.dumps({"title": "Picnic", "steps": ["Go"]}),
    ]
    plan = await example.main("scripted:" + json.dumps(replies), f"sqlite:///{tmp_path / 'b.db'}")
    assert plan.steps == ["Go"]


@pytest.mark.slow
async def test_first_team_on_the_local_model(tmp_path: Path) -> None:
    """The first team on the embedded default model: it ends with a Plan (constrained decoding
    makes the reply fit; the kernel checked it)."""
    pytest.importorskip("llama_cpp", reason="the local extra (llama-cpp-python) is not installed")
    example = _example()
    plan = await example.main("local", f"sqlite:///{tmp_path / 'b.db'}")
    assert isinstance(plan, example.Plan) and plan.title and 1 <= len(plan.steps) <= 3
