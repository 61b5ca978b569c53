"""Parallel rounds (``parallel=True``): every agent's turn from the same board, decided in order."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Sequence

from ..errors import StoreError
from ..kernel.canonical import JSON
from ..kernel.kernel import Decision
from ..kernel.record import CONTROL_KIND, Usage
from ..scheduling.invocation import Invocation
from ..stores.base import AgendaChanges
from ..vocabulary import EVENT_META, MODEL_META, ONCE_KEY, ROUND_META
from ..workers.base import WorkerReply
from ._control import CONTROL_WORKER, COORDINATOR_DECIDED, DECIDE_INVOCATION, round_id
from ._events import INVOKING, PREVIEW, REJECTED
from ._parallel import PARALLEL_META, PARALLEL_RAW, TURN_DROPPED, parallel_control_meta, parallel_invocation, renumber
from ._run_base import LEASE_S
from ._run_gates import _RunGates


class _RunParallel(_RunGates):
    """A run's parallel rounds (see slateboard.team._parallel for the records they write)."""

    # -- parallel rounds (``parallel=True``; see slateboard.team._parallel) ---------------------
    async def _parallel_round(self, round_num: int) -> None:
        """Every agent's turn from the board as the round began: one control record pushes them
        all, they are claimed, their models called concurrently, then their proposals decided in
        agent order (ids renumbered to the committed board, no staleness check among peers).
        A halt (circuit, or an entry awaiting approval) drops the turns not decided yet."""
        names = list(self.team.agents)
        leftovers = [i for i in self.session.agenda.eligible() if i.id != DECIDE_INVOCATION]
        turns = [
            parallel_invocation(
                name,
                round_num,
                k,
                self.session.scheduler.allocate_order(),
                feedback=next((i.feedback for i in leftovers if i.worker == name and i.feedback), None),
            )
            for k, name in enumerate(names)
        ]

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: parallel: {', '.join(names)}",
                worker=CONTROL_WORKER,
                invocation=round_id(round_num),
                meta=parallel_control_meta(names, round_num),
                usage=Usage(component="coordinator"),
            )

        def changes(_d: Decision, _pushed: Sequence[Invocation]) -> AgendaChanges:
            return AgendaChanges(cancel=[i.id for i in leftovers], push=tuple(turns))

        await self.transact(prepare, changes)
        await self.emit(
            COORDINATOR_DECIDED,
            round=round_num,
            terminate=False,
            next_agent=None,
            next_agents=list(names),
            raw=PARALLEL_RAW[:PREVIEW],
        )
        claimed = [await self._claim(t) for t in turns]
        for inv in claimed:
            await self.emit(INVOKING, round=round_num, agent=inv.worker)
        views = [self.session.view(inv) for inv in claimed]
        keeper = asyncio.create_task(self._keep_leases([inv.id for inv in claimed]))
        calls = [
            asyncio.ensure_future(self.session.workers[inv.worker].propose(v, inv.event, feedback=inv.feedback))
            for inv, v in zip(claimed, views, strict=True)
        ]
        try:
            replies = await asyncio.gather(*calls)
        except BaseException:
            # One call failing (workers never raise for a model failure: this is a crash or a
            # cancellation) ends the round: the others are not left running behind the run.
            for call in calls:
                call.cancel()
            await asyncio.gather(*calls, return_exceptions=True)
            raise
        finally:
            keeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await keeper
        for inv, view, reply in zip(claimed, views, replies, strict=True):
            if self._halted() is not None:
                await self._drop(inv, round_num, reply)
                continue
            reply = renumber(reply, f"e{len(self.public()) + 1}")
            meta: dict[str, JSON] = {k: v for k, v in inv.meta.items() if k != ONCE_KEY}
            meta[PARALLEL_META] = True
            meta["round_version"] = view.version
            proposal = dataclasses.replace(
                reply.to_proposal(view, invocation=inv.id, event=inv.event, meta=meta), viewed_version=None
            )
            outcome = await self.session.decide(inv, proposal, reply=reply)
            assert outcome.record is not None  # Solo: never dropped
            await self._taken(inv.worker, round_num, outcome.record, reply)

    async def _keep_leases(self, invocation_ids: Sequence[str]) -> None:
        """Extend the leases on a parallel round's turns while their models run."""
        while True:
            await asyncio.sleep(LEASE_S / 3)
            for inv_id in invocation_ids:
                with contextlib.suppress(StoreError):
                    await self.store.heartbeat(self.board_id, inv_id, owner=self.owner, lease_s=LEASE_S)

    async def _drop(self, inv: Invocation, round_num: int, reply: WorkerReply) -> None:
        """Log a parallel turn the run cannot commit (it halted first): an action record that
        completes the turn and carries its model's usage, so the spend stays in the log."""
        model = reply.diagnostics.get("model")
        meta: dict[str, JSON] = {EVENT_META: TURN_DROPPED, ROUND_META: round_num, PARALLEL_META: True}
        if isinstance(model, str):
            meta[MODEL_META] = model
        why = self._halted() or ""

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: {inv.worker}'s turn dropped: {why}"[:PREVIEW],
                worker=inv.worker,
                invocation=inv.id,
                meta=meta,
                usage=reply.usage,
            )

        await self.transact(prepare, lambda _d, _p: AgendaChanges(complete=(inv.id,)))
        await self.emit(REJECTED, round=round_num, agent=inv.worker, stage="dropped", reason=why[:PREVIEW], error=None)
