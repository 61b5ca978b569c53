"""Issue 28: canonical JSON writes numbers as Python holds them (``1`` and ``1.0`` differ), as its
docstring now says; a board whose state holds both forms replays and verifies byte for byte."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import replay
from slateboard.kernel.canonical import canonical_bytes, hash_json
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store

BP = {
    "name": "numbers",
    "schema": {"type": "object", "properties": {"xs": {"type": "array", "items": {"type": "number"}}}},
    "initial_state": {"xs": []},
    "workers": {"w": {"reads": ["/xs"], "writes": ["/xs/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "w"}, {"on": {"op": "add", "path": "/xs/-"}, "invoke": "w"}],
    "done": "size(state.xs) >= 2",
}


def test_integral_floats_keep_their_form() -> None:
    assert canonical_bytes(1) == b"1" and canonical_bytes(1.0) == b"1.0"
    assert hash_json({"a": 1}) != hash_json({"a": 1.0})
    assert canonical_bytes({"b": 1.5, "a": [1, 1.0]}) == b'{"a":[1,1.0],"b":1.5}'


def test_a_log_holding_both_forms_replays_and_verifies() -> None:
    async def go() -> tuple[Any, list[Any]]:
        store = await open_store("memory://")
        board = await create_board(store, BP)

        def w(view: Any) -> object:
            xs = view.data.get("/xs") or []
            return [{"op": "add", "path": "/xs/-", "value": 1 if not xs else 1.0}]

        result = await Runner(store, board, functions={"w": w}).run()
        records = await store.read_records(board)
        await store.close()
        return result, records

    result, records = asyncio.run(go())
    assert result.state == {"xs": [1, 1.0]}
    assert [type(x) for x in result.state["xs"]] == [int, float]
    report = replay(compile_blueprint(BP), BP["initial_state"], records, revalidate=True)
    assert report.ok and report.state == result.state
    assert [type(x) for x in report.state["xs"]] == [int, float]


def _stores(tmp: Path) -> list[str]:
    urls = [f"sqlite:///{tmp / 'numbers.db'}"]
    pg = os.environ.get("SLATEBOARD_TEST_PG")
    if pg:
        urls.append(f"{pg}{'&' if '?' in pg else '?'}schema=sbt_numbers_{uuid.uuid4().hex[:12]}")
    return urls


async def _drop_schema(url: str) -> None:
    import psycopg

    schema = url.rsplit("schema=", 1)[1]
    async with await psycopg.AsyncConnection.connect(os.environ["SLATEBOARD_TEST_PG"], autocommit=True) as conn:
        await conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_every_store_keeps_the_number_form_so_a_stored_log_verifies(tmp_path: Path) -> None:
    """The decision above holds only if a log read back from a store (a new connection) still
    holds ``1.0`` as a float: otherwise its recomputed state hashes would differ from the
    recorded ones and every such log would fail verification."""

    def w(view: object) -> object:
        xs = view.data.get("/xs") or []  # type: ignore[attr-defined]
        return [{"op": "add", "path": "/xs/-", "value": 1 if not xs else 1.0}]

    async def write_then_read(url: str) -> None:
        store = await open_store(url)
        try:
            board = await create_board(store, BP)
            await Runner(store, board, functions={"w": w}).run()
        finally:
            await store.close()
        store = await open_store(url, create=False)
        try:
            loaded = await store.load_board(board)
            records = await store.read_records(board)
        finally:
            await store.close()
            if url.startswith("postgres"):
                await _drop_schema(url)
        report = replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=True)
        assert report.ok, (url, report)
        assert [type(x) for x in report.state["xs"]] == [int, float], url

    for url in _stores(tmp_path):
        asyncio.run(write_then_read(url))
