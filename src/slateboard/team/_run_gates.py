"""What follows a decided turn: its events, the quarantine's sanitiser and the approval policy."""

from __future__ import annotations

import copy
import inspect
import json
import logging
from collections.abc import Sequence
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.pointer import escape_token
from ..kernel.record import QUARANTINE_KIND, Record
from ..redaction import redact
from ..runtime.approval import Held, approve, refuse
from ..runtime.boards import waiting_approvals
from ..vocabulary import (
    APPROVAL_DECISION_META,
    APPROVAL_KIND,
    APPROVAL_RECORD_META,
    APPROVED,
    EVENT_META,
    OUTCOME_ACCEPTED,
    OUTCOME_HELD,
    ROUND_META,
)
from ..workers.base import WorkerReply
from ._board import SYSTEM_WORKER
from ._control import round_id
from ._events import APPROVAL, CONTRIBUTION, PREVIEW, QUARANTINED, REJECTED, RELEASED, WITHHELD
from ._quarantine import RELEASED_KIND
from ._result import ApprovalRequest
from ._run_base import _RunBase

log = logging.getLogger("slateboard.team")


class _RunGates(_RunBase):
    """A run's gates on what reaches the public board: quarantine and approvals."""

    async def _taken(self, agent: str, round_num: int, rec: Record, reply: WorkerReply) -> None:
        """What follows a decided turn: its events, the stuck detector, the approval when held."""
        if rec.outcome == OUTCOME_ACCEPTED and agent in self.team.untrusted:
            await self._quarantined(agent, round_num)
        elif rec.outcome == OUTCOME_ACCEPTED:
            entry = self.public()[-1]
            await self.emit(CONTRIBUTION, round=round_num, agent=agent, content=str(entry["content"])[:PREVIEW])
            await self._echo()
        elif rec.outcome == OUTCOME_HELD:
            await self._settle_approvals()
        else:
            await self.emit(
                REJECTED,
                round=round_num,
                agent=agent,
                stage=rec.stage,
                reason=(rec.reason or "")[:PREVIEW],
                error=reply.error,
            )

    # -- quarantine (``untrusted=``; see slateboard.team._quarantine) ---------------------------
    async def _unsanitised(self, round_num: int) -> None:
        """On resume: put to the sanitiser every quarantined entry a dead run committed but did
        not release or withhold (no record names it), so none is silently lost."""
        if self.team.sanitiser is None:
            return
        decided = {
            r.meta.get("quarantined") for r in self.session.history if r.meta.get(EVENT_META) in (RELEASED, WITHHELD)
        }
        state = self.kernel.state
        assert isinstance(state, dict)
        for agent in self.team.untrusted:
            for index in range(len(state["quarantine"][agent])):
                if f"/quarantine/{escape_token(agent)}/{index}" not in decided:
                    await self._quarantined(agent, round_num, index)

    async def _quarantined(self, agent: str, round_num: int, index: int = -1) -> None:
        """An untrusted agent's entry (``index`` in its array; default the last) was committed
        to quarantine: put it to the sanitiser, then release it on the public board (a system
        entry, kind ``released``) or log that it is withheld."""
        state = self.kernel.state
        assert isinstance(state, dict)
        held = state["quarantine"][agent]
        index = index if index >= 0 else len(held) - 1
        entry = dict(held[index])
        where = f"/quarantine/{escape_token(agent)}/{index}"
        await self.emit(QUARANTINED, round=round_num, agent=agent, entry=str(entry.get("id")), path=where)
        sanitiser = self.team.sanitiser
        if sanitiser is None:
            return
        # A sanitiser that raises (or answers something else than text or None) withholds that
        # entry, with its error logged, instead of failing the whole run (issue 29, I9).
        failure: str | None = None
        try:
            released = sanitiser(copy.deepcopy(entry))
            if inspect.isawaitable(released):
                released = await released
            if released is not None and not isinstance(released, str):
                raise TypeError(f"a sanitiser must return a string or None, got {type(released).__name__}")
        except Exception as exc:
            released, failure = None, _failure(exc)
        meta: dict[str, JSON] = {ROUND_META: round_num, "quarantined": where, "agent": agent}
        if released is None:
            why = f"failed ({failure}) and" if failure else ""
            if failure:
                meta["error"] = failure
                log.warning("board %s: the sanitiser failed on %s; withheld: %s", self.board_id, where, failure)
            await self.transact(
                lambda: self.kernel.action(
                    QUARANTINE_KIND,
                    f"round {round_num}: the sanitiser {why} withheld {agent}'s entry at {where}".replace("  ", " "),
                    worker=SYSTEM_WORKER,
                    invocation=round_id(round_num),
                    meta={**meta, "event": WITHHELD},
                )
            )
            await self.emit(WITHHELD, round=round_num, agent=agent, path=where, error=failure)
            return
        rec = await self._post_system(
            round_num,
            released,
            kind=RELEASED_KIND,
            event={"kind": "quarantine", "round": round_num, "path": where},
            meta={**meta, "event": RELEASED},
        )
        if rec.outcome == OUTCOME_HELD:
            # The release changes the public board, which ``approval=`` guards: the approval
            # callback decides it now, as every held entry (issue 29, R10: never a silent pause).
            await self._settle_approvals()
            if self._approved(rec.seq):
                await self.emit(RELEASED, round=round_num, agent=agent, path=where, content=released[:PREVIEW])
        elif rec.outcome == OUTCOME_ACCEPTED:
            await self.emit(RELEASED, round=round_num, agent=agent, path=where, content=released[:PREVIEW])
        else:
            await self.emit(REJECTED, round=round_num, agent=SYSTEM_WORKER, stage=rec.stage, reason=rec.reason)

    def _approved(self, seq: int) -> bool:
        """Whether held record ``seq`` was approved (an ``approval`` record says so)."""
        return any(
            r.kind == APPROVAL_KIND
            and r.meta.get(APPROVAL_RECORD_META) == seq
            and r.meta.get(APPROVAL_DECISION_META) == APPROVED
            for r in self.session.history
        )

    # -- approvals ----------------------------------------------------------------------------
    async def _settle_approvals(self) -> str | None:
        """Decide held entries with the team's ``approval`` callback (``runtime.approval``'s
        approve/refuse: an ``approval`` record each), then commit approved entries as every
        runner does (``BoardSession.approved_first``). Returns why the run must stop (an entry
        still awaits a decision: no callback), else None."""
        session = self.session
        approval = self.team.approval
        for held in waiting_approvals(session.history):
            if approval is None:
                break
            request = _approval_request(self.board_id, held, session.history)
            # A callback that raises refuses that entry (it is withheld, never committed) with
            # the error as the logged note, instead of failing the whole run (issue 29, I9).
            try:
                verdict = approval(request)
                if inspect.isawaitable(verdict):
                    verdict = await verdict
                approved, note = _verdict(verdict)
            except Exception as exc:
                approved, note = False, f"the approval callback failed: {_failure(exc)}"
                log.warning("board %s: record %d withheld: %s", self.board_id, held.seq, note)
            decide = approve if approved else refuse
            await decide(self.store, self.board_id, held.seq, by="approval", note=note)
            await session.refresh()  # the decision was appended beside the engine: catch up
            await self.emit(
                APPROVAL,
                round=request.round,
                agent=held.worker,
                seq=held.seq,
                decision="approved" if approved else "refused",
                note=note,
            )
            if not approved:
                await self.emit(
                    REJECTED,
                    round=request.round,
                    agent=held.worker,
                    stage="approval",
                    reason=f"refused by the approval policy{': ' + note if note else ''}"[:PREVIEW],
                    error=None,
                )
        before = len(self.public())
        waiting = await session.approved_first()
        for entry in self.public()[before:]:
            await self.emit(
                CONTRIBUTION,
                round=self.rounds,
                agent=str(entry.get("author")),
                content=str(entry.get("content"))[:PREVIEW],
            )
        if len(self.public()) > before:
            await self._echo()
        return waiting


def _approval_request(board_id: str, held: Held, records: Sequence[Record]) -> ApprovalRequest:
    """What an approval callback is shown of a held record."""
    rec = next((r for r in records if r.seq == held.seq), None)
    try:
        ops = json.loads(held.patch) if held.patch else []
    except ValueError:
        ops = []
    patch = [op for op in ops if isinstance(op, dict)] if isinstance(ops, list) else []
    entry = next(
        (op.get("value") for op in patch if op.get("path") == "/public/-" and isinstance(op.get("value"), dict)),
        None,
    )
    event = rec.event if rec is not None and isinstance(rec.event, dict) else {}
    round_num = event.get("round")
    return ApprovalRequest(
        board_id=board_id,
        round=round_num if isinstance(round_num, int) else None,
        agent=held.worker,
        seq=held.seq,
        entry=dict(entry) if isinstance(entry, dict) else None,
        patch=patch,
        reason=held.reason,
    )


def _failure(exc: BaseException) -> str:
    """A callback's exception as one short, redacted line for the log and the record."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return redact(text[:300])


def _verdict(value: Any) -> tuple[bool, str]:
    """An approval callback's answer: a bool, or ``(bool, note)``."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool):
        return value[0], str(value[1] or "")
    if isinstance(value, bool):
        return value, ""
    raise TypeError(f"an approval callback must return a bool or (bool, note), got {type(value).__name__}")
