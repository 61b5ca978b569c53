"""The store conformance suite: boards: create, ids, listing, status, delete (``LogStore``)."""

from __future__ import annotations

from typing import cast

import pytest

from ...kernel import GENESIS, Kernel, Proposal
from ...stores import (
    BoardExists,
    BoardNotFound,
    Store,
    StoreError,
)
from ...vocabulary import BOARD_DONE, BOARD_RUNNING, BoardStatus
from ..kit import compiled, entry, inv
from ._support import user_meta


class BoardTests:
    """Boards: create, ids, listing, status, delete (``LogStore``)."""

    async def test_create_and_load_empty_board(self, store: Store) -> None:
        bp = compiled()
        info = await store.create_board(bp.spec.to_json(), bp.initial_state(), meta={"who": "test"})
        assert len(info.board_id) == 32
        assert (info.status, info.version, info.seq, info.last_hash) == (BOARD_RUNNING, 0, 0, GENESIS)
        assert info.name == "storetest" and user_meta(info.meta) == {"who": "test"}
        loaded = await store.load_board(info.board_id)
        assert loaded.blueprint == bp.spec.to_json()
        assert loaded.initial_state == {"entries": [], "notes": {}}
        assert loaded.snapshot is None and loaded.records == [] and loaded.pending == []
        assert (loaded.start_version, loaded.start_seq, loaded.start_hash) == (0, 0, GENESIS)
        assert await store.board_info(info.board_id) == info

    async def test_board_ids_are_unique_and_missing_boards_are_named(self, store: Store) -> None:
        bp = compiled()
        await store.create_board(bp.spec.to_json(), {}, board_id="b1")
        with pytest.raises(BoardExists, match="b1"):
            await store.create_board(bp.spec.to_json(), {}, board_id="b1")
        for call in (
            store.load_board("nope"),
            store.board_info("nope"),
            store.read_records("nope"),
            store.set_status("nope", BOARD_DONE),
            store.push_invocations("nope", [inv("x")]),
            store.agenda("nope"),
        ):
            with pytest.raises(BoardNotFound, match="nope"):
                await call
        rec = Kernel(bp).prepare(Proposal("w0", entry("w0", "x"))).record
        with pytest.raises(BoardNotFound):
            await store.append("nope", rec)

    async def test_list_boards_and_status(self, store: Store) -> None:
        bp = compiled()
        ids = [(await store.create_board(bp.spec.to_json(), {}, name=f"n{i}")).board_id for i in range(3)]
        assert [b.board_id for b in await store.list_boards()] == ids
        done = await store.set_status(ids[1], BOARD_DONE, "finished: done condition")
        assert (done.status, done.reason) == (BOARD_DONE, "finished: done condition")
        assert [b.board_id for b in await store.list_boards(status=BOARD_DONE)] == [ids[1]]
        assert [b.board_id for b in await store.list_boards(status=BOARD_RUNNING)] == [ids[0], ids[2]]
        with pytest.raises(StoreError, match="unknown board status"):
            await store.set_status(ids[0], cast(BoardStatus, "exploded"))  # a caller mypy does not check
        await store.delete_board(ids[0])
        assert [b.board_id for b in await store.list_boards()] == ids[1:]
        with pytest.raises(BoardNotFound):
            await store.load_board(ids[0])
