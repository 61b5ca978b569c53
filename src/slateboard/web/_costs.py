"""What each board of the store has cost so far, as the dashboard's board list shows it.

The list is asked for again and again (every ``poll_s`` while a page follows it), so each board's
log is priced once and then only the records appended since are read and priced; a log that no
longer extends the priced one (a board created again under its id) is priced again whole.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..models.pricing import PriceTable
from ..runtime.result import cost_of
from ..stores.base import BoardInfo, Store, StoreError


@dataclass
class _Cost:
    """A board's cost as far as its log was priced: up to record ``seq`` (hash ``last_hash``)."""

    prices: PriceTable
    cost: float | None = 0.0
    seq: int = 0
    last_hash: str = ""


class BoardCosts:
    """Each listed board's cost so far (a few numbers per board of the store), priced at the
    board's own prices (its blueprint's ``limits.prices``)."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._costs: dict[str, _Cost] = {}

    def keep_only(self, board_ids: Iterable[str]) -> None:
        """Forget the boards not in ``board_ids`` (deleted from the store)."""
        for gone in set(self._costs) - set(board_ids):
            del self._costs[gone]

    async def cost(self, info: BoardInfo) -> float | None:
        """What the board's log cost so far, priced incrementally; None when unknown or when the
        board cannot be read now."""
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
