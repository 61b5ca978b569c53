"""The end of a run: the decider's turn, the run-end record and the result it adds up to."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.record import CIRCUIT_KIND, RUN_KIND
from ..runtime.boards import status_for
from ..runtime.events import RUN_ENDED
from ..runtime.result import cost_by, cost_of, price_table, usage_by
from ..scheduling.invocation import Invocation
from ..status import BUDGET_PREFIX
from ..vocabulary import ONCE_KEY, OUTCOME_REJECTED, PROPOSAL_KIND
from ._control import DECIDE_INVOCATION, Tally, decide_invocation
from ._events import BUDGET_EXCEEDED, DECIDER_FAILED, HALTED, PREVIEW, REJECTED
from ._result import BudgetStatus, TeamResult, typed_text
from ._run_base import _RunBase


class _RunEnd(_RunBase):
    """A run's decider, its early stops and its ``TeamResult``."""

    async def _decide(self) -> str:
        """The decider's turn (its invocation pushed on the agenda, claimed, one step); on a
        resumed run whose answer is already committed, that answer."""
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        typed = self.team.answer_type
        if isinstance(answer, str) or (typed is not None and answer is not None):
            return answer if isinstance(answer, str) else typed_text(answer)
        inv = self.session.agenda.get(DECIDE_INVOCATION)
        if inv is None:
            inv = decide_invocation(self.rounds, self.session.scheduler.allocate_order())
            if typed is not None:
                # A reply that does not fit the decider's output_type is retried with the
                # kernel's reason (the step engine's retry path), not answered by a fallback.
                inv = dataclasses.replace(inv, meta={k: v for k, v in inv.meta.items() if k != ONCE_KEY})
            await self.store.push_invocations(self.board_id, [inv])
            self.session.agenda.push(inv)
        if typed is not None:
            return await self._decide_typed(inv)
        rec, reply = await self._step(inv)
        if reply.error is not None:
            await self.emit(DECIDER_FAILED, error=reply.error[:PREVIEW])
        ops = reply.patch if isinstance(reply.patch, list) else []
        value = ops[0].get("value") if ops and isinstance(ops[0], dict) else None
        final = value if isinstance(value, str) else ""
        if rec.outcome == OUTCOME_REJECTED:
            await self.emit(REJECTED, round=None, agent=self.decider.name, stage=rec.stage, reason=rec.reason)
        return final

    async def _decide_typed(self, inv: Invocation) -> str:
        """A typed decider's turns: each rejected reply re-queued with the kernel's reason until
        one is accepted or the attempts run out (``decider_failed`` then, with the last reason);
        the committed answer's JSON text, or ""."""
        while True:
            rec, reply = await self._step(inv)
            if rec.outcome == OUTCOME_REJECTED:
                await self.emit(REJECTED, round=None, agent=self.decider.name, stage=rec.stage, reason=rec.reason)
            again = self._requeued(inv.id) if rec.outcome == OUTCOME_REJECTED else None
            if again is None:
                break
            inv = again
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        if answer is None:
            why = reply.error or f"{rec.stage}: {rec.reason or ''}"
            await self.emit(DECIDER_FAILED, error=why[:PREVIEW])
            return ""
        return typed_text(answer)

    async def _interrupt(self, round_num: int, status: BudgetStatus) -> TeamResult:
        reason = f"{BUDGET_PREFIX}{status.reason}"
        spent = self.spend()
        await self.emit(
            BUDGET_EXCEEDED,
            round=round_num,
            reason=status.reason,
            tokens=spent.total_tokens,
            calls=spent.calls,
        )
        return await self._finish(reason, "", interrupted=True)

    async def _stop(self, reason: str) -> TeamResult:
        """End the run early: the circuit policy halted it, or an entry awaits approval."""
        halt = next((r for r in reversed(self.session.history) if r.kind == CIRCUIT_KIND), None)
        details = halt.meta.get("details") if halt is not None and reason.startswith("circuit") else None
        trigger = details.get("trigger") if isinstance(details, dict) else None
        await self.emit(HALTED, round=self.rounds, reason=reason[:PREVIEW], trigger=trigger)
        return await self._finish(reason, "", interrupted=True)

    async def _finish(self, end_reason: str, final: str, *, interrupted: bool = False) -> TeamResult:
        meta: dict[str, JSON] = {
            "event": RUN_ENDED,
            "rounds": self.rounds,
            "final": final[:PREVIEW],
            "interrupted": interrupted,
        }
        if self.guard is not None:
            meta["ledgers"] = list(await self.guard.lines())
        await self.transact(lambda: self.kernel.action(RUN_KIND, end_reason, meta=meta))
        await self.store.set_status(self.board_id, status_for(end_reason), end_reason)
        return await self._result(end_reason, final, interrupted=interrupted)

    async def _result(self, end_reason: str, final: str, *, interrupted: bool) -> TeamResult:
        # The session noted every record of the board (loaded, appended, or caught up after an
        # approval appended beside the engine): no decoding of the whole log from the store.
        records = self.session.history
        proposals = [r for r in records if r.kind == PROPOSAL_KIND]
        table = price_table(self.session.blueprint.spec.limits.prices)
        state = self.kernel.state
        team = self.team
        output: Any = final
        text: str | None = None
        if team.answer_type is not None:
            answer = state.get("answer") if isinstance(state, dict) else None
            output = team.answer_type.instance(answer) if answer is not None else None
            text = final
        stored = state.get("outputs") if isinstance(state, dict) else None
        outputs = {
            n: [o.instance(v) for v in stored.get(n, [])]
            for n, o in team.outputs.items()
            if isinstance(stored, dict) and isinstance(stored.get(n), list)
        }
        return TeamResult(
            output=output,
            text=text,
            outputs=outputs,
            board_id=self.board_id,
            end_reason=end_reason,
            rounds=self.rounds,
            state=self.kernel.state,
            interrupted=interrupted,
            interruption_reason=end_reason if interrupted else None,
            usage=usage_by(records, "component"),
            usage_by_agent=usage_by(proposals, "worker"),
            turns=Tally().fold(records).calls,
            cost_usd=cost_of(records, table),
            cost_by_component=cost_by(records, "component", table),
            cost_by_agent=cost_by(proposals, "worker", table),
        )
