"""What the dashboard shows, read from a store: boards, records, states at any version, views.

``Dashboard`` answers the API one method per endpoint; the parts live beside it: ``_shapes``
(the JSON of boards and records), ``_replay`` (the cached log of a board and its replayed
states), ``_views`` (the views workers saw, rebuilt), ``_costs`` (the board list's costs) and
``_follow`` (the shared waits of the event streams).

Nothing here writes to the store. States are rebuilt by replaying the log with
``slateboard.kernel.replay`` (never taken from a snapshot), and the view a worker saw is rebuilt
with the view builder from the blueprint and the state at the version the worker viewed; it is
shown only together with whether its hash equals the ``view_hash`` the log kept.

Records are immutable once appended (each one chains to the previous one's hash), so a board's
records are cached and only the new ones are read from the store; a log that no longer chains
to the cached one (a board deleted and created again with the same id) is read again whole.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import anyio

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..runtime.fork import PARENT_KEY
from ..runtime.result import cost_json, cost_of, record_tokens
from ..stores.base import BoardInfo, BoardNotFound, Store
from ._costs import BoardCosts
from ._follow import Followers, signature
from ._replay import BoardLog, StateCache, open_board, still_valid
from ._shapes import MAX_PAGE, ApiError, board_json, changed_pointers, record_json, usage_json
from ._subboards import subboards_json
from ._views import check_view_hash, view_json

# MAX_PAGE and ApiError stay importable from here, where the package (and callers) took them.
__all__ = ["MAX_PAGE", "ApiError", "Dashboard"]

_BOARD_CACHE = 32


class Dashboard:
    """Reads boards for the web dashboard (see module docstring). One per app, on one event loop.

    Guarantees: read-only; every state is the replayed log's (a log that does not verify gives
    ApiError 409 naming the first bad record); unknown boards give ApiError 404; bad arguments
    ApiError 400.
    """

    def __init__(self, store: Store, *, poll_s: float = 0.5, anchor: tuple[bytes, Path] | None = None) -> None:
        if poll_s <= 0:
            raise InvalidInput("poll_s must be positive")
        self.store = store
        # (key, anchor file): each board's log is checked against its signed checkpoints (I1).
        self.anchor = anchor
        self.poll_s = poll_s
        self._boards: OrderedDict[str, BoardLog] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._states = StateCache()
        self._followers = Followers(store, poll_s)
        self._costs = BoardCosts(store)

    # -- boards ---------------------------------------------------------------------------------
    async def boards(self) -> list[dict[str, JSON]]:
        """Every board of the store, newest update first, each with its cost (only the records
        appended since the last call are read and priced)."""
        found = await self.store.list_boards()
        self._costs.keep_only(b.board_id for b in found)
        return [
            board_json(b, await self._costs.cost(b)) for b in sorted(found, key=lambda b: b.updated_at, reverse=True)
        ]

    async def _info(self, board_id: str) -> BoardInfo:
        try:
            return await self.store.board_info(board_id)
        except BoardNotFound:
            self._boards.pop(board_id, None)
            raise ApiError(404, f"no board {board_id!r} in this store") from None

    async def _board(self, board_id: str) -> tuple[BoardInfo, BoardLog]:
        """The board's header and its cache, brought up to the store's last record."""
        lock = self._locks.setdefault(board_id, asyncio.Lock())
        try:
            async with lock:
                info = await self._info(board_id)
                entry = self._boards.get(board_id)
                if entry is not None and not still_valid(entry, info):
                    entry = None
                if entry is None:
                    entry = await open_board(self.store, board_id)
                have = len(entry.records)
                if info.seq > have:
                    # Stop at the header's seq, so one answer never mixes two moments of the log.
                    new = await self.store.read_records(board_id, have + 1, limit=info.seq - have)
                    if have and new and new[0].prev != entry.records[-1].hash:
                        entry = await open_board(self.store, board_id)
                        new = await self.store.read_records(board_id, 1, limit=info.seq)
                    entry.extend(new)
                self._boards[board_id] = entry
                self._boards.move_to_end(board_id)
                while len(self._boards) > _BOARD_CACHE:
                    self._boards.popitem(last=False)
        finally:
            # Keep a lock only for cached boards: one per distinct id ever requested (unknown
            # ids included) grew without bound (D8).
            for stale in [k for k, v in self._locks.items() if k not in self._boards and not v.locked()]:
                del self._locks[stale]
        return info, entry

    async def lineage(self, info: BoardInfo, boards: Sequence[BoardInfo] | None = None) -> dict[str, JSON]:
        """Where a board comes from and what came of it (``slateboard fork``): ``parent`` (None
        for a board that is no fork; else the parent's id, name, the version and seq the fork
        was taken at, and whether the parent is still in the store) and ``children`` (the
        boards forked from it, oldest first: id, name, status, the version they were taken at).
        ``boards``: the store's boards when the caller listed them already."""
        binding = info.meta.get(PARENT_KEY)
        parent: dict[str, JSON] | None = None
        if isinstance(binding, dict) and isinstance(binding.get("board"), str):
            parent_id = str(binding["board"])
            parent = {"board_id": parent_id, "version": binding.get("version"), "seq": binding.get("seq")}
            try:
                found = await self.store.board_info(parent_id)
                parent.update(name=found.name, exists=True)
            except BoardNotFound:
                parent.update(name=None, exists=False)
        children: list[JSON] = []
        if boards is None:
            boards = await self.store.list_boards()
        for b in sorted(boards, key=lambda b: b.created_at):
            bound = b.meta.get(PARENT_KEY)
            if isinstance(bound, dict) and bound.get("board") == info.board_id:
                children.append(
                    {**board_json(b), "version_forked": bound.get("version"), "seq_forked": bound.get("seq")}
                )
        return {"parent": parent, "children": children}

    async def board(self, board_id: str) -> dict[str, JSON]:
        """One board: its header, its fork lineage, its sub-board links (``_subboards``: the
        parent of a child board, the children of a parent, all among this dashboard's store's
        boards, so a tenant's), its blueprint's workers and contracts, counts by outcome, and
        tokens per worker and per component."""
        info, entry = await self._board(board_id)
        records = entry.records
        counts: dict[str, int] = {}
        for r in records:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        spec = entry.blueprint_json
        workers = spec.get("workers") if isinstance(spec.get("workers"), dict) else {}
        out = board_json(info)
        every = await self.store.list_boards()  # through this dashboard's (tenant-scoped) store
        out["lineage"] = await self.lineage(info, every)
        out["subboards"] = subboards_json(info, every, records)
        out["blueprint"] = {
            "name": spec.get("name"),
            "description": spec.get("description"),
            "workers": {
                name: {k: w.get(k) for k in ("reads", "writes", "ops", "view_budget", "model", "function")}
                for name, w in sorted((workers or {}).items())
                if isinstance(w, dict)
            },
            "done": spec.get("done"),
            "answer": spec.get("answer"),
        }
        out["outcomes"] = dict(sorted(counts.items()))
        out["cost_usd"] = cost_json(cost_of(records, entry.prices))
        out["usage"] = usage_json(records, entry.prices)
        out["tokens"] = sum(record_tokens(r) for r in records)  # model judges' tokens included
        out["anchor"] = await self._anchor_status(board_id, records)
        return out

    async def _anchor_status(self, board_id: str, records: Sequence[Record]) -> JSON:
        """None without an anchor file; else how many checkpoints the board has, the last one's
        seq, and whether the log matches them all (the file is re-read: checkpoints are added).
        A record-0 checkpoint is checked against the blueprint and initial state stored now (read
        again, not the cached copy), as ``replay --verify --anchor`` does."""
        if self.anchor is None:
            return None
        from ..kernel.anchor import AnchorError, check_anchors, parse_checkpoints
        from ..kernel.record import board_genesis_hash

        key, path = self.anchor
        try:
            mine = [cp for cp in parse_checkpoints(path.read_bytes()) if cp.board_id == board_id]
        except (OSError, AnchorError) as exc:
            return {"checkpoints": 0, "seq": None, "ok": False, "problem": f"the anchor file cannot be read: {exc}"}
        problem = None
        if mine:
            stored = await self.store.load_board(board_id)
            genesis = board_genesis_hash(stored.blueprint, stored.initial_state)
            problem = check_anchors(key, board_id, records, mine, genesis)
        return {
            "checkpoints": len(mine),
            "seq": max((cp.seq for cp in mine), default=None),
            "ok": bool(mine) and problem is None,
            "problem": problem,
        }

    async def records(self, board_id: str, *, after: int = 0, limit: int | None = None) -> dict[str, JSON]:
        """Records with ``seq > after``, in order, at most ``limit`` (and MAX_PAGE)."""
        if after < 0:
            raise ApiError(400, f"after must be 0 or more, got {after}")
        if limit is not None and limit < 1:
            raise ApiError(400, f"limit must be 1 or more, got {limit}")
        info, entry = await self._board(board_id)
        cap = min(limit or MAX_PAGE, MAX_PAGE)
        chosen = entry.records[after : after + cap]
        more = after + len(chosen) < len(entry.records)
        return {
            "board_id": info.board_id,
            "total": len(entry.records),
            "records": [record_json(r, entry.prices) for r in chosen],
            "next_after": chosen[-1].seq if chosen and more else None,
        }

    # -- states ---------------------------------------------------------------------------------
    async def state(self, board_id: str, version: int | None) -> dict[str, JSON]:
        """The state at ``version`` (None: the latest), rebuilt by replaying the log; with the
        record that produced it and the pointers that record changed."""
        info, entry = await self._board(board_id)
        latest = entry.versions[-1] if entry.versions else 0
        if version is None:
            version = latest
        if version > latest:
            raise ApiError(400, f"board {board_id} has no version {version} (its latest version is {latest})")
        st = self._states.at(entry, version)
        producer = next((r for r in reversed(entry.records[: st.seq]) if r.accepted), None) if version else None
        return {
            "board_id": info.board_id,
            "version": st.version,
            "latest_version": latest,
            "seq": st.seq,
            "state_hash": st.state_hash,
            "record": record_json(producer, entry.prices) if producer is not None else None,
            "changed": changed_pointers(producer, st.state) if producer is not None else [],
            "state": st.state,
        }

    # -- views ----------------------------------------------------------------------------------
    async def view(self, board_id: str, view_hash: str, seq: int | None = None) -> dict[str, JSON]:
        """The view whose hash the log keeps as ``view_hash``, rebuilt from the blueprint and the
        state at the version it was built at (see ``_views.rebuild_view``); ``seq`` picks which
        record's inputs to use when several proposals saw the same view."""
        check_view_hash(view_hash)
        info, entry = await self._board(board_id)
        return view_json(info, entry, self._states, view_hash, seq)

    # -- following ------------------------------------------------------------------------------
    async def follow_board(
        self, board_id: str, after: int, stop: anyio.Event | None = None
    ) -> AsyncIterator[tuple[str, JSON, str | None]]:
        """Yield ``("record", record, seq)`` for every record after ``after`` as it is appended,
        each once and in ``seq`` order, and ``("board", header, None)`` whenever the header
        changes (status, version, records), until ``stop`` is set; ends after ``("gone",
        message, None)`` when the board is deleted. New records and status changes arrive as
        the store reports them (``runtime.watch.wait_for_change``), not a poll later."""
        last = max(0, after)
        shown: tuple[Any, ...] | None = None
        while True:
            generation = self._followers.generation(board_id)
            try:
                info, entry = await self._board(board_id)
            except ApiError as exc:
                yield "gone", {"error": exc.message}, None
                return
            for rec in entry.records[last:]:
                yield "record", record_json(rec, entry.prices), str(rec.seq)
                last = rec.seq
            sig = signature(info)
            if sig != shown:
                shown = sig
                yield "board", board_json(info, cost_of(entry.records, entry.prices)), None
            if stop is not None and stop.is_set():
                return
            if await self._followers.await_change(board_id, generation, sig, stop):
                return

    async def follow_boards(self, stop: anyio.Event | None = None) -> AsyncIterator[list[dict[str, JSON]]]:
        """Yield the board list now and whenever it changes (polling every ``poll_s``) until
        ``stop`` is set."""
        shown: list[dict[str, JSON]] | None = None
        while True:
            found = await self.boards()
            if found != shown:
                shown = found
                yield found
            if await self._followers.pause(stop):
                return
