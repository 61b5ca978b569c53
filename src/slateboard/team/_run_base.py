"""One run's plumbing: its events, the board it reads, the appends and steps it takes."""

from __future__ import annotations

import asyncio
import inspect
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any, Protocol

from ..blueprint.output_type import OutputType
from ..kernel.canonical import JSON
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.record import CIRCUIT_KIND, Record, Usage
from ..models import Model
from ..runtime.boards import RunnerError
from ..runtime.events import RunEvent
from ..runtime.ledger import SpendGuard
from ..runtime.session import BoardSession
from ..runtime.step import Transacted
from ..scheduling.invocation import Invocation
from ..stores.base import Store
from ..vocabulary import CONTROL_META, ONCE_KEY, ROUND_META, EventKind
from ..workers.base import WorkerReply
from ._agent import DeciderWorker
from ._agent_spec import Agent
from ._board import SYSTEM_AUTHOR, SYSTEM_WORKER, make_entry
from ._control import EchoTail, Tally, TeamControl, echo_check, round_id
from ._events import EventCallback
from ._quarantine import Sanitiser
from ._result import ApprovalPolicy, BudgetPolicy, Spend


class TeamSettings(Protocol):
    """What a run reads of its ``Team`` (the run depends on this, not on the class, so the
    team's module can import the run without a cycle)."""

    @property
    def agents(self) -> dict[str, Agent]: ...
    @property
    def coordinator(self) -> Agent | None: ...
    @property
    def decider(self) -> Agent | None: ...
    @property
    def coordinator_instructions(self) -> str: ...
    @property
    def decider_instructions(self) -> str | None: ...
    @property
    def constrain_coordinator(self) -> bool: ...
    @property
    def max_rounds(self) -> int: ...
    @property
    def max_repeats(self) -> int: ...
    @property
    def parallel(self) -> bool: ...
    @property
    def view_budget(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def clock(self) -> Callable[[], datetime]: ...
    @property
    def budget(self) -> BudgetPolicy: ...
    @property
    def outputs(self) -> dict[str, OutputType[Any]]: ...
    @property
    def answer_type(self) -> OutputType[Any] | None: ...
    @property
    def untrusted(self) -> tuple[str, ...]: ...
    @property
    def sanitiser(self) -> Sanitiser | None: ...
    @property
    def approval(self) -> ApprovalPolicy | None: ...
    def model_for(self, agent: Agent) -> Model:
        """The model ``agent`` calls (its own, else the team's)."""
        ...

    def board_spec(self, prompt: str | None = None, *, at: datetime | None = None) -> dict[str, Any]:
        """The board's blueprint spec for ``prompt``."""
        ...


LEASE_S = 60.0
"""The lease a run holds on the turn it is taking (extended while the agent's model runs)."""


class _RunBase:
    """What every part of a run shares: the team, the store and the board's session, its event
    sinks, and the steps each part takes through the session (one append under the session's
    lock, one claimed invocation through ``StepEngine.step``, one system entry). The parts are
    layered on it: ``_RunGates`` (quarantine, approvals), ``_RunParallel`` (parallel rounds),
    ``_RunEnd`` (decider, end, result) and ``_BlackboardRun`` (opening, the rounds)."""

    def __init__(
        self,
        team: TeamSettings,
        store: Store,
        listeners: list[asyncio.Queue[RunEvent | None]],
        callbacks: list[EventCallback],
    ) -> None:
        self.team = team
        self.store = store
        self.listeners = listeners
        self.callbacks = callbacks
        self.board_id = ""
        self.started = time.monotonic()
        self.owner = f"team-{uuid.uuid4().hex[:8]}"
        self.rounds = 0
        self.tally = Tally()
        self.takeover: set[str] = set()
        """Invocations a dead run had claimed (``resume``): this run takes their lease over."""
        self.session: BoardSession
        self.control: TeamControl
        self.decider: DeciderWorker
        self.echo: EchoTail
        self.guard: SpendGuard | None = None
        """The run's spend guard (``Budget(max_cost=...)`` or ``ledgers``), else None."""

    # -- plumbing -----------------------------------------------------------------------------
    async def emit(self, kind: EventKind, /, **data: JSON) -> None:
        event = RunEvent(kind, self.board_id, data)
        for q in self.listeners:
            q.put_nowait(event)
        for cb in self.callbacks:
            out = cb(event)
            if inspect.isawaitable(out):
                await out

    def spend(self) -> Spend:
        """What the board's log adds up to (the same fold for a fresh and a resumed run)."""
        t = self.tally.fold(self.session.history)
        return Spend(t.rounds, t.calls, t.tokens_in, t.tokens_out, time.monotonic() - self.started)

    @property
    def kernel(self) -> Kernel:
        return self.session.kernel

    def public(self) -> list[Any]:
        """The committed public board: the kernel state's own list, not a copy (a round must
        not cost O(board)); read it, count it or slice its tail, never change it."""
        state = self.kernel.state
        assert isinstance(state, dict) and isinstance(state["public"], list)
        return state["public"]

    async def transact(self, prepare: Callable[[], Decision | None], changes: Any = None) -> Record:
        """One append through the engine (compare-and-set, then commit or abort)."""
        async with self.session.lock:
            done = await self.session.transact(prepare, changes)
        assert isinstance(done, Transacted)  # Solo: nothing is ever dropped
        return done.record

    def _halted(self) -> str | None:
        """Why the board cannot go on: a circuit halt, or a held entry awaiting approval."""
        return self.session.accounts.halted

    async def _claim(self, inv: Invocation) -> Invocation:
        """Lease ``inv`` from the store (taking over a dead run's lease when resuming)."""
        now = time.time() + LEASE_S if inv.id in self.takeover else None
        self.takeover.discard(inv.id)
        claim = await self.store.claim(self.board_id, owner=self.owner, lease_s=LEASE_S, invocation_id=inv.id, now=now)
        if claim is None:
            raise RunnerError(
                f"board {self.board_id}: invocation {inv.id} of {inv.worker} could not be claimed "
                "(another process holds its lease: is this board run elsewhere?)"
            )
        return self.session.adopt(claim.invocation) or claim.invocation

    async def _step(self, inv: Invocation) -> tuple[Record, WorkerReply]:
        """Claim and run one invocation through the step engine (then the circuit policy)."""
        claimed = await self._claim(inv)
        meta = {k: v for k, v in claimed.meta.items() if k != ONCE_KEY}
        outcome = await self.session.step(
            claimed, str(meta.get(CONTROL_META, claimed.id)), owner=self.owner, lease_s=LEASE_S, meta=meta
        )
        assert outcome.record is not None and outcome.reply is not None  # Solo: never dropped
        return outcome.record, outcome.reply

    def _requeued(self, invocation_id: str) -> Invocation | None:
        """The invocation ``invocation_id`` when the step engine re-queued it (a rejected typed
        reply) and the board can go on; else None."""
        again = self.session.agenda.get(invocation_id)
        if again is None or self._halted() is not None:
            return None
        return again if any(i.id == invocation_id for i in self.session.agenda.eligible()) else None

    async def _echo(self) -> None:
        """The classic board's stuck detector (``echo_check``) after a contribution: a halt is
        logged as a ``circuit`` record, like the circuit policy's, and ends the run."""
        spec = self.session.blueprint.spec.circuit
        tail = self.echo.sync(self.public())  # what echo_check reads of the board, kept incrementally
        action = echo_check(tail, repeats=self.team.max_repeats, alternations=spec.max_alternations)
        if action is None or self.session.accounts.halted:
            return
        await self.transact(
            lambda: self.kernel.action(CIRCUIT_KIND, action.reason, worker=action.worker, meta=action.to_record_meta())
        )

    # -- system entries, the decider, the end -------------------------------------------------
    async def _post_error(self, round_num: int, message: str) -> None:
        event: dict[str, JSON] = {"kind": "coordinator", "round": round_num}
        await self._post_system(round_num, message, kind="error", event=event, meta={ROUND_META: round_num})

    async def _post_system(
        self, round_num: int, content: str, *, kind: str, event: dict[str, JSON], meta: dict[str, JSON]
    ) -> Record:
        """Append one ``system`` entry (an error, a released quarantined entry) to the public
        board, signed by the system worker, through the kernel: the record it logged."""
        entry_id = f"e{len(self.public()) + 1}"
        entry = make_entry(entry_id, SYSTEM_AUTHOR, content, kind=kind, at=self.team.clock())

        def prepare() -> Decision:
            return self.kernel.prepare(
                Proposal(
                    SYSTEM_WORKER,
                    [
                        {"op": "add", "path": "/public/-", "value": entry},
                        {"op": "add", "path": f"/signatures/{SYSTEM_AUTHOR}", "value": entry_id},
                    ],
                    viewed_version=self.kernel.version,
                    invocation=round_id(round_num),
                    event=event,
                    usage=Usage(component="system"),
                    meta=meta,
                )
            )

        return await self.transact(prepare)


def _quiet(kind: EventKind, /, **data: JSON) -> None:
    """The engine's run events are not the team's (it emits the ``blackboard.*`` ones)."""
    return None
