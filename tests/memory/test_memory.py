"""Long-term memory: a first board's distilled facts answer a second board's question; the
retrieval is a logged proposal, and the second board replays without the memory store."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from memory_testkit import FINDINGS, RESEARCH

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.memory import NewFact, RecallWorker, distill_board, episodes, open_memory
from slateboard.memory._store import InProcessMemory
from slateboard.models.protocol import Message
from slateboard.models.scripted import ScriptedModel
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.stores.base import Store

FACT_ITEM = {
    "type": "object",
    "properties": {
        "fact": {"type": "integer"},
        "text": {"type": "string"},
        "board": {"type": "string"},
        "seq": {"type": ["integer", "null"]},
        "worker": {"type": ["string", "null"]},
    },
}
QA: dict[str, Any] = {
    "name": "qa",
    "schema": {
        "type": "object",
        "required": ["question"],
        "additionalProperties": False,
        "properties": {
            "question": {"type": "string"},
            "memory": {"type": "array", "items": FACT_ITEM},
            "answer": {"type": "string"},
        },
    },
    "initial_state": {"question": "What is the vault code of the Orion project?"},
    "workers": {
        "recall": {"reads": ["/question"], "writes": ["/memory"]},
        "answerer": {"reads": ["/question", "/memory"], "writes": ["/answer"]},
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "recall"},
        {"on": {"op": "add", "path": "/memory"}, "invoke": "answerer"},
    ],
    "done": "has(state.answer)",
    "answer": "/answer",
}

CODE = re.compile(r"vault code of the Orion project is (\d+)")


def answer_from_prompt(messages: Sequence[Message]) -> str:
    """The answerer's model: it can only answer from what its prompt (its view) shows."""
    found = CODE.search("\n".join(m.content for m in messages))
    return orjson.dumps(
        {"patch": [{"op": "add", "path": "/answer", "value": found.group(1) if found else "unknown"}]}
    ).decode()


def pg_base() -> str:
    return os.environ.get("SLATEBOARD_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")


async def pg_available() -> str | None:
    try:
        import psycopg

        conn = await psycopg.AsyncConnection.connect(pg_base(), connect_timeout=3)
        await conn.close()
    except Exception as exc:
        return f"no PostgreSQL at {pg_base()}: {exc}"
    return None


@pytest.fixture(params=["sqlite", "postgresql"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'boards.db'}"
        return
    reason = await pg_available()
    if reason:
        pytest.skip(reason)
    schema = f"sbm_{uuid.uuid4().hex[:16]}"
    yield f"{pg_base()}?schema={schema}"
    import psycopg

    async with await psycopg.AsyncConnection.connect(pg_base(), autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def first_board(store: Store) -> str:
    board = await create_board(store, RESEARCH)
    found = iter(FINDINGS)
    result = await Runner(
        store, board, functions={"finder": lambda view: [{"op": "add", "path": "/facts/-", "value": next(found)}]}
    ).run()
    assert result.end_reason == "done"
    return board


async def second_board(store: Store, memory: Any) -> tuple[str, Any]:
    board = await create_board(store, QA)
    model = ScriptedModel([answer_from_prompt], cycle=True)
    result = await Runner(store, board, model=model, workers={"recall": RecallWorker("recall", memory, k=2)}).run()
    return board, result


async def memory_tables(url: str) -> list[str]:
    if url.startswith("sqlite"):
        import sqlite3

        from slateboard.stores.sqlite import path_from_url

        with sqlite3.connect(path_from_url(url)) as conn:
            return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE name LIKE 'memory_%'")]
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    async with await psycopg.AsyncConnection.connect(pg_base()) as conn:
        cur = await conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s AND table_name LIKE 'memory%%'",
            (schema,),
        )
        return [r[0] for r in await cur.fetchall()]


async def drop_memory(url: str) -> None:
    if url.startswith("sqlite"):
        memory = await open_memory(url)
        await memory.drop()  # type: ignore[attr-defined]
        await memory.close()
        return
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    async with await psycopg.AsyncConnection.connect(pg_base(), autocommit=True) as conn:
        await conn.execute(f'DROP TABLE "{schema}".memory_facts')


async def test_second_board_answers_from_the_first_boards_memory(store_url: str) -> None:
    store = await open_store(store_url)
    memory = await open_memory(store_url)
    try:
        # without memory the question cannot be answered: the fact is nowhere else
        control, result = await second_board(store, InProcessMemory())
        assert result.answer == "unknown"

        first = await first_board(store)
        ids = await distill_board(store, first, memory, paths=["/facts/*"])
        assert len(ids) == 3
        assert await distill_board(store, first, memory, paths=["/facts/*"]) == []  # idempotent
        facts = await memory.facts(board=first)
        records = {r.seq: r for r in await store.read_records(first)}
        for fact in facts:
            assert fact.seq is not None and fact.worker == "finder"
            assert orjson.loads(records[fact.seq].patch or "[]")[0]["value"] == fact.text  # provenance holds

        board, result = await second_board(store, memory)
        assert result.end_reason == "done" and result.answer == "4711"
        retrieved = result.state["memory"]
        assert retrieved[0]["text"] == FINDINGS[1] and retrieved[0]["board"] == first
        assert len(retrieved) <= 2  # bounded: k=2
        log = await store.read_records(board)
        recall = next(r for r in log if r.worker == "recall")
        assert recall.outcome == "accepted"
        assert recall.meta["kind"] == "memory_recall"
        assert recall.meta["memory_query"] == QA["initial_state"]["question"]
        assert recall.meta["memory_facts"][0] == retrieved[0]["fact"]
        assert FINDINGS[1] in (recall.patch or "")  # the retrieved content itself is in the log
    finally:
        await memory.close()
        await store.close()

    # replay the second board with the memory store gone
    await drop_memory(store_url)
    assert await memory_tables(store_url) == []
    store = await open_store(store_url)
    try:
        loaded = await store.load_board(board)
        report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, await store.read_records(board))
        assert report.ok, str(report)
        assert report.state["answer"] == "4711"
        # episodic memory: the log, queried across boards
        found = await episodes(store, text="vault code")
        assert {e.board for e in found} == {first, board}
        assert {e.record.worker for e in found} == {"finder", "recall"}
        assert await episodes(store, worker="answerer", outcome="accepted", boards=[control]) != []
    finally:
        await store.close()


async def test_retention_rules_prune_stale_facts(store_url: str) -> None:
    memory = await open_memory(store_url)
    try:
        await memory.add([NewFact("old fact about comets", "b1", 1, "w")], now=1000.0)
        await memory.add([NewFact("recent fact about comets", "b2", 2, "w")], now=5000.0)
        await memory.add([NewFact("recent fact about planets", "b2", 3, "w")], now=5000.0)
        # a retrieval refreshes last_used: the old fact survives an "unused for" rule once used
        hits = await memory.search("comets", k=1, now=9000.0)
        assert len(hits) == 1
        used = hits[0].id
        assert await memory.prune(unused_for_s=3000.0, now=9500.0) == 2
        assert [f.id for f in await memory.facts()] == [used]
        await memory.add([NewFact(f"fact {i}", "b3", i, "w") for i in range(5)], now=9600.0)
        assert await memory.prune(keep_last=2, now=9700.0) == 4
        assert [f.text for f in await memory.facts()] == ["fact 3", "fact 4"]
        assert await memory.prune(older_than_s=50.0, now=9700.0) == 2
        assert await memory.facts() == []
    finally:
        await memory.close()


async def test_search_ranks_by_bm25(store_url: str) -> None:
    memory = await open_memory(store_url)
    try:
        await memory.add(
            [
                NewFact("the cat sat on the mat", "b", 1, "w"),
                NewFact("dogs chase the cat; the cat runs from dogs", "b", 2, "w"),
                NewFact("nothing relevant here", "b", 3, "w"),
            ]
        )
        hits = await memory.search("dogs and cats?", k=5)
        assert hits[0].seq == 2  # more matching terms ranks first
        assert 3 not in [h.seq for h in hits]  # no shared word, not returned
        assert await memory.search("", k=5) == []
    finally:
        await memory.close()


def test_recall_query_found_under_a_shown_ancestor() -> None:
    from slateboard.memory._distill import _lookup

    assert _lookup({"/question": "q1"}, "/question") == "q1"
    assert _lookup({"": {"question": "q2"}}, "/question") == "q2"
    assert _lookup({"/brief": {"question": {"text": "q3"}}}, "/brief/question/text") == "q3"
    assert _lookup({"/other": "x"}, "/question") is None


CONCEPTS = {"passcode": 0, "code": 0, "pin": 0, "safe": 1, "vault": 1, "backups": 2, "stores": 2, "release": 3}


def concept_embed(texts: Sequence[str]) -> list[list[float]]:
    """A deterministic stand-in for an embedding model: synonyms share a dimension."""
    out = []
    for text in texts:
        vec = [0.0] * 4
        for word in re.findall(r"\w+", text.lower()):
            if word in CONCEPTS:
                vec[CONCEPTS[word]] += 1.0
        out.append(vec)
    return out


async def test_embeddings_find_what_shares_no_word(store_url: str) -> None:
    from slateboard.memory import EmbeddingMemory

    memory = EmbeddingMemory(await open_memory(store_url), concept_embed)
    try:
        await memory.add([NewFact(text, "b", i, "finder") for i, text in enumerate(FINDINGS)], now=100.0)
        assert await memory.inner.search("passcode safe?", k=3, now=150.0) == []  # BM25 alone: no shared word
        hits = await memory.search("passcode safe?", k=1, now=200.0)
        assert [h.seq for h in hits] == [1]
        stored = await memory.facts()
        assert all(len(f.meta["embedding"]) == 4 for f in stored)
        assert "embedding" not in hits[0].to_json()  # a board gets text and provenance only
        # the dense hit counts as a use for retention
        assert await memory.prune(unused_for_s=50.0, now=220.0) == 2
        assert [f.seq for f in await memory.facts()] == [1]
    finally:
        await memory.close()


def test_the_fact_store_has_one_name_and_the_old_one_warns() -> None:
    """Issue 35: ``slateboard.memory.MemoryStore`` was a second public class of that name (the
    board store is ``slateboard.stores.MemoryStore``); it is ``FactStore`` now, and the old name
    stays importable for one release with a DeprecationWarning."""
    import slateboard.memory as memory
    import slateboard.stores as stores

    assert "FactStore" in memory.__all__ and "MemoryStore" not in memory.__all__
    with pytest.warns(DeprecationWarning, match=r"memory\.MemoryStore is deprecated.*memory\.FactStore"):
        from slateboard.memory import MemoryStore
    assert MemoryStore is memory.FactStore
    assert stores.MemoryStore.__module__ == "slateboard.stores.memory"  # the board store keeps its name
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        memory.NoSuchName  # type: ignore[attr-defined]  # noqa: B018
