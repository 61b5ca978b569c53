"""Cached input (issue 42): the prompt tokens a provider served from its cache (OpenAI's
``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``) and wrote to it
(``cache_creation_input_tokens``) are kept in the log, priced at their own rates and shown on
every cost surface; a report of more cached tokens than prompt tokens is a logged ``unknown``;
records written before the counts existed decode to the same bytes and hash."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import ReceivedRequest, StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY, note_loop
from slateboard.errors import InvalidInput
from slateboard.kernel.record import Record, Usage
from slateboard.models import AnthropicModel, Message, resolve_model
from slateboard.models.pricing import PriceTable
from slateboard.runtime import Runner, create_board
from slateboard.runtime.result import record_cost
from slateboard.stores import open_store
from slateboard.web._shapes import record_json, usage_json

MODEL = "gpt-4o-mini"
CACHED = {"prompt_tokens": 1000, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 768}}


async def _run(usage: dict[str, Any], tmp_path: Path, name: str) -> tuple[str, str, Any]:
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=usage))]).start()
    url = f"sqlite:///{tmp_path / (name + '.db')}"
    try:
        store = await open_store(url)
        board = await create_board(store, note_loop(name, until=2))
        result = await Runner(store, board, model=f"openai:{MODEL}@{server.url}/v1", parallel=1).run()
        await store.close()
    finally:
        await server.close()
    return url, board, result


@pytest.fixture
async def cached_board(tmp_path: Path) -> AsyncIterator[tuple[str, str, Any]]:
    yield await _run(CACHED, tmp_path, "cached")


def _cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from slateboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "250"},
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


async def test_openai_cached_tokens_are_logged_and_priced_at_the_cached_rate(
    cached_board: tuple[str, str, Any],
) -> None:
    url, board, result = cached_board
    table = PriceTable()
    call = table.cost(MODEL, 1000, 20, cached_in=768)
    plain = table.cost(MODEL, 1000, 20)
    assert call is not None and plain is not None and call < plain
    assert result.cost_usd == pytest.approx(2 * call)
    worker = result.usage_by_worker["a"]
    assert (worker.tokens_in, worker.cache_read, worker.cache_write) == (2000, 2 * 768, 0)
    assert result.to_json()["usage_by_worker"]["a"]["cache_read"] == 2 * 768

    store = await open_store(url)
    try:
        records = [r for r in await store.read_records(board, 1, limit=100) if r.usage.tokens_in]
        assert [(r.usage.tokens_in, r.usage.cache_read) for r in records] == [(1000, 768)] * 2
        assert all(record_cost(r, table) == pytest.approx(call) for r in records)
        # the dashboard: records and usage tables carry the counts and the cached price
        shown = record_json(records[0], table)
        assert shown["usage"]["cache_read"] == 768 and shown["cost_usd"] == pytest.approx(call)
        by_worker = usage_json(records, table)["by_worker"]
        assert by_worker["a"]["cache_read"] == 2 * 768
    finally:
        await store.close()


async def test_the_cli_shows_cached_tokens_and_their_cost(cached_board: tuple[str, str, Any]) -> None:
    url, board, result = cached_board
    code, out, err = _cli("log", board, "--json", "--store", url)
    assert code == 0, err
    logged = [r for r in json.loads(out)["records"] if r["usage"]["tokens_in"]]
    assert [r["usage"]["cache_read"] for r in logged] == [768, 768]
    assert sum(r["cost_usd"] for r in logged) == pytest.approx(result.cost_usd)
    code, out, err = _cli("log", board, "--store", url)
    assert code == 0 and "c768" in out, err
    code, out, _ = _cli("boards", "--json", "--store", url)
    assert [b["cost_usd"] for b in json.loads(out)] == [pytest.approx(result.cost_usd)]


async def test_a_run_summary_has_cache_columns(tmp_path: Path) -> None:
    import asyncio

    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=CACHED))]).start()
    try:
        bp = tmp_path / "bp.json"
        bp.write_text(json.dumps(note_loop("cached", until=2)), encoding="utf-8")
        args = ["run", str(bp), "--model", f"openai:{MODEL}@{server.url}/v1", "--store", "memory://", "--parallel", "1"]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from slateboard.cli import main; main()",
            *args,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "200"},
        )
        out, err = (b.decode() for b in await proc.communicate())
    finally:
        await server.close()
    assert proc.returncode == 0, err
    lines = out.splitlines()
    header = lines[next(i for i, line in enumerate(lines) if "tokens by worker" in line) + 1]
    worker = lines[next(i for i, line in enumerate(lines) if "tokens by worker" in line) + 2]
    assert "cache read" in header
    assert worker.split()[:5] == ["a", "2,000", "40", "1,536", "0"]


async def test_more_cached_than_prompt_tokens_is_a_logged_unknown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    bad = {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 500}}
    url, board, result = await _run(bad, tmp_path, "bad")
    assert result.cost_usd is None  # never a price computed on counts that do not add up
    assert "500 cached prompt tokens of 100" in caplog.text
    code, out, err = _cli("log", board, "--json", "--store", url)
    assert code == 0, err
    logged = json.loads(out)
    called = [r for r in logged["records"] if r["usage"]["tokens_in"]]
    # the provider's counts are kept as reported, and priced as unknown on every surface
    assert called and all(r["usage"]["cache_read"] == 500 and r["cost_usd"] is None for r in called)
    assert logged["cost_usd"] is None
    code, out, err = _cli("log", board, "--store", url)
    assert code == 0 and "cost unknown" in out and "$-" not in out, err


def _anthropic_reply(request: ReceivedRequest) -> StubReply:
    body = request.json()
    usage = {"input_tokens": 50, "output_tokens": 10, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 40}
    return StubReply(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "usage": usage,
        },
    )


async def test_anthropic_cache_reads_and_writes_are_kept_and_priced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "sk-ant-test")
    server = await StubServer([_anthropic_reply]).start()
    try:
        model = resolve_model(f"anthropic:claude-3-5-haiku-latest@{server.url}")
        assert isinstance(model, AnthropicModel)
        gen = await model.generate([Message.system("You judge."), Message.user("ok?")], max_tokens=16)
    finally:
        await server.close()
    u = gen.usage
    assert (u.prompt_tokens, u.cache_read, u.cache_write, u.completion_tokens) == (990, 900, 40, 10)
    table = PriceTable()
    priced = table.cost("anthropic:claude-3-5-haiku-latest", 990, 10, 900, 40)
    plain = table.cost("anthropic:claude-3-5-haiku-latest", 990, 10)
    assert priced is not None and plain is not None and priced < plain
    mine = PriceTable.from_mapping({"m": {"input": 1.0, "output": 5.0, "cached_input": 0.1, "cache_write": 1.25}})
    assert mine.cost("m", 990, 10, 900, 40) == pytest.approx((50 * 1.0 + 900 * 0.1 + 40 * 1.25 + 10 * 5.0) / 1e6)


def _record(usage: Usage) -> Record:
    return Record(
        1, "proposal", "accepted", "a", "inv-1", None, None, "[]", None, None, 1, "s0", "s1", usage, "p", {"model": "m"}
    ).sealed()


def test_records_without_cache_counts_keep_their_bytes_and_hash() -> None:
    old = _record(Usage(10, 5, 1.0, "worker"))
    assert set(old.to_json()["usage"]) == {"tokens_in", "tokens_out", "latency_ms", "component"}  # type: ignore[arg-type]
    again = Record.from_bytes(old.to_bytes())
    assert again == old and again.hash == old.compute_hash()
    new = _record(Usage(10, 5, 1.0, "worker", 6, 2))
    assert Record.from_bytes(new.to_bytes()).usage == Usage(10, 5, 1.0, "worker", 6, 2)


@pytest.mark.parametrize("value", [0, -1, "6", True, 1.5])
def test_a_stored_cache_count_that_is_not_a_positive_count_is_refused(value: object) -> None:
    data: dict[str, Any] = _record(Usage(10, 5, 1.0, "worker")).to_json()
    data["usage"]["cache_read"] = value
    with pytest.raises(InvalidInput, match="cache_read"):
        Record.from_json(data)


async def test_anthropic_marks_a_long_stable_system_prefix_for_its_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "sk-ant-test")
    server = await StubServer([_anthropic_reply]).start()
    long_rules = "Rule: keep every note short and cite its source. " * 120  # ~1,500 tokens
    try:
        for system, cache in ((long_rules, True), ("You judge.", True), (long_rules, False)):
            model = AnthropicModel("claude-3-5-haiku-latest", base_url=server.url, cache_prompt=cache)
            await model.generate([Message.system(system), Message.user("ok?")], max_tokens=16)
            await model.aclose()
    finally:
        await server.close()
    sent = [r.json()["system"] for r in server.requests]
    assert sent[0] == [{"type": "text", "text": long_rules, "cache_control": {"type": "ephemeral"}}]
    assert sent[1:] == ["You judge.", long_rules]  # too short to cache; caching turned off
