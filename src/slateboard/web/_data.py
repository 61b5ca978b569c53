"""What the dashboard shows, read from a store: boards, records, states at any version, views.

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
import itertools
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import orjson

from ..errors import InvalidInput, UsageError
from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..models.pricing import PriceTable
from ..redaction import redact_json
from ..runtime.fork import PARENT_KEY
from ..runtime.result import cost_json, cost_of, price_table
from ..stores.base import BoardInfo, BoardNotFound, Store, StoreError

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint
    from ..views import View

MAX_PAGE = 5000
"""The most records one ``records`` call returns (``next_after`` says where to go on)."""

_STATE_CACHE = 24
_BOARD_CACHE = 32
_VIEW_CANDIDATES = 48
_HASH_CHARS = frozenset("0123456789abcdef")


class ApiError(UsageError):
    """A request the dashboard cannot answer: ``status`` is the HTTP status, ``message`` one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def board_json(info: BoardInfo, cost: float | None = None) -> dict[str, JSON]:
    """A board's header as the API shows it (the same fields as ``slateboard boards --json``);
    ``end_status`` (solved, exhausted, failed, paused, interrupted, running) is what the badges
    show; ``cost_usd`` what its log cost at its own prices (null: unknown, or not computed)."""
    from ..status import end_status

    return {
        "board_id": info.board_id,
        "name": info.name,
        "status": info.status,
        "end_status": end_status(info.status, info.reason),
        "reason": info.reason,
        "version": info.version,
        "records": info.seq,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "cost_usd": cost_json(cost),
    }


def record_json(rec: Record, prices: PriceTable | None = None) -> dict[str, JSON]:
    """A record as the API shows it: every logged field, plus ``tokens`` (in + out),
    ``cost_usd`` (those tokens priced with ``prices``, the board's table; null: unknown) and
    ``viewed_version`` (the version the worker's view was built at, when the log says)."""
    from ..runtime.result import record_cost

    out = rec.to_json()
    out["tokens"] = rec.usage.tokens_in + rec.usage.tokens_out
    out["cost_usd"] = cost_json(record_cost(rec, prices if prices is not None else PriceTable()))
    viewed = rec.meta.get("viewed_version")
    out["viewed_version"] = viewed if isinstance(viewed, int) and not isinstance(viewed, bool) else None
    # a log written before a key was known to be one (or by another process) may hold it: the
    # page never shows a URL password or a registered secret (issue 29, R3)
    shown: dict[str, JSON] = redact_json(out)
    return shown


def usage_json(records: Sequence[Record], prices: PriceTable | None = None) -> dict[str, JSON]:
    """Tokens per worker (proposals only) and per component, as ``RunResult`` counts them, each
    with its ``cost_usd`` at ``prices`` (the board's table; null: unknown)."""
    from ..runtime.result import cost_by, usage_by

    table_of = prices if prices is not None else PriceTable()

    def table(key: str, recs: Sequence[Record]) -> dict[str, JSON]:
        costs = cost_by(recs, key, table_of)
        return {
            name: {**u.to_json(), "cost_usd": cost_json(costs.get(name, 0.0))}
            for name, u in sorted(usage_by(recs, key).items())
        }

    return {
        "by_worker": table("worker", [r for r in records if r.kind == "proposal"]),
        "by_component": table("component", records),
    }


def parse_version(raw: str | None) -> int | None:
    """The ``version`` query parameter as an integer (None when absent); ApiError 400 otherwise."""
    if raw is None or raw == "" or raw == "latest":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"version must be a whole number or 'latest', got {raw!r}") from None
    if value < 0:
        raise ApiError(400, f"version must be 0 or more, got {value}")
    return value


@dataclass
class _Board:
    """The cached part of one board: what never changes, and its records so far."""

    board_id: str
    blueprint_json: dict[str, Any]
    initial_state: JSON
    compiled: CompiledBlueprint
    prices: PriceTable = field(default_factory=PriceTable)
    records: list[Record] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    """``versions[i]`` is ``records[i].version`` (kept for bisecting)."""

    def extend(self, new: Sequence[Record]) -> None:
        self.records.extend(new)
        self.versions.extend(r.version for r in new)

    def prefix_end(self, version: int) -> int:
        """How many leading records belong to versions up to ``version`` (the log up to the
        moment the state had reached ``version`` and not gone past it)."""
        return bisect_right(self.versions, version)


@dataclass
class _Cost:
    """A board's cost as far as its log was priced: up to record ``seq`` (hash ``last_hash``)."""

    prices: PriceTable
    cost: float | None = 0.0
    seq: int = 0
    last_hash: str = ""


def _still_valid(entry: _Board, info: BoardInfo) -> bool:
    """Whether the cached records are a prefix of the board's log as the header describes it."""
    have = len(entry.records)
    if have > info.seq:
        return False
    return not (have and have == info.seq and entry.records[-1].hash != info.last_hash)


@dataclass(frozen=True, slots=True)
class _State:
    version: int
    seq: int
    last_hash: str
    state_hash: str
    state: JSON


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
        self._boards: OrderedDict[str, _Board] = OrderedDict()
        self._locks: dict[str, asyncio.Lock] = {}
        self._states: OrderedDict[tuple[str, int, str], _State] = OrderedDict()
        self._wakers: dict[str, _Waker] = {}
        self._ticks = itertools.count()
        """The boards some event stream follows now, each with its one store waiter."""
        self._costs: dict[str, _Cost] = {}
        """Each listed board's cost so far (a few numbers per board of the store)."""

    # -- boards ---------------------------------------------------------------------------------
    async def boards(self) -> list[dict[str, JSON]]:
        """Every board of the store, newest update first, each with its cost (only the records
        appended since the last call are read and priced)."""
        found = await self.store.list_boards()
        for gone in set(self._costs) - {b.board_id for b in found}:
            del self._costs[gone]
        return [
            board_json(b, await self._board_cost(b)) for b in sorted(found, key=lambda b: b.updated_at, reverse=True)
        ]

    async def _board_cost(self, info: BoardInfo) -> float | None:
        """What the board's log cost so far, priced incrementally (a log that no longer extends
        the priced one, a board created again under its id, is priced again whole); None when
        unknown or when the board cannot be read now."""
        from ..runtime.result import blueprint_prices

        try:
            run = self._costs.get(info.board_id)
            if run is not None and (info.seq < run.seq or (info.seq == run.seq and info.last_hash != run.last_hash)):
                run = None
            if run is None:
                run = _Cost(blueprint_prices((await self.store.load_board(info.board_id)).blueprint))
            if info.seq > run.seq:
                new = await self.store.read_records(info.board_id, run.seq + 1, limit=info.seq - run.seq)
                if run.seq and new and new[0].prev != run.last_hash:
                    run = _Cost(run.prices)
                    new = await self.store.read_records(info.board_id, 1, limit=info.seq)
                added = cost_of(new, run.prices)
                run.cost = None if run.cost is None or added is None else run.cost + added
                if new:
                    run.seq, run.last_hash = new[-1].seq, new[-1].hash
            self._costs[info.board_id] = run
            return run.cost
        except (StoreError, ValueError):
            return None

    async def _info(self, board_id: str) -> BoardInfo:
        try:
            return await self.store.board_info(board_id)
        except BoardNotFound:
            self._boards.pop(board_id, None)
            raise ApiError(404, f"no board {board_id!r} in this store") from None

    async def _board(self, board_id: str) -> tuple[BoardInfo, _Board]:
        """The board's header and its cache, brought up to the store's last record."""
        lock = self._locks.setdefault(board_id, asyncio.Lock())
        try:
            async with lock:
                info = await self._info(board_id)
                entry = self._boards.get(board_id)
                if entry is not None and not _still_valid(entry, info):
                    entry = None
                if entry is None:
                    entry = await self._open(board_id)
                have = len(entry.records)
                if info.seq > have:
                    # Stop at the header's seq, so one answer never mixes two moments of the log.
                    new = await self.store.read_records(board_id, have + 1, limit=info.seq - have)
                    if have and new and new[0].prev != entry.records[-1].hash:
                        entry = await self._open(board_id)
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

    async def _open(self, board_id: str) -> _Board:
        from ..blueprint.compile import BlueprintError, compile_blueprint

        try:
            loaded = await self.store.load_board(board_id)
        except BoardNotFound:
            raise ApiError(404, f"no board {board_id!r} in this store") from None
        try:
            compiled = compile_blueprint(loaded.blueprint, source_label=f"stored with board {board_id}")
        except BlueprintError as exc:
            raise ApiError(409, f"the blueprint stored with board {board_id} is not accepted: {exc}") from None
        return _Board(
            board_id, loaded.blueprint, loaded.initial_state, compiled, price_table(compiled.spec.limits.prices)
        )

    async def lineage(self, info: BoardInfo) -> dict[str, JSON]:
        """Where a board comes from and what came of it (``slateboard fork``): ``parent`` (None
        for a board that is no fork; else the parent's id, name, the version and seq the fork
        was taken at, and whether the parent is still in the store) and ``children`` (the
        boards forked from it, oldest first: id, name, status, the version they were taken at)."""
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
        for b in sorted(await self.store.list_boards(), key=lambda b: b.created_at):
            bound = b.meta.get(PARENT_KEY)
            if isinstance(bound, dict) and bound.get("board") == info.board_id:
                children.append(
                    {**board_json(b), "version_forked": bound.get("version"), "seq_forked": bound.get("seq")}
                )
        return {"parent": parent, "children": children}

    async def board(self, board_id: str) -> dict[str, JSON]:
        """One board: its header, its blueprint's workers and contracts, counts by outcome, and
        tokens per worker and per component."""
        info, entry = await self._board(board_id)
        records = entry.records
        counts: dict[str, int] = {}
        for r in records:
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        spec = entry.blueprint_json
        workers = spec.get("workers") if isinstance(spec.get("workers"), dict) else {}
        out = board_json(info)
        out["lineage"] = await self.lineage(info)
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
        out["tokens"] = sum(r.usage.tokens_in + r.usage.tokens_out for r in records)
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
        st = self._state_at(entry, version)
        producer = next((r for r in reversed(entry.records[: st.seq]) if r.accepted), None) if version else None
        return {
            "board_id": info.board_id,
            "version": st.version,
            "latest_version": latest,
            "seq": st.seq,
            "state_hash": st.state_hash,
            "record": record_json(producer, entry.prices) if producer is not None else None,
            "changed": _changed(producer, st.state) if producer is not None else [],
            "state": st.state,
        }

    def _state_at(self, entry: _Board, version: int) -> _State:
        """Replay the log up to ``version`` from the closest cached earlier state (or the initial
        state); the replay checks every hash on the way."""
        from ..kernel.record import GENESIS
        from ..kernel.replay import replay

        end = entry.prefix_end(version)
        last_hash = entry.records[end - 1].hash if end else GENESIS
        key = (entry.board_id, end, last_hash)
        hit = self._states.get(key)
        if hit is not None:
            self._states.move_to_end(key)
            return hit
        start: _State | None = None
        for (bid, seq, h), st in self._states.items():
            usable = bid == entry.board_id and seq <= end and (start is None or seq > start.seq)
            if usable and (seq == 0 or entry.records[seq - 1].hash == h):
                start = st
        if start is None:
            base, from_seq, base_version, base_hash = entry.initial_state, 0, 0, GENESIS
        else:
            base, from_seq, base_version, base_hash = start.state, start.seq, start.version, start.last_hash
        report = replay(
            entry.compiled,
            base,
            entry.records[from_seq:end],
            start_version=base_version,
            start_seq=from_seq,
            start_hash=base_hash,
        )
        if not report.ok:
            raise ApiError(
                409, f"board {entry.board_id}: the log does not verify at record {report.bad_seq}: {report.problem}"
            )
        st = _State(report.version, end, last_hash, report.state_hash, report.state)
        self._states[key] = st
        while len(self._states) > _STATE_CACHE:
            self._states.popitem(last=False)
        return st

    # -- views ----------------------------------------------------------------------------------
    async def view(self, board_id: str, view_hash: str, seq: int | None = None) -> dict[str, JSON]:
        """The view whose hash the log keeps as ``view_hash``, rebuilt from the blueprint and the
        state at the version it was built at (see ``rebuild_view``); ``seq`` picks which record's
        inputs to use when several proposals saw the same view."""
        if len(view_hash) != 64 or not set(view_hash) <= _HASH_CHARS:
            raise ApiError(400, f"a view hash is 64 lowercase hex characters, got {view_hash[:80]!r}")
        info, entry = await self._board(board_id)
        seen = [r for r in entry.records if r.view_hash == view_hash]
        if not seen:
            raise ApiError(404, f"no record of board {board_id} has view hash {view_hash[:12]}…")
        if seq is not None:
            chosen = next((r for r in seen if r.seq == seq), None)
            if chosen is None:
                raise ApiError(404, f"record {seq} of board {board_id} did not see view {view_hash[:12]}…")
        else:
            chosen = seen[0]
        out: dict[str, JSON] = {
            "board_id": info.board_id,
            "hash": view_hash,
            "records": [r.seq for r in seen],
            "seq": chosen.seq,
            "worker": chosen.worker,
        }
        out.update(self._rebuild(entry, chosen))
        return out

    def _rebuild(self, entry: _Board, rec: Record) -> dict[str, JSON]:
        """Rebuild ``rec``'s view: try the inputs the runner could have used, first match wins."""
        from ..views import build_view

        worker = rec.worker
        if worker is None or worker not in entry.compiled.workers:
            return {"matches": False, "problem": f"worker {worker!r} is not in the board's blueprint", "view": None}
        viewed = rec.meta.get("viewed_version")
        if not isinstance(viewed, int) or isinstance(viewed, bool):
            viewed = rec.version - 1 if rec.accepted else rec.version
        st = self._state_at(entry, viewed)
        first: tuple[View, dict[str, JSON]] | None = None
        for inputs in _view_inputs(entry.records, rec, viewed, st.seq):
            try:
                view = build_view(
                    entry.compiled,
                    worker,
                    st.state,
                    viewed,
                    event=rec.event,
                    rejections=inputs.rejections,
                    expand=inputs.expand,
                    budget=inputs.budget,
                )
            except (KeyError, ValueError) as exc:
                return {"matches": False, "problem": f"the view cannot be rebuilt: {exc}", "view": None}
            if first is None:
                first = (view, inputs.to_json())
            if view.hash == rec.view_hash:
                return _view_out(view, inputs.to_json(), True, st)
        assert first is not None
        return _view_out(first[0], first[1], False, st)

    # -- following ------------------------------------------------------------------------------
    async def _pause(self, stop: anyio.Event | None) -> bool:
        """Wait ``poll_s`` (less when ``stop`` is set meanwhile); True when it is time to stop."""
        if stop is None:
            await asyncio.sleep(self.poll_s)
            return False
        with anyio.move_on_after(self.poll_s):
            await stop.wait()
        return stop.is_set()

    def _generation(self, board_id: str) -> int:
        """The board's waker generation now (-1 when none): taken before a follower reads the
        board, so a change seen by the waker after that read is never missed."""
        waker = self._wakers.get(board_id)
        return -1 if waker is None else waker.generation

    async def _await_change(
        self, board_id: str, generation: int, shown: tuple[Any, ...], stop: anyio.Event | None
    ) -> bool:
        """Wait until the board's header changes (a record, a status, a deletion) or ``stop`` is
        set; True when it is time to stop. ``generation`` is ``_generation`` from before the
        follower's last read and ``shown`` the header it read: it returns at once when the waker
        woke since. Every follower of one board shares one waker (``_Waker``), so the store is
        waited on once per board, however many streams follow it."""
        waker = self._wakers.get(board_id)
        if waker is None:
            waker = self._wakers[board_id] = _Waker(next(self._ticks), shown)
        if waker.generation != generation:
            return stop is not None and stop.is_set()
        changed = waker.changed
        waker.users += 1
        try:
            if waker.task is None or waker.task.done():
                waker.task = asyncio.get_running_loop().create_task(self._wake(board_id, waker))
            if stop is None:
                await changed.wait()
                return False
            async with anyio.create_task_group() as group:

                async def on_stop() -> None:
                    await stop.wait()
                    group.cancel_scope.cancel()

                group.start_soon(on_stop)
                await changed.wait()
                group.cancel_scope.cancel()
            return stop.is_set()
        finally:
            waker.users -= 1

    async def _wake(self, board_id: str, waker: _Waker) -> None:
        """The one store waiter of a followed board: ``runtime.watch.wait_for_change`` (the
        store's own wake-up on appends and status changes; ``poll_s`` is only its timeout), then
        one header read; followers are woken when the header differs from the last one seen.
        Ends, within ``poll_s``, once no stream follows the board, or when the board cannot be
        read (the followers then read it themselves and report what they find)."""
        from ..runtime.watch import wait_for_change

        sig = waker.sig
        try:
            while waker.users > 0:
                if sig[0] == "running":
                    await wait_for_change(self.store, board_id, sig[3], self.poll_s)
                else:
                    # An ended board wakes nobody (a waiter would return at once): read it again
                    # now and then, in case it is resumed or deleted.
                    await asyncio.sleep(self.poll_s)
                now = _signature(await self.store.board_info(board_id))
                if now != sig:
                    sig = waker.sig = now
                    waker.wake(next(self._ticks))
        except Exception:  # the followers read the board again and report what failed
            waker.wake(next(self._ticks))
        finally:
            if self._wakers.get(board_id) is waker:
                del self._wakers[board_id]

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
            generation = self._generation(board_id)
            try:
                info, entry = await self._board(board_id)
            except ApiError as exc:
                yield "gone", {"error": exc.message}, None
                return
            for rec in entry.records[last:]:
                yield "record", record_json(rec, entry.prices), str(rec.seq)
                last = rec.seq
            sig = _signature(info)
            if sig != shown:
                shown = sig
                yield "board", board_json(info, cost_of(entry.records, entry.prices)), None
            if stop is not None and stop.is_set():
                return
            if await self._await_change(board_id, generation, sig, stop):
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
            if await self._pause(stop):
                return


def _signature(info: BoardInfo) -> tuple[Any, ...]:
    """What a follower shows of a header: a change of any of it is worth an event."""
    return (info.status, info.reason, info.version, info.seq, info.updated_at)


@dataclass
class _Waker:
    """The shared wait of one followed board: ``sig`` is the header it last saw, ``changed`` is
    set (and replaced, with a new ``generation``) whenever that changes, ``users`` counts the
    waiting streams."""

    generation: int
    sig: tuple[Any, ...]
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    users: int = 0
    task: asyncio.Task[None] | None = None

    def wake(self, generation: int) -> None:
        self.generation = generation
        self.changed.set()
        self.changed = asyncio.Event()


@dataclass(frozen=True, slots=True)
class _ViewInputs:
    rejections: tuple[Record, ...]
    budget: int | None
    expand: tuple[str, ...]

    def to_json(self) -> dict[str, JSON]:
        return {"rejections": [r.seq for r in self.rejections], "budget": self.budget, "expand": list(self.expand)}


def _view_inputs(records: Sequence[Record], rec: Record, viewed: int, viewed_end: int) -> list[_ViewInputs]:
    """The inputs the runner may have built ``rec``'s view with, most likely first.

    The view was built when the log held some prefix of ``L`` records, with the state at
    ``viewed``: ``L`` lies between the record that produced ``viewed`` and ``rec`` (in parallel
    mode other records may land in between). From that prefix come the worker's recent
    rejections, the view budget a circuit ``tighten_budget`` action set in the same run (a
    ``run`` record ends a run, and the next run starts without them), and the handles the
    worker's previous proposal asked to expand. One pass over the log.
    """
    worker = rec.worker
    low = next((i + 1 for i in range(viewed_end - 1, -1, -1) if records[i].accepted), 0)
    high = max(low, min(rec.seq - 1, viewed_end))
    rejections: list[Record] = []
    budget: int | None = None
    expand: tuple[str, ...] = ()
    by_end: list[tuple[tuple[Record, ...], int | None, tuple[str, ...]]] = []
    if low == 0:
        by_end.append(((), None, ()))
    for i, r in enumerate(records[:high]):
        if r.kind == "run":
            budget, expand = None, ()
        elif r.kind == "circuit" and r.meta.get("worker") == worker and r.meta.get("action") == "tighten_budget":
            details = r.meta.get("details")
            value = details.get("view_budget") if isinstance(details, dict) else None
            if isinstance(value, int) and not isinstance(value, bool):
                budget = value
        elif r.kind == "proposal" and r.worker == worker:
            raw = r.meta.get("expand")
            expand = tuple(h for h in raw if isinstance(h, str)) if isinstance(raw, list) else ()
        if r.outcome == "rejected" and r.worker == worker:
            rejections.append(r)
        elif r.accepted and r.worker == worker and r.kind == "proposal":
            rejections = []  # as runtime.accounting: an accepted proposal clears them
        if i + 1 >= low:
            by_end.append((tuple(rejections[-3:]), budget, expand))
    out: list[_ViewInputs] = []
    seen: set[tuple[tuple[int, ...], int | None, tuple[str, ...]]] = set()
    for rejected, limit, handles in reversed(by_end):
        for variant in ((limit, handles), (limit, ()), (None, handles), (None, ())):
            key = (tuple(r.seq for r in rejected), *variant)
            if key not in seen and len(out) < _VIEW_CANDIDATES:
                seen.add(key)
                out.append(_ViewInputs(rejected, *variant))
    return out or [_ViewInputs((), None, ())]


def _view_out(view: View, inputs: dict[str, JSON], matches: bool, st: _State) -> dict[str, JSON]:
    out: dict[str, JSON] = {
        "matches": matches,
        "rebuilt_hash": view.hash,
        "version": view.version,
        "state_hash": st.state_hash,
        "inputs": inputs,
        "view": view.to_json(),
        "text": view.render(),
    }
    if not matches:
        out["problem"] = (
            "the rebuilt view's hash differs from the logged one: the view depended on something "
            "the log does not keep (for example a resumed run's rejection history)"
        )
    return out


def _changed(rec: Record, state: JSON) -> list[str]:
    """The pointers an accepted record's patch wrote, with ``-`` resolved to the appended index."""
    from ..kernel.pointer import MISSING, PointerError, format_pointer, parse_pointer, resolve

    try:
        ops = orjson.loads(rec.patch or "[]")
    except orjson.JSONDecodeError:
        return []
    out: list[str] = []
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, dict) or op.get("op") in ("test", "remove") or not isinstance(op.get("path"), str):
            continue
        try:
            tokens = list(parse_pointer(op["path"]))
        except PointerError:
            continue
        if tokens and tokens[-1] == "-":
            parent = resolve(state, tuple(tokens[:-1]))
            if parent is MISSING or not isinstance(parent, list) or not parent:
                continue
            tokens[-1] = str(len(parent) - 1)
        out.append(format_pointer(tokens))
    return out
