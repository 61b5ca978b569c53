"""Issue 35: a model that cannot be used as configured is a usage error found before any call;
a key the provider refuses during a call is a failed call, logged as a rejection at stage
``model`` (the run ends failed, nothing crashes, the key is in no message).

The provider is a real loopback HTTP server; the board store is real SQLite.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from models_testkit import StartStub, StubReply
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.errors import UsageError
from slateboard.models import (
    AnthropicModel,
    Message,
    ModelAuthError,
    ModelConfigError,
    ModelError,
    OpenAICompatModel,
    RetryPolicy,
)
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

KEY = "sk-refused-" + uuid.uuid4().hex

NOTES = {"type": "array", "items": {"type": "string"}}
BLUEPRINT: dict[str, Any] = {
    "name": "notes",
    "schema": {"type": "object", "properties": {"notes": NOTES, "answer": {"type": "string"}}},
    "initial_state": {"notes": []},
    "workers": {"writer": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "writer"}],
    "done": "has(state.answer)",
}


async def test_a_bad_model_string_is_a_usage_error_before_any_record(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'boards.db'}")
    try:
        board = await create_board(store, BLUEPRINT)
        with pytest.raises(ModelConfigError) as caught:
            await Runner(store, board, model="nosuchprovider:x").run()
        assert isinstance(caught.value, UsageError) and not isinstance(caught.value, ModelError)
        assert "unknown provider 'nosuchprovider'" in str(caught.value)
        assert [r for r in await store.read_records(board) if r.kind == "proposal"] == []
    finally:
        await store.close()


def test_a_bad_model_string_exits_with_the_usage_status(tmp_path: Path) -> None:
    blueprint = tmp_path / "notes.json"
    blueprint.write_text(json.dumps(BLUEPRINT))
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    result = CliRunner().invoke(app, ["run", str(blueprint), "--store", store, "--model", "nosuchprovider:x"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith("error: model configuration: ") and "nosuchprovider" in result.stderr


async def test_a_key_refused_during_a_run_is_a_rejection_at_stage_model(
    tmp_path: Path, stub_server: StartStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gateway echoes the key it refused, as some do: the one place it could leak from.
    refusal = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}}
    server = await stub_server(StubReply(401, refusal))
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", KEY)
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    store = await open_store(url)
    try:
        board = await create_board(store, BLUEPRINT)
        result = await Runner(store, board, model=f"openai:m@{server.url}/v1").run()
        records = await store.read_records(board)
        info = await store.board_info(board)
    finally:
        await store.close()
    assert server.requests and server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    proposals = [r for r in records if r.kind == "proposal"]
    assert proposals and all((r.outcome, r.stage) == ("rejected", "model") for r in proposals)
    assert all("API key missing or rejected (HTTP 401" in (r.reason or "") for r in proposals)
    assert {r.meta.get("error_type") for r in proposals} == {"ModelAuthError"}
    assert "Incorrect API key provided: ***" in (proposals[0].reason or "")
    assert result.end_status == "failed" and info.status == "failed"
    assert "model unavailable" in result.end_reason and "HTTP 401" in result.end_reason
    shown = await asyncio.to_thread(CliRunner().invoke, app, ["log", board, "--store", url], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert "HTTP 401" in shown.output
    for text in (json.dumps([r.to_json() for r in records]), result.end_reason, shown.output):
        assert KEY not in text


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_a_key_given_to_the_model_itself_is_masked_in_the_auth_error(
    stub_server: StartStub, provider: str
) -> None:
    key = f"sk-direct-{provider}-" + uuid.uuid4().hex
    server = await stub_server(StubReply(403, {"error": {"message": f"key {key} has no access"}}))
    model: Any = (OpenAICompatModel if provider == "openai" else AnthropicModel)(
        "m", base_url=f"{server.url}/v1", api_key=key, retry=RetryPolicy(max_attempts=1)
    )
    with pytest.raises(ModelAuthError, match=r"API key missing or rejected \(HTTP 403") as caught:
        await model.generate([Message.user("hi")])
    assert key not in str(caught.value) and "key *** has no access" in str(caught.value)
