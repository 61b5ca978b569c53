"""Issue 18: a worker's prompt is split into view, format and instruction parts for accounting.

Every LLM proposal record carries ``meta.prompt_parts``: characters per part (they add up to the
prompt the model got) and the call's prompt tokens shared out over the parts (they add up to the
model's count); ``slateboard log`` shows the split."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.models import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.workers.prompt import split_tokens

BP: dict[str, Any] = {
    "name": "parts",
    "schema": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "answer": {"type": "string", "minLength": 3}},
    },
    "initial_state": {"task": "name a colour"},
    "workers": {"w": {"reads": ["/task"], "writes": ["/answer"], "instruction": "Answer the task in one word."}},
    "rules": [{"on": {"op": "start"}, "invoke": "w"}],
    "done": "has(state.answer)",
}


def reply(value: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/answer", "value": value}]})


async def run_board(url: str) -> tuple[str, list[Any], ScriptedModel]:
    store = await open_store(url)
    board = await create_board(store, BP)
    # The first answer is too short (schema rejection): the retry's prompt carries feedback.
    model = ScriptedModel([reply("no"), reply("blue")])
    result = await Runner(store, board, model=model).run()
    assert result.end_reason == "done"
    proposals = [r for r in await store.read_records(board) if r.kind == "proposal"]
    await store.close()
    return board, proposals, model


async def test_the_parts_add_up_to_the_prompt_and_to_its_tokens(tmp_path: Path) -> None:
    _, proposals, model = await run_board(f"sqlite:///{tmp_path / 'parts.db'}")
    assert [r.outcome for r in proposals] == ["rejected", "accepted"]
    for rec, call in zip(proposals, model.calls, strict=True):
        parts = rec.meta["prompt_parts"]
        prompt = sum(len(m.content) for m in call.messages)
        assert sum(parts["chars"].values()) == prompt
        assert all(parts["chars"][k] > 0 for k in ("view", "format", "instruction"))
        assert parts["prompt_tokens"] == rec.usage.tokens_in > 0
        assert sum(parts["tokens"].values()) == rec.usage.tokens_in
    # The feedback on the rejection is instruction, not view: only that part grew.
    first, second = (r.meta["prompt_parts"]["chars"] for r in proposals)
    assert second["instruction"] > first["instruction"]
    assert (second["view"], second["format"]) == (first["view"], first["format"])


def test_the_log_shows_the_split(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'log.db'}"
    board, proposals, _ = asyncio.run(run_board(url))
    shown = CliRunner().invoke(app, ["log", board, "--store", url])
    assert shown.exit_code == 0, shown.output
    split = proposals[1].meta["prompt_parts"]["tokens"]
    assert f"(v{split['view']} f{split['format']} i{split['instruction']})" in shown.stdout


@given(
    st.integers(min_value=0, max_value=10_000),
    st.dictionaries(st.sampled_from(["view", "format", "instruction"]), st.integers(0, 5000), min_size=3),
)
def test_split_tokens_adds_up_and_is_proportional(tokens: int, chars: dict[str, int]) -> None:
    split = split_tokens(tokens, chars)
    total = sum(chars.values())
    assert sum(split.values()) == (tokens if total > 0 else 0)
    for k, v in split.items():
        assert v >= 0
        if total:
            assert abs(v - tokens * chars[k] / total) < 1
