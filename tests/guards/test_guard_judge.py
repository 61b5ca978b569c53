"""Model judges: the typed verdict decides, a reply that does not fit is a refusal, the call's
usage is logged in the record and counted (tokens, cost, the spend cap); replay and verification
never call the model again, and a tampered verdict fails ``replay --verify``."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from guards_testkit import board, notes
from typer.testing import CliRunner

from slateboard.blueprint import compile_blueprint
from slateboard.cli import app
from slateboard.kernel.guardstage import GUARDS_META
from slateboard.kernel.record import Record
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board, verify_board
from slateboard.stores import open_store

YES = json.dumps({"ok": True, "reason": "polite"})
NO = json.dumps({"ok": False, "reason": "rude"})


def judge(*replies: str, **extra: Any) -> dict[str, Any]:
    """A judge on a scripted model answering ``replies`` in turn."""
    return {
        "name": "polite",
        "model": "scripted:" + json.dumps(list(replies)),
        "instruction": "Is the note polite?",
        "context": ["/notes"],
        "shares_reason": True,
        **extra,
    }


async def _run(
    url: str, guards: list[dict[str, Any]], *texts: str, max_cost: float | None = None, **options: Any
) -> tuple[str, Any, list[Record]]:
    store = await open_store(url)
    try:
        board_id = await create_board(store, compile_blueprint(board(guards, **options)))
        result = await Runner(store, board_id, functions={"w": notes(*texts)}, max_cost=max_cost).run()
        return board_id, result, list(await store.read_records(board_id))
    finally:
        await store.close()


def _proposals(records: list[Record]) -> list[Record]:
    return [r for r in records if r.kind == "proposal" and r.stage != "decline"]


async def test_the_verdict_decides_and_its_usage_is_logged_and_counted() -> None:
    price = {"input": 1_000_000.0, "output": 2_000_000.0}  # $1 a prompt token, $2 a reply token
    model = judge(NO, YES)["model"]
    _board, result, records = await _run(
        "memory://", [judge(NO, YES)], "you fool", "thank you", limits={"max_steps": 4, "prices": {model: price}}
    )
    refused, accepted = _proposals(records)
    assert (refused.stage, refused.reason) == ("guard:polite", "rude")
    (verdict,) = accepted.meta[GUARDS_META]
    assert verdict["verdict"] == {"ok": True, "reason": "polite"} and verdict["model"] == model
    usage = verdict["usage"]
    assert usage["component"] == "guard:polite" and usage["tokens_in"] > 0 and usage["tokens_out"] > 0
    judged = [r.meta[GUARDS_META][0]["usage"] for r in (refused, accepted)]
    tokens = sum(u["tokens_in"] + u["tokens_out"] for u in judged)
    assert result.total_tokens == tokens  # function workers spend nothing: the judge's calls are all
    assert result.cost_usd == sum(u["tokens_in"] + 2 * u["tokens_out"] for u in judged)
    # by component the judge is its own line; by worker it counts with the worker it judged
    assert result.usage["guard:polite"].total == tokens and result.usage["guard:polite"].calls == 2
    assert result.cost_by_component["guard:polite"] == result.cost_usd == result.cost_by_worker["w"]
    assert result.usage_by_worker["w"].total == tokens
    assert result.state["notes"] == ["thank you"]


async def test_the_judge_sees_its_instruction_the_patch_and_its_context(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Any] = []
    real = ScriptedModel.generate

    async def spy(self: ScriptedModel, messages: Any, **kw: Any) -> Any:
        seen.append((messages, kw.get("json_schema")))
        return await real(self, messages, **kw)

    monkeypatch.setattr(ScriptedModel, "generate", spy)
    await _run("memory://", [judge(YES)], "hello", max_steps=2)
    ((messages, schema),) = seen
    assert "Is the note polite?" in messages[0].content
    assert '"value":"hello"' in messages[1].content and 'at /notes: ["hello"]' in messages[1].content
    assert "s3cret" not in messages[1].content  # only its context, not the board
    assert schema["required"] == ["ok", "reason"] and schema["properties"]["ok"] == {"type": "boolean"}


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        ("not json at all", "expected a JSON object"),
        (json.dumps({"ok": "yes", "reason": "r"}), "ok is not bool"),
        (json.dumps({"ok": True}), "missing reason"),
        (json.dumps({"ok": True, "reason": "r", "score": 3}), "unexpected score"),
    ],
)
async def test_a_reply_that_does_not_fit_the_verdict_type_is_a_refusal(reply: str, words: str) -> None:
    _board, result, records = await _run("memory://", [judge(reply)], "hello", max_steps=2)
    (rec,) = _proposals(records)
    assert rec.stage == "guard:polite" and "judge reply does not fit its verdict type" in (rec.reason or "")
    assert words in (rec.reason or "") and rec.meta[GUARDS_META][0]["error"] == "verdict"
    assert result.state["notes"] == []


async def test_a_typed_verdict_may_carry_more_fields() -> None:
    reply = json.dumps({"ok": True, "reason": "fine", "score": 0.9, "n": 2})
    spec = judge(reply, verdict={"ok": "bool", "reason": "str", "score": "float", "n": "int"})
    _board, _result, records = await _run("memory://", [spec], "hello", max_steps=2)
    (rec,) = _proposals(records)
    assert rec.accepted and rec.meta[GUARDS_META][0]["verdict"]["score"] == 0.9


async def test_a_judge_over_the_spend_cap_is_not_called_and_the_board_ends_on_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def never(self: ScriptedModel, messages: Any, **kw: Any) -> Any:
        raise AssertionError("the judge was called over the cap")

    monkeypatch.setattr(ScriptedModel, "generate", never)
    model = judge(YES)["model"]
    limits = {"max_steps": 3, "prices": {model: {"input": 1_000_000.0, "output": 1_000_000.0}}}
    _board, result, records = await _run("memory://", [judge(YES)], "hello", max_cost=0.5, limits=limits)
    rec = _proposals(records)[0]
    assert rec.stage == "guard:polite" and "judge call failed" in (rec.reason or "")
    assert result.end_reason.startswith("budget") and result.state["notes"] == []


def test_replay_and_verification_make_no_model_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"
    board_id, _result, records = asyncio.run(_run(url, [judge(NO, YES)], "you fool", "thank you"))
    assert sum(1 for r in records if r.meta.get(GUARDS_META)) == 2
    calls: list[Any] = []

    async def counted(self: ScriptedModel, messages: Any, **kw: Any) -> Any:
        calls.append(messages)
        raise AssertionError("replay called the judge")

    monkeypatch.setattr(ScriptedModel, "generate", counted)

    async def verify() -> None:
        store = await open_store(url)
        try:
            assert (await verify_board(store, board_id)).ok
            assert (await verify_board(store, board_id, revalidate=True)).ok
            # a new run loads the board (its guards built again): the logged verdicts are re-used
            await Runner(store, board_id, functions={"w": notes()}).run()
        finally:
            await store.close()

    asyncio.run(verify())
    for args in (["--verify"], ["--verify", "--revalidate"]):
        out = CliRunner().invoke(app, ["replay", board_id, *args], env={"SLATEBOARD_STORE": url, "COLUMNS": "200"})
        assert out.exit_code == 0, out.output
    assert calls == []


def _rewrite(db: Path, url: str, board_id: str, seq: int, *, reseal: bool) -> None:
    """Flip the first verdict of record ``seq``; with ``reseal``, re-seal it and every later
    record (a forger who recomputes the chain)."""

    async def read() -> list[Record]:
        store = await open_store(url)
        try:
            return list(await store.read_records(board_id))
        finally:
            await store.close()

    records = asyncio.run(read())
    rec = records[seq - 1]
    verdicts = [dict(v) for v in rec.meta[GUARDS_META]]
    verdicts[0]["ok"] = not verdicts[0]["ok"]
    forged = [replace(rec, meta={**rec.meta, GUARDS_META: verdicts})]
    if reseal:
        forged = [forged[0].sealed()]
        for later in records[seq:]:
            forged.append(replace(later, prev=forged[-1].hash).sealed())
    with sqlite3.connect(db) as conn:
        for r in forged:
            conn.execute("UPDATE records SET data = ? WHERE board_id = ? AND seq = ?", (r.to_bytes(), board_id, r.seq))


@pytest.mark.parametrize("reseal", [False, True], ids=["edited", "edited-and-resealed"])
def test_a_tampered_verdict_fails_replay_verify(tmp_path: Path, reseal: bool) -> None:
    db = tmp_path / "b.db"
    url = f"sqlite:///{db}"
    board_id, _result, records = asyncio.run(_run(url, [judge(NO, YES)], "you fool", "thank you"))
    refused = _proposals(records)[0]
    _rewrite(db, url, board_id, refused.seq, reseal=reseal)
    out = CliRunner().invoke(app, ["replay", board_id, "--verify"], env={"SLATEBOARD_STORE": url, "COLUMNS": "200"})
    assert out.exit_code == 3, out.output
    expected = "guard verdicts" if reseal else "altered"
    assert f"record {refused.seq}" in out.output and expected in out.output
