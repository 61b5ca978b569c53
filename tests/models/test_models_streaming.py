"""Token streaming on real models: the local model (llama.cpp ``stream=True``) and
``python -m llama_cpp.server`` over loopback HTTP. The chunks join to the reply; the local
model's streamed reply and usage equal its unstreamed ones; a board run on the server logs the
reply its chunks join to."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from models_testkit import LlamaServer

from slateboard.models import Message, OpenAICompatModel, RetryPolicy, resolve_model, streamed
from slateboard.models.local import LocalModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import MemoryStore
from slateboard.streaming import StreamTap, invocation_scope, streaming_to
from slateboard.workers.parse import parse_reply

pytestmark = pytest.mark.slow

ASK = [Message.system("Be brief."), Message.user("Name three colours of the rainbow.")]


async def _streamed(model: Any, **kwargs: Any) -> tuple[Any, list[dict[str, Any]]]:
    chunks: list[dict[str, Any]] = []
    tap = StreamTap.of(lambda _k, _b, data: chunks.append(data), asyncio.get_running_loop(), ["tokens"])
    with streaming_to(tap), invocation_scope("board", "worker", "inv"):
        gen = await streamed.generate(model, ASK, temperature=0.0, timeout=300, **kwargs)
    await asyncio.sleep(0)  # chunks from llama.cpp's thread are delivered on the loop
    return gen, chunks


async def test_local_model_streams_the_reply_it_would_give_unstreamed(smollm2_gguf: Any) -> None:
    model = LocalModel(smollm2_gguf)
    plain = await model.generate(ASK, max_tokens=24, timeout=300)
    gen, chunks = await _streamed(model, max_tokens=24)
    assert len(chunks) > 1 and {c["attempt"] for c in chunks} == {0}
    assert "".join(c["text"] for c in chunks) == gen.text
    assert (gen.text, gen.finish_reason) == (plain.text, plain.finish_reason)
    assert gen.usage == plain.usage and not gen.usage.estimated


async def test_llama_cpp_server_stream_joins_to_the_logged_reply(llama_server: LlamaServer) -> None:
    model = resolve_model(f"openai:smollm2@{llama_server.base_url}", retry=RetryPolicy(max_attempts=2))
    assert isinstance(model, OpenAICompatModel)
    gen, chunks = await _streamed(model, max_tokens=24)
    assert len(chunks) > 1 and "".join(c["text"] for c in chunks) == gen.text
    assert gen.usage.estimated  # llama_cpp.server reports no usage in a stream (docs/follow.md)

    # A board: the worker's reply is logged (the patch it parses to, or the raw text the kernel
    # rejects); the chunks of its invocation join to that reply.
    blueprint = {
        "schema": {"type": "object", "properties": {"colour": {"type": "string"}}},
        "initial_state": {},
        "workers": {"writer": {"instruction": "Set /colour to a colour.", "reads": [], "writes": ["/colour"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "writer"}],
        "limits": {"max_steps": 1},
    }
    store = MemoryStore()
    board = await create_board(store, blueprint)
    runner = Runner(store, board, model=model)
    stream = runner.events(["tokens"])
    seen: list[Any] = []

    async def listen() -> None:
        async for event in stream:
            seen.append(event.data)

    listener = asyncio.create_task(listen())
    await runner.run()
    await listener
    await model.aclose()
    (record,) = [r for r in await store.read_records(board) if r.kind == "proposal"]
    calls = sorted({c["call"] for c in seen})
    last = [c for c in seen if c["call"] == calls[-1]]
    joined = "".join(c["text"] for c in last if c["attempt"] == max(x["attempt"] for x in last))
    assert {c["invocation"] for c in seen} == {record.invocation}
    parsed = parse_reply(joined)
    if parsed.ok:
        assert json.loads(str(record.patch)) == parsed.patch
    else:
        assert record.stage == "parse" and record.patch in (joined, parsed.patch)
