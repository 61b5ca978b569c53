"""One run of a team's board: opening it, starting or resuming, and the rounds.

``_BlackboardRun`` is the class ``Team`` drives; its parts live beside it, each a layer over
``_run_base._RunBase`` (the shared plumbing): ``_run_gates`` (what follows a decided turn:
quarantine, approvals), ``_run_parallel`` (``parallel=True`` rounds) and ``_run_end`` (the
decider, the run-end record, the ``TeamResult``).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Sequence

from ..errors import SlateboardError
from ..kernel.canonical import JSON
from ..kernel.kernel import Decision
from ..kernel.record import CONTROL_KIND
from ..runtime.boards import waiting_approvals
from ..runtime.ledger import board_spend_limits, spend_meta
from ..runtime.result import cost_of, price_table
from ..runtime.session import BoardSession
from ..scheduling.invocation import Invocation
from ..status import BUDGET_PREFIX, MAX_ROUNDS, ROUNDS_PLAYED, TERMINATED
from ..stores.base import AgendaChanges
from ..vocabulary import BOARD_FAILED, BOARD_RUNNING, INVOCATION_CLAIMED, ONCE_KEY, RAISED_PREFIX, RESUMED
from ..workers.base import Worker
from ..workers.parse import reply_fault
from ._agent import AgentWorker, DeciderWorker
from ._board import compile_blackboard
from ._control import (
    CONTROL_WORKER,
    COORDINATOR_DECIDED,
    DECIDE_INVOCATION,
    Choice,
    EchoTail,
    Progress,
    TeamControl,
    round_id,
    round_invocation,
)
from ._events import COMPLETED, INVOKING, NO_CONTRIBUTOR, PREVIEW, STARTED, UNKNOWN_AGENT
from ._quarantine import QuarantineWorker
from ._render import bounded_board
from ._result import Budget, BudgetStatus, ResumeError, TeamResult, typed_text
from ._run_base import _quiet
from ._run_end import _RunEnd
from ._run_parallel import _RunParallel


class RoundsYielded(SlateboardError):
    """A run with a round limit (``_BlackboardRun.round_limit``) stopped before starting the
    round after its last one: the board is as a finished round leaves it, and the next resume
    goes on from there. Not a failure (the Temporal engine plays a team one round per activity)."""


class _BlackboardRun(_RunParallel, _RunEnd):
    """One run (or resumed run) of a team's board, driven on a ``BoardSession``'s step engine.

    Each round: the budget and the circuit policy's halt are checked; ``TeamControl`` decides;
    the decision is logged as a ``control`` record whose append pushes the chosen agent's
    invocation on the board's agenda; the invocation is claimed from the store (a lease) and
    taken through ``StepEngine.step`` (view, worker, kernel, one append that completes it,
    commit) followed by the circuit policy, as in every Runner step."""

    round_limit: int | None = None
    """At most this many new rounds are started (after finishing what a dead run left), then
    ``RoundsYielded`` is raised; None: no limit (a run in one process). A run with a limit is
    driven by an engine that decides what a failure ends, so ``_guarded`` leaves its status."""

    async def open(self) -> None:
        """Load the board into a session whose workers are the team's agents and decider."""
        team = self.team
        state: Callable[[], JSON] = lambda: self.session.kernel.state  # noqa: E731
        workers: dict[str, Worker] = {
            n: AgentWorker(n, a, team.model_for(a), state=state, clock=team.clock) for n, a in team.agents.items()
        }
        self.decider = DeciderWorker(
            team.decider,
            team.model_for(team.decider) if team.decider is not None else None,
            instructions=team.decider_instructions,
            state=state,
        )
        agent_workers = [w for w in workers.values() if isinstance(w, AgentWorker)]
        for n in team.untrusted:
            workers[n] = QuarantineWorker(workers[n], state)
        workers[self.decider.name] = self.decider
        # serve=(): build no worker from the blueprint, use the team's; no engine events (the
        # run emits the blackboard.* events); no worker timeout (the seed has none).
        self.session = BoardSession(
            self.store, self.board_id, workers=workers, serve=(), emit=_quiet, compile=compile_blackboard
        )
        self.session.worker_timeout = None
        await self.session.load()
        self.echo = EchoTail(
            repeats=team.max_repeats, alternations=self.session.blueprint.spec.circuit.max_alternations
        )
        self.control = TeamControl(
            list(team.agents),
            {n: a.instructions for n, a in team.agents.items()},
            coordinator=team.coordinator,
            model=team.model_for(team.coordinator) if team.coordinator is not None else None,
            instructions=team.coordinator_instructions,
            constrain=team.constrain_coordinator,
        )
        limits = team.budget.spend_limits() if isinstance(team.budget, Budget) else None
        # issue 45: a board's recorded max_cost holds on every run of it, whatever this Budget says
        limits = await board_spend_limits(self.store, (await self.store.board_info(self.board_id)).meta, limits)
        if limits is not None:
            # issue 33: every model call of the run reserves first; a resumed run's cap counts
            # what the board's log already cost (unknown: nothing; an unpriced model is refused)
            table = price_table(self.session.blueprint.spec.limits.prices)
            self.guard = await limits.guard(table, spent=cost_of(self.session.history, table) or 0.0)
            members: list[AgentWorker | DeciderWorker | TeamControl] = [*agent_workers, self.decider, self.control]
            for member in members:
                member.spend = self.guard

    # -- starting and resuming ----------------------------------------------------------------
    async def start(self, prompt: str) -> TeamResult:
        await self.create(prompt)
        return await self._guarded(Progress(), resumed=False)

    async def create(self, prompt: str, meta: dict[str, JSON] | None = None) -> str:
        """Create the run's board for ``prompt`` (``meta`` added to its meta) and return its id."""
        team = self.team
        compiled = compile_blackboard(team.board_spec(prompt, at=team.clock()))
        info = await self.store.create_board(
            compiled.spec.to_json(),
            compiled.initial_state(),
            name=team.name,
            meta={
                "architecture": "blackboard",
                "agents": list(team.agents),
                # issue 45: the cap is part of the board (its shared ledgers are the caller's objects)
                **spend_meta(team.budget.max_cost if isinstance(team.budget, Budget) else None, []),
                **(meta or {}),
            },
        )
        self.board_id = info.board_id
        return self.board_id

    async def resume(self, board_id: str) -> TeamResult:
        team = self.team
        self.board_id = board_id
        info = await self.store.board_info(board_id)
        agents = info.meta.get("agents") if isinstance(info.meta, dict) else None
        if info.meta.get("architecture") != "blackboard" or agents != list(team.agents):
            raise ResumeError(
                f"board {board_id} is not a blackboard of this team: its agents are {agents!r}, "
                f"the team's are {list(team.agents)!r}"
            )
        await self.open()
        history = self.session.history
        # A run paused at a held entry goes on when this team has a policy to decide it.
        decidable = team.approval is not None and bool(waiting_approvals(history))
        if self.session.accounts.ended_at_head and not decidable:
            # The run ended (its last record is the run-end record): nothing to redo (D4/D16).
            self.rounds = self.spend().rounds
            run_meta = history[-1].meta
            final = run_meta.get("final")
            state = self.kernel.state
            answer = state.get("answer") if isinstance(state, dict) else None
            if answer is not None and not isinstance(answer, str):
                final = typed_text(answer)
            return await self._result(
                history[-1].reason or "",
                answer if isinstance(answer, str) else (final if isinstance(final, str) else ""),
                interrupted=run_meta.get("interrupted") is True,
            )
        claimed = await self.store.agenda(board_id, (INVOCATION_CLAIMED,))
        self.takeover = {i.id for i in claimed}
        if info.status != BOARD_RUNNING:
            await self.store.set_status(board_id, BOARD_RUNNING, RESUMED)
        state = self.kernel.state
        answer = state.get("answer") if isinstance(state, dict) else None
        return await self._guarded(Progress.of(history, answer), resumed=True)

    async def _guarded(self, progress: Progress, *, resumed: bool) -> TeamResult:
        try:
            if not resumed:
                await self.open()
            return await self._run(progress, resumed=resumed)
        except RoundsYielded:
            raise
        except BaseException:
            if self.round_limit is not None:
                raise  # the engine's: it retries, interrupts or fails the board itself
            with contextlib.suppress(Exception):
                await self.store.set_status(self.board_id, BOARD_FAILED, f"{RAISED_PREFIX} an exception")
            raise

    # -- the rounds ---------------------------------------------------------------------------
    async def _run(self, progress: Progress, *, resumed: bool) -> TeamResult:
        team = self.team
        names = list(team.agents)
        started: dict[str, JSON] = {
            "agents": list(names),
            "has_coordinator": team.coordinator is not None,
            "has_decider": team.decider is not None,
        }
        if resumed:
            started.update(resumed=True, round=progress.rounds)
        await self.emit(STARTED, **started)
        self.rounds = progress.rounds
        # Round-robin (no coordinator) ends by playing its rounds; a coordinator that never
        # terminated was stopped by the max_rounds limit.
        end_reason = TERMINATED if progress.terminated else MAX_ROUNDS if team.coordinator else ROUNDS_PLAYED
        # A resumed run first finishes what the dead one left: an approved or held entry, the
        # error entry of an unknown agent's round, the turn its last decision pushed.
        stop = await self._settle_approvals()
        if stop is not None:
            return await self._stop(stop)
        if resumed:
            await self._unsanitised(progress.rounds)
        last_agent = progress.last.get("next_agent")
        if not progress.error_posted and isinstance(last_agent, str) and last_agent not in team.agents:
            await self._post_error(progress.rounds, f"Coordinator picked unknown agent {last_agent!r}; skipping.")
        pending = [i for i in self.session.agenda.eligible() if i.worker in team.agents and i.rule == "coordinator"]
        for inv in pending:
            await self.emit(INVOKING, round=progress.rounds, agent=inv.worker)
            await self._turn(inv, progress.rounds)
        if not progress.terminated and not progress.decided:
            for round_num in range(progress.rounds + 1, team.max_rounds + 1):
                if self.round_limit is not None and round_num > progress.rounds + self.round_limit:
                    raise RoundsYielded(f"board {self.board_id}: yielded before round {round_num}")
                stop = self._halted()
                if stop is not None:
                    return await self._stop(stop)
                if self.guard is not None and self.guard.exhausted is not None:
                    return await self._interrupt(round_num, BudgetStatus(True, self.guard.exhausted))
                status = await team.budget.allows_step(self.spend())
                if status.blocked:
                    return await self._interrupt(round_num, status)
                self.rounds = round_num
                if team.parallel:
                    await self._parallel_round(round_num)
                    continue
                choice = await self._coordinate(round_num)
                decision = choice.decision
                await self.emit(
                    COORDINATOR_DECIDED,
                    round=round_num,
                    terminate=decision.terminate,
                    next_agent=decision.next_agent,
                    raw=decision.raw[:PREVIEW],
                )
                if decision.terminate:
                    end_reason = TERMINATED
                    break
                if decision.next_agent is None:
                    why = (
                        (reply_fault(decision.raw) or "no JSON decision could be read")
                        if not decision.parsed
                        else "the coordinator named no agent"
                    )
                    await self.emit(NO_CONTRIBUTOR, round=round_num, reason=why)
                    continue
                if decision.next_agent not in team.agents:
                    await self._post_error(
                        round_num, f"Coordinator picked unknown agent {decision.next_agent!r}; skipping."
                    )
                    await self.emit(UNKNOWN_AGENT, round=round_num, agent_name=decision.next_agent)
                    continue
                await self.emit(INVOKING, round=round_num, agent=decision.next_agent)
                turn = self.session.agenda.get(round_id(round_num))
                assert turn is not None  # pushed with the control record
                await self._turn(turn, round_num)
        stop = self._halted()
        if stop is not None:
            return await self._stop(stop)
        if self.guard is not None and self.guard.exhausted is not None:
            return await self._interrupt(self.rounds, BudgetStatus(True, self.guard.exhausted))
        final = await self._decide()
        await self.emit(COMPLETED, final=final[:PREVIEW], board_size=len(self.public()))
        if self.guard is not None and self.guard.exhausted is not None:
            # the decider's call was refused: the board has the fallback answer, the cap ended it
            return await self._finish(f"{BUDGET_PREFIX}{self.guard.exhausted}", final, interrupted=True)
        return await self._finish(end_reason, final)

    async def _coordinate(self, round_num: int) -> Choice:
        """Ask the control unit, then log its decision: one ``control`` record whose append also
        pushes the chosen agent's turn on the agenda (and cancels leftover work: a turn the
        circuit policy queued for an agent carries its feedback into that agent's next turn)."""
        choice = await self.control.choose(round_num, lambda: bounded_board(self.public(), self.team.view_budget))
        agent = choice.decision.next_agent
        leftovers = [i for i in self.session.agenda.eligible() if i.id != DECIDE_INVOCATION]
        feedback = next((i.feedback for i in leftovers if i.worker == agent and i.feedback), None)
        turn = (
            round_invocation(choice, round_num, self.session.scheduler.allocate_order(), feedback=feedback)
            if agent is not None and agent in self.team.agents and not choice.decision.terminate
            else None
        )
        if turn is not None and turn.worker in self.team.outputs:
            # A typed reply that does not fit its schema is retried with the kernel's reason,
            # through the step engine's retry path, within the turn (see _turn).
            turn = dataclasses.replace(turn, meta={k: v for k, v in turn.meta.items() if k != ONCE_KEY})

        def prepare() -> Decision:
            return self.kernel.action(
                CONTROL_KIND,
                f"round {round_num}: {choice.reason}",
                worker=CONTROL_WORKER,
                invocation=round_id(round_num),
                meta=choice.record_meta(round_num),
                usage=choice.usage,
            )

        def changes(_d: Decision, _pushed: Sequence[Invocation]) -> AgendaChanges:
            return AgendaChanges(cancel=[i.id for i in leftovers], push=(turn,) if turn is not None else ())

        await self.transact(prepare, changes)
        return choice

    async def _turn(self, inv: Invocation, round_num: int) -> None:
        """The chosen agent's turn: one step, then its events (and the approval, when held). A
        typed agent's rejected reply is re-queued by the step engine with the rejection as
        feedback (up to the circuit's ``max_consecutive_invalid`` attempts): taken again here."""
        while True:
            rec, reply = await self._step(inv)
            await self._taken(inv.worker, round_num, rec, reply)
            again = self._requeued(inv.id)
            if again is None:
                return
            inv = again
