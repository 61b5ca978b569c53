"""Stream modes ``tokens`` and ``custom`` on Runner and Team: chunks tagged with worker and
invocation whose join is the logged reply, over a scripted model and a real loopback HTTP
stream; progress a function worker emits; the log the same whether streamed or not."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from sse_stub import Send, SSEServer, openai_chunk, sse
from test_fork import BLUEPRINT, scripted

from slateboard import Agent, Team
from slateboard.errors import InvalidInput
from slateboard.models import Generation, GenerationUsage, Message, RetryPolicy, ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.runtime.events import RunEvent
from slateboard.stores import MemoryStore

ALL_MODES = ["events", "updates", "values", "tokens", "custom"]


def reply(note: str) -> str:
    return json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": note}]})


async def run_board(
    model: Any, modes: list[str] | None, *, blueprint: Mapping[str, Any] = BLUEPRINT, **runner: Any
) -> tuple[list[RunEvent], list[Any]]:
    store = MemoryStore()
    board = await create_board(store, dict(blueprint))
    run = Runner(store, board, model=model, **runner)
    seen: list[RunEvent] = []
    stream = run.events(modes) if modes is not None else run.events()  # subscribed before the run

    async def listen() -> None:
        async for event in stream:
            seen.append(event)

    listener = asyncio.create_task(listen())
    await run.run()
    await listener
    return seen, await store.read_records(board)


def by_call(events: Sequence[RunEvent]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """Token chunks per (invocation, call), in arrival order."""
    calls: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for e in events:
        if e.kind == "model.tokens":
            calls[(str(e.data["invocation"]), int(str(e.data["call"])))].append(e.data)
    return calls


def last_attempt(chunks: list[dict[str, Any]]) -> str:
    final = max(c["attempt"] for c in chunks)
    return "".join(c["text"] for c in chunks if c["attempt"] == final)


def shape(log: list[Any]) -> list[Any]:
    return [(r.seq, r.kind, r.outcome, r.worker, r.invocation, r.patch, r.version, r.state_after) for r in log]


async def test_scripted_tokens_join_to_the_logged_reply() -> None:
    notes = ["first note here", "a second, longer note", "3", "four four", "five"]
    model = scripted(*notes)
    seen, log = await run_board(model, ["tokens"])
    calls = by_call(seen)
    proposals = [r for r in log if r.kind == "proposal"]
    assert len(calls) == len(proposals) == 5
    assert {e.kind for e in seen} == {"model.tokens"}  # only what was asked for
    for record in proposals:
        chunks = calls[(str(record.invocation), 0)]
        assert len(chunks) > 1  # streamed, not one block
        assert {(c["worker"], c["attempt"], c["model"]) for c in chunks} == {("writer", 0, model)}
        joined = "".join(c["text"] for c in chunks)
        assert json.loads(joined)["patch"] == json.loads(str(record.patch))
    assert [json.loads(last_attempt(calls[(str(r.invocation), 0)]))["patch"][0]["value"] for r in proposals] == notes


async def test_every_mode_streamed_logs_what_an_unstreamed_run_logs() -> None:
    notes = ("n0", "n1", "n2", "n3", "n4")
    plain, plain_log = await run_board(scripted(*notes), None)
    everything, streamed_log = await run_board(scripted(*notes), ALL_MODES)
    assert shape(plain_log) == shape(streamed_log)
    assert {e.kind for e in everything} >= {"model.tokens", "state.update", "state.values", "run.ended"}
    assert [e.kind for e in plain] == [e.kind for e in everything if e.kind in {e.kind for e in plain}]


class Unstreamable:
    """A model with no streaming support at all (it never looks for a token sink)."""

    name = "plain"

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    async def generate(self, messages: Sequence[Message], **_: Any) -> Generation:
        text = self.texts.pop(0)
        return Generation(text, GenerationUsage.estimate(messages, text), "stop", self.name, 0.0)


async def test_a_model_that_cannot_stream_yields_its_reply_as_one_chunk() -> None:
    texts = [reply(f"n{i}") for i in range(5)]
    seen, log = await run_board(Unstreamable(list(texts)), ["tokens"])
    calls = by_call(seen)
    assert [[c["text"] for c in calls[(str(r.invocation), 0)]] for r in log if r.kind == "proposal"] == [
        [t] for t in texts
    ]


async def test_a_consumer_that_walks_away_does_not_break_the_run() -> None:
    store = MemoryStore()
    board = await create_board(store, BLUEPRINT)
    run = Runner(store, board, model=scripted("a b c", "d", "e", "f", "g"))
    dropped = run.events(["tokens", "updates"])
    left = run.events(["tokens", "custom", "values"])
    first: list[RunEvent] = []

    async def take_one(stream: Any) -> None:
        async for event in stream:
            first.append(event)
            break  # stops reading; the rest queues up unread

    async def read_forever(stream: Any) -> None:
        async for _ in stream:
            await asyncio.Event().wait()  # never reads a second event: cancelled below

    taker = asyncio.create_task(take_one(left))
    reader = asyncio.create_task(read_forever(dropped))
    await asyncio.sleep(0)
    reader.cancel()  # the consumer disconnects before the run starts reading models
    result = await run.run()
    await taker
    assert len(first) == 1 and first[0].kind == "model.tokens"
    assert result.state == {"notes": ["a b c", "d", "e", "f", "g"]}
    assert reader.cancelled() and len(run._listeners) == 1  # the cancelled one unsubscribed


def test_unknown_mode_is_one_line_listing_the_valid_ones() -> None:
    team = Team.blackboard(agents={"a": Agent("x", model=ScriptedModel(["hi"]))}, max_rounds=1)
    with pytest.raises(InvalidInput) as info:
        team.stream("task", modes=["tokens", "messages"])
    assert str(info.value) == "stream mode 'messages' is not one of events, updates, values, tokens, custom"


# -- custom: progress a function worker emits ------------------------------------------------------
def noting(view: Any, emit: Any) -> list[dict[str, Any]]:
    emit({"step": "read", "version": view.version})
    emit("writing")
    return [{"op": "add", "path": "/notes/-", "value": f"n{view.version}"}]


async def test_function_progress_arrives_as_custom_events_and_is_never_logged() -> None:
    functions = {"writer": noting}
    seen, log = await run_board(None, ["custom"], functions=functions)
    _, plain_log = await run_board(None, None, functions=functions)
    custom = [e.data for e in seen]
    assert {e.kind for e in seen} == {"worker.custom"}
    invocations = [r.invocation for r in log if r.kind == "proposal"]
    assert [c["data"] for c in custom] == [x for i in range(5) for x in ({"step": "read", "version": i}, "writing")]
    assert [c["invocation"] for c in custom] == [i for i in invocations for _ in (0, 1)]
    assert {c["worker"] for c in custom} == {"writer"}
    assert shape(log) == shape(plain_log)
    assert "writing" not in json.dumps([r.meta for r in log])


def bad_progress(view: Any, emit: Any) -> list[dict[str, Any]]:
    emit({"when": object()})
    return [{"op": "add", "path": "/notes/-", "value": "never"}]


async def test_non_json_progress_fails_the_function_the_same_streamed_or_not() -> None:
    blueprint = {**BLUEPRINT, "rules": BLUEPRINT["rules"][:1]}
    streamed, log = await run_board(
        None, ["custom"], blueprint=blueprint, functions={"writer": bad_progress}, max_steps=1
    )
    _, plain_log = await run_board(None, None, blueprint=blueprint, functions={"writer": bad_progress}, max_steps=1)
    assert streamed == [] and shape(log) == shape(plain_log)
    (proposal,) = [r for r in log if r.kind == "proposal"]
    assert proposal.outcome == "rejected" and "emit() takes JSON data" in str(proposal.meta.get("error"))


# -- the OpenAI-compatible provider over real loopback HTTP -------------------------------------------
USAGE = {"prompt_tokens": 31, "completion_tokens": 9, "total_tokens": 40}


def streamed_reply(text: str, seen_first: asyncio.Event | None = None, *, cut: bool = False) -> Any:
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]

    async def script(_request: dict[str, Any], send: Send) -> bool:
        await send(b": keep-alive comment\n\n")
        await send(openai_chunk(pieces[0]))
        if cut:
            return False  # the connection drops mid-reply
        if seen_first is not None:
            # The rest only once the test saw the first chunk: the client reads as it arrives.
            await asyncio.wait_for(seen_first.wait(), 30)
        for piece in pieces[1:]:
            await send(openai_chunk(piece))
        await send(openai_chunk(finish="stop"))
        await send(openai_chunk(usage=USAGE))
        await send(sse("[DONE]"))
        return True

    return script


async def test_openai_compatible_stream_over_loopback_http() -> None:
    first_seen = asyncio.Event()
    texts = [reply(f"note {i}") for i in range(5)]
    scripts = [streamed_reply(texts[0], first_seen), *(streamed_reply(t) for t in texts[1:])]
    async with SSEServer(scripts) as server:
        store = MemoryStore()
        board = await create_board(store, BLUEPRINT)
        run = Runner(store, board, model=f"openai:stub@{server.url}/v1")
        seen: list[RunEvent] = []
        stream = run.events(["tokens"])

        async def listen() -> None:
            async for event in stream:
                seen.append(event)
                first_seen.set()

        listener = asyncio.create_task(listen())
        result = await run.run()
        await listener
    log = await store.read_records(board)
    assert result.state == {"notes": [f"note {i}" for i in range(5)]}
    calls = by_call(seen)
    proposals = [r for r in log if r.kind == "proposal"]
    for record, text in zip(proposals, texts, strict=True):
        chunks = calls[(str(record.invocation), 0)]
        assert "".join(c["text"] for c in chunks) == text
        assert len(chunks) == len(range(0, len(text), 7))
        assert json.loads(text)["patch"] == json.loads(str(record.patch))
        # The server's usage, as an unstreamed call logs it (not an estimate).
        assert (record.usage.tokens_in, record.usage.tokens_out) == (31, 9)
    assert all(r["stream"] is True and r["stream_options"] == {"include_usage": True} for r in server.requests)


async def test_a_stream_broken_mid_reply_is_retried_as_a_new_attempt() -> None:
    from slateboard.models import OpenAICompatModel, streamed
    from slateboard.streaming import StreamTap, invocation_scope, streaming_to

    text = reply("after the retry")
    events: list[dict[str, Any]] = []
    async with SSEServer([streamed_reply(text, cut=True), streamed_reply(text)]) as server:
        model = OpenAICompatModel("stub", base_url=f"{server.url}/v1", retry=RetryPolicy(base_delay=0.0))
        tap = StreamTap.of(lambda _k, _b, d: events.append(d), asyncio.get_running_loop(), ["tokens"])
        with streaming_to(tap), invocation_scope("b", "writer", "inv-1"):
            gen = await streamed.generate(model, [Message.user("hi")], max_tokens=50, temperature=0.0, timeout=30)
        await model.aclose()
    assert gen.text == text and gen.retries == 1
    assert (events[0]["attempt"], events[0]["text"]) == (0, text[:7])
    assert last_attempt(events) == text
    assert {e["attempt"] for e in events} == {0, 1} and {e["invocation"] for e in events} == {"inv-1"}


async def test_anthropic_stream_over_loopback_http() -> None:
    from slateboard.models import AnthropicModel, streamed
    from slateboard.streaming import StreamTap, invocation_scope, streaming_to

    async def script(_request: dict[str, Any], send: Send) -> bool:
        await send(sse({"type": "message_start", "message": {"usage": {"input_tokens": 12, "output_tokens": 1}}}))
        await send(sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        for piece in ("Hel", "lo, ", "world"):
            await send(sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}))
        await send(sse({"type": "content_block_stop", "index": 0}))
        await send(sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 4}}))
        await send(sse({"type": "message_stop"}))
        return True

    events: list[dict[str, Any]] = []
    async with SSEServer([script]) as server:
        model = AnthropicModel("claude-stub", base_url=server.url)
        tap = StreamTap.of(lambda _k, _b, d: events.append(d), asyncio.get_running_loop(), ["tokens"])
        with streaming_to(tap), invocation_scope("b", "writer", "inv-1"):
            gen = await streamed.generate(model, [Message.user("hi")], max_tokens=50, temperature=0.0, timeout=30)
        await model.aclose()
        assert server.requests[0]["stream"] is True
    assert [e["text"] for e in events] == ["Hel", "lo, ", "world"]
    assert gen.text == "Hello, world" and gen.finish_reason == "stop"
    assert (gen.usage.prompt_tokens, gen.usage.completion_tokens, gen.usage.estimated) == (12, 4, False)


# -- Team.stream(prompt, modes=...) ---------------------------------------------------------------------
async def test_team_stream_modes() -> None:
    team = Team.blackboard(
        agents={"a": Agent("x", model=ScriptedModel(["hello there", "second word"], cycle=True))}, max_rounds=2
    )
    stream = team.stream("task", modes=["tokens", "updates", "values"])
    seen = [e async for e in stream]
    assert stream.result is not None
    kinds = {e.kind for e in seen}
    assert kinds == {"model.tokens", "state.update", "state.values"}  # no team events: not asked for
    tokens = [e.data for e in seen if e.kind == "model.tokens"]
    assert {t["worker"] for t in tokens} == {"a"}
    per_invocation: dict[str, str] = defaultdict(str)
    for t in tokens:
        per_invocation[str(t["invocation"])] += str(t["text"])
    assert sorted(per_invocation.values()) == ["hello there", "second word"]
    updates = [e.data for e in seen if e.kind == "state.update"]
    assert {u["worker"] for u in updates} >= {"a"}
    assert all(e.board_id == stream.result.board_id for e in seen)
    values = [e.data for e in seen if e.kind == "state.values"]
    assert [v["seq"] for v in values] == [u["seq"] for u in updates]
    assert values[-1]["state"]["public"][-1]["content"] == "second word"


async def test_anthropic_tool_input_is_streamed_then_settled_as_the_reply() -> None:
    from slateboard.models import AnthropicModel, streamed
    from slateboard.streaming import StreamTap, invocation_scope, streaming_to

    async def script(_request: dict[str, Any], send: Send) -> bool:
        await send(sse({"type": "message_start", "message": {"usage": {"input_tokens": 20, "output_tokens": 1}}}))
        block = {"type": "tool_use", "id": "t1", "name": "respond", "input": {}}
        await send(sse({"type": "content_block_start", "index": 0, "content_block": block}))
        for piece in ('{"patch":[{"op":', '"add","path":"/notes/-",', '"value":"x"}]}'):  # compact
            delta = {"type": "input_json_delta", "partial_json": piece}
            await send(sse({"type": "content_block_delta", "index": 0, "delta": delta}))
        await send(sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}}))
        await send(sse({"type": "message_stop"}))
        return True

    events: list[dict[str, Any]] = []
    async with SSEServer([script]) as server:
        model = AnthropicModel("claude-stub", base_url=server.url)
        tap = StreamTap.of(lambda _k, _b, d: events.append(d), asyncio.get_running_loop(), ["tokens"])
        with streaming_to(tap), invocation_scope("b", "writer", "inv-1"):
            gen = await streamed.generate(
                model, [Message.user("hi")], json_schema={"type": "object"}, max_tokens=50, temperature=0.0, timeout=30
            )
        await model.aclose()
    # As unstreamed: the tool input parsed and serialised again.
    assert gen.text == json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": "x"}]})
    assert [e["text"] for e in events if e["attempt"] == 0] == [
        '{"patch":[{"op":',
        '"add","path":"/notes/-",',
        '"value":"x"}]}',
    ]
    # Its spacing differs from the raw input's, so a last attempt carries the reply whole.
    assert [(e["attempt"], e["text"]) for e in events if e["attempt"] > 0] == [(1, gen.text)]
    assert last_attempt(events) == gen.text and (gen.usage.prompt_tokens, gen.usage.completion_tokens) == (20, 9)
