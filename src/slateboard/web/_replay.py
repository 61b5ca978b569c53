"""A board's log as the dashboard keeps it, and its states at any version, replayed from that log.

Records are immutable once appended (each one chains to the previous one's hash), so a board's
records are cached (``BoardLog``) and only the new ones are read from the store; ``still_valid``
says when a cached log no longer is a prefix of the stored one (a board deleted and created again
under its id). States are never taken from a snapshot: ``StateCache.at`` replays the log with
``slateboard.kernel.replay`` from the closest cached earlier state, checking every hash.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..models.pricing import PriceTable
from ..runtime.result import price_table
from ..stores.base import BoardInfo, BoardNotFound, Store
from ._shapes import ApiError

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint

_STATE_CACHE = 24


@dataclass
class BoardLog:
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
        """Append ``new`` (the records after the cached ones, in order)."""
        self.records.extend(new)
        self.versions.extend(r.version for r in new)

    def prefix_end(self, version: int) -> int:
        """How many leading records belong to versions up to ``version`` (the log up to the
        moment the state had reached ``version`` and not gone past it)."""
        return bisect_right(self.versions, version)


def still_valid(entry: BoardLog, info: BoardInfo) -> bool:
    """Whether the cached records are a prefix of the board's log as the header describes it."""
    have = len(entry.records)
    if have > info.seq:
        return False
    return not (have and have == info.seq and entry.records[-1].hash != info.last_hash)


async def open_board(store: Store, board_id: str) -> BoardLog:
    """The board's unchanging part, with no records yet: ApiError 404 for an unknown board, 409
    for a stored blueprint that no longer compiles."""
    from ..blueprint.compile import BlueprintError, compile_blueprint

    try:
        loaded = await store.load_board(board_id)
    except BoardNotFound:
        raise ApiError(404, f"no board {board_id!r} in this store") from None
    try:
        compiled = compile_blueprint(loaded.blueprint, source_label=f"stored with board {board_id}")
    except BlueprintError as exc:
        raise ApiError(409, f"the blueprint stored with board {board_id} is not accepted: {exc}") from None
    return BoardLog(
        board_id, loaded.blueprint, loaded.initial_state, compiled, price_table(compiled.spec.limits.prices)
    )


@dataclass(frozen=True, slots=True)
class State:
    """The state after the first ``seq`` records (``last_hash`` the last one's hash), at ``version``."""

    version: int
    seq: int
    last_hash: str
    state_hash: str
    state: JSON


class StateCache:
    """The most recently replayed states of every board (a bounded LRU), keyed by how far into
    which log they are; a state is reused only while its log prefix is still the board's."""

    def __init__(self) -> None:
        self._states: OrderedDict[tuple[str, int, str], State] = OrderedDict()

    def at(self, entry: BoardLog, version: int) -> State:
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
        start: State | None = None
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
        st = State(report.version, end, last_hash, report.state_hash, report.state)
        self._states[key] = st
        while len(self._states) > _STATE_CACHE:
            self._states.popitem(last=False)
        return st
