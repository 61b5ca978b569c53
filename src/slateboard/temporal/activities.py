"""The board workflow's activities: where a step touches the world.

``plan`` catches up with the board's log, commits approved patches, ends the board when it must
end, and otherwise asks the board's control unit which invocation runs next and claims it in the
store; ``propose`` runs that invocation's worker (heartbeating while it runs) and returns the
kernel proposal; ``commit`` decides the proposal with the kernel and appends it through the
store's compare-and-set, then settles the board. Each activity starts by catching up with the
store, so any worker process can run any of them: a board's session is only a cache of its log.

Retries are safe: a ``commit`` whose first attempt appended finds its invocation completed in
the log and appends nothing (and the store refuses a second commit of one invocation anyway:
its idempotency key is spent); a ``plan`` retried after it claimed finds the claim and runs it.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from .. import __version__
from ..blueprint.compile import BlueprintError
from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.kernel import Proposal
from ..kernel.record import Usage
from ..models import Model
from ..models.errors import ModelConfigError
from ..redaction import redact
from ..runtime.board_cache import BoardSessions, commit_lines
from ..runtime.boards import RunnerError, board_result, status_for
from ..runtime.children import ChildRun, ensure_child
from ..runtime.create import create_board
from ..runtime.result import RunResult
from ..runtime.session import BoardSession
from ..runtime.step import Shared
from ..runtime.subboards import SubBoardWorker
from ..runtime.timers import fire_due, wait_s
from ..scheduling.control import AgendaOrder, restore_control
from ..scheduling.invocation import Invocation
from ..status import AGENDA_EMPTY, INTERRUPTED
from ..stores.base import BoardNotFound, LeaseLost, Store, StoreError
from ..vocabulary import BOARD_FAILED, BOARD_RUNNING
from ..workers.base import WorkerConfigError
from ._names import COMMIT, ENGINE_META, FAIL, INTERRUPT, PLAN, PROPOSE, UNUSABLE, BoardStart
from .client import stored_start

log = logging.getLogger("slateboard.temporal")

__all__ = ["BoardActivities", "Orchestrated", "proposal_from_json", "proposal_to_json"]

CLAIM_LEASE_S = 3600.0
"""How long a plan's claim holds in the store. Temporal, not the lease, decides who runs the
step (retries move it to a live worker under the same claim); the lease only keeps runner
processes and local runs off the invocation, and a cancelled workflow gives it back at once."""


class ReadBack:
    """The ``ChildRunner`` of a board on the engine: its children ran as child workflows before
    the sub-board worker proposes, so here each is only read back from the store; a child that
    has not ended is a failed child (the parent's rejection names it)."""

    async def run_child(self, store: Store, child: ChildRun) -> RunResult:
        """The ended child's result."""
        info = await store.board_info(child.child_id)
        if info.status == BOARD_RUNNING:
            raise RunnerError(f"child board {child.child_id} has not ended (its workflow stopped first)")
        return await board_result(store, child.child_id)


class Orchestrated(Shared):
    """The concurrency strategy of a board driven by its workflow: one step at a time, run by
    whichever worker process Temporal picks. Like ``Shared`` it catches up and decides again
    after a lost compare-and-set (a human's approval appends too) and drops a commit the store
    refuses (a retried activity whose first attempt committed); unlike it, a run-end record
    does not stop appends: after an approval the board runs on, as a resumed ``Runner`` does."""

    def ended(self, accounts: Any) -> str | None:
        """Never: the workflow decides when the board ends (``plan``)."""
        return None


def proposal_to_json(p: Proposal) -> dict[str, JSON]:
    """A proposal as activity-result JSON (raw bytes of a reply travel base64-encoded)."""
    patch: JSON
    if isinstance(p.patch, bytes):
        kind, patch = "bytes", base64.b64encode(p.patch).decode("ascii")
    else:
        kind, patch = ("text" if isinstance(p.patch, str) else "ops"), p.patch
    return {
        "worker": p.worker,
        "kind": kind,
        "patch": patch,
        "viewed_version": p.viewed_version,
        "invocation": p.invocation,
        "event": p.event,
        "view_hash": p.view_hash,
        "usage": p.usage.to_json(),
        "meta": p.meta,
    }


def proposal_from_json(d: Mapping[str, Any]) -> Proposal:
    """The proposal ``proposal_to_json`` wrote."""
    patch = d["patch"]
    if d.get("kind") == "bytes":
        patch = base64.b64decode(patch)
    viewed = d.get("viewed_version")
    return Proposal(
        worker=str(d["worker"]),
        patch=patch,
        viewed_version=viewed if isinstance(viewed, int) else None,
        invocation=d.get("invocation"),
        event=d.get("event"),
        view_hash=d.get("view_hash"),
        usage=Usage.from_json(d.get("usage")),
        meta=dict(d.get("meta") or {}),
    )


def _unusable(message: str) -> ApplicationError:
    """The error of an activity that can never succeed here: one line, at most 1,000 characters,
    with every URL password and registered secret masked (it is kept in Temporal's history, the
    board's status and the workers' logs; a worker's store URL may carry a password)."""
    return ApplicationError(redact(" ".join(message.split())[:1000]), type=UNUSABLE, non_retryable=True)


class BoardActivities:
    """The activities one Temporal worker process serves for every board of ``store``.

    ``model`` overrides every board's recorded model; ``functions`` are function workers by
    name or reference; ``import_blueprint_dirs`` imports function workers from the directory a
    board's blueprint was submitted from (as ``slateboard worker`` does). ``log_line`` receives
    one line per commit and per board end. Boards' sessions are cached (``max_sessions``)."""

    def __init__(
        self,
        store: Store,
        *,
        model: Model | str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        worker_names: Sequence[str] | None = None,
        max_sessions: int = 256,
        import_blueprint_dirs: bool = False,
        log_line: Callable[[str], None] | None = None,
        engine_meta: Mapping[str, JSON] | None = None,
    ) -> None:
        self.store = store
        self.log_line = log_line or (lambda line: log.info("%s", line))
        self.sessions = BoardSessions(
            store,
            Orchestrated,
            model=model,
            functions=functions,
            worker_names=worker_names,
            max_sessions=max_sessions,
            import_blueprint_dirs=import_blueprint_dirs,
            emit_for=lambda board_id: commit_lines(board_id, self.log_line),
            children=ReadBack(),
        )
        self.engine_meta: dict[str, JSON] = dict(engine_meta or {})
        """What children record of the engine (so approve and cancel reach their workflows)."""

    def all(self) -> list[Callable[..., Any]]:
        """The activity callables to register with a Temporal worker."""
        return [self.plan, self.propose, self.commit, self.interrupt, self.fail]

    # -- the board's session ----------------------------------------------------------------------
    async def _session(self, start: BoardStart) -> BoardSession:
        if start.version != __version__:
            raise _unusable(
                f"this worker runs slateboard {__version__}, board {start.board_id} was submitted with"
                f" slateboard {start.version}: serve it with workers of {start.version}"
            )
        try:
            session = await self.sessions.get(start.board_id)
        except BoardNotFound:
            raise _unusable(
                f"board {start.board_id} is not in this worker's store ({self.store.url}):"
                " start workers with the store the board was submitted to"
            ) from None
        except (BlueprintError, RunnerError, WorkerConfigError, ModelConfigError) as exc:
            raise _unusable(f"cannot run board {start.board_id}: {type(exc).__name__}: {exc}") from None
        if session.blueprint.digest != start.digest:
            self.sessions.evict(start.board_id)
            raise _unusable(
                f"board {start.board_id}'s stored blueprint (digest {session.blueprint.digest[:12]}) is not the one"
                f" it was submitted with (digest {start.digest[:12]})"
            )
        return session

    async def _caught_up(self, start: BoardStart) -> BoardSession:
        session = await self._session(start)
        try:
            await session.refresh()
        except StoreError:
            self.sessions.evict(start.board_id)  # half caught up: reload on the next attempt
            raise
        return session

    # -- plan -------------------------------------------------------------------------------------
    @activity.defn(name=PLAN)
    async def plan(self, start: BoardStart) -> dict[str, JSON]:
        """The next invocation to run (``invocation``, ``reason``), or why the board ended
        (``ended``, ``status``); neither when the pick was taken meanwhile (plan again), or
        ``wait_s`` when only a batch's timer is pending (plan again once it is due)."""
        return await self._plan(await self._caught_up(start), start)

    async def _plan(self, session: BoardSession, start: BoardStart) -> dict[str, JSON]:
        board = start.board_id
        info = await self.store.board_info(board)
        if session.accounts.ended_at_head:
            last = session.accounts.last
            reason = (last.reason if last is not None else None) or ""
            if info.status == BOARD_RUNNING:  # a run-end record whose status was never set
                await self.store.set_status(board, status_for(reason), reason)
            return {"ended": reason, "status": status_for(reason)}
        if info.status == BOARD_RUNNING and info.reason == INTERRUPTED:
            await self.store.set_status(board, BOARD_RUNNING, None)  # a resumed run: no longer interrupted
        ended = await session.approved_first() or session.limit_reason()
        mine = [i for i in session.agenda.claimed if i.worker in session.workers]
        if ended is None and mine:
            # A retried plan (or a resumed workflow) that had claimed already: run that one.
            return {"ended": None, "invocation": mine[0].to_json(), "reason": "claimed before a retry"}
        if ended is None:
            await fire_due(session)  # a batch whose timer is due: its record, then its invocation
        eligible = [i for i in session.agenda.eligible() if i.worker in session.workers]
        if ended is None and not eligible:
            waiting = wait_s(session)
            if waiting is not None:
                # A batch waits for its timer: the workflow sleeps on a durable timer, then plans
                # again (the firing is a logged record, so replay needs no clock).
                return {"ended": None, "invocation": None, "wait_s": waiting}
            ended = AGENDA_EMPTY
        if ended is not None:
            return await self._end(session, ended)
        control = self.sessions.controls.get(board)
        if control is None:
            selection = await AgendaOrder().select(eligible, session.summary())
        else:
            restore_control(control, session.history)
            selection = await control.select(eligible, session.summary())
            await self.sessions.note_control_spend(session, control, selection.reason)
            selection.check(eligible)
        if selection.invocation is None:
            return await self._end(session, session.limit_reason() or f"control: {selection.reason}")
        owner = f"temporal:{activity.info().workflow_id}"
        claim = await self.store.claim(board, owner=owner, lease_s=CLAIM_LEASE_S, invocation_id=selection.invocation.id)
        if claim is None:
            self.sessions.evict(board)  # the mirror was wrong about it: reload
            return {"ended": None, "invocation": None}
        inv = session.adopt(claim.invocation) or claim.invocation
        return {"ended": None, "invocation": inv.to_json(), "reason": selection.reason}

    async def _end(self, session: BoardSession, reason: str) -> dict[str, JSON]:
        ended = await session.finish(reason) or reason
        if session.finished_here:
            self.log_line(f"board {session.board_id} ended: {ended} (version {session.kernel.version})")
        return {"ended": ended, "status": status_for(ended)}

    # -- propose ----------------------------------------------------------------------------------
    @activity.defn(name=PROPOSE)
    async def propose(self, start: BoardStart, step: dict[str, Any]) -> dict[str, JSON]:
        """The invocation's worker reply to its view, as a kernel proposal (``proposal``); None
        when the invocation is no longer on the agenda. Heartbeats while the worker runs, so a
        worker process that dies is noticed within the heartbeat timeout and the call retried
        elsewhere."""
        session = await self._caught_up(start)
        inv = Invocation.from_json(step["invocation"])
        if session.agenda.get(inv.id) is None:
            return {"proposal": None}
        worker = session.workers.get(inv.worker)
        if isinstance(worker, SubBoardWorker) and not step.get("children_ran"):
            children = await self._children(session, worker, inv)
            if children is not None:
                return {"proposal": None, "children": children, "max_parallel": worker.board.max_parallel}
        beat = asyncio.create_task(_heartbeat(start.heartbeat_s / 3))
        try:
            proposal, _reply = await session.propose(inv, str(step.get("reason") or ""))
        finally:
            beat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beat
        return {"proposal": proposal_to_json(proposal)}

    async def _children(self, session: BoardSession, worker: SubBoardWorker, inv: Invocation) -> list[JSON] | None:
        """Create (or find) the invocation's child boards and return the workflow input of each
        one still running, for the workflow to run them as child workflows; None when its
        inputs cannot be computed (``propose`` then rejects, saying why)."""
        try:
            runs = worker.runs_for(session.board_id, inv.id)
        except InvalidInput:
            return None
        starts: list[JSON] = []
        for run in runs:
            meta = {**run.meta, ENGINE_META: self.engine_meta} if self.engine_meta else run.meta
            await ensure_child(self.store, dataclasses.replace(run, meta=meta), create_board)
            if (await self.store.board_info(run.child_id)).status == BOARD_RUNNING:
                started = await stored_start(self.store, run.child_id)
                starts.append(dataclasses.asdict(started))
        return starts

    # -- commit -----------------------------------------------------------------------------------
    @activity.defn(name=COMMIT)
    async def commit(self, start: BoardStart, step: dict[str, Any]) -> dict[str, JSON]:
        """Decide the proposal and append it (one compare-and-set with the invocation's
        completion), then settle the board: ``seq`` of the record (None when an earlier attempt
        committed it), and ``ended``/``status`` when the board ended, else ``next``: the next
        plan (as ``plan`` gives it)."""
        session = await self._caught_up(start)
        inv = Invocation.from_json(step["invocation"])
        if session.agenda.get(inv.id) is None:
            ended = await session.settle(catch_up=False)
            return {"seq": None, "ended": ended, "status": None if ended is None else status_for(ended)}
        outcome = await session.decide(inv, proposal_from_json(step["proposal"]))
        ended = await session.settle(catch_up=outcome.record is None)
        if ended is not None and session.finished_here:
            self.log_line(f"board {start.board_id} ended: {ended} (version {session.kernel.version})")
        seq = outcome.record.seq if outcome.record is not None else None
        if ended is not None:
            return {"seq": seq, "ended": ended, "status": status_for(ended)}
        # The next plan in the same activity: the session is at the head it just wrote, so a step
        # costs two activities (propose, commit), not three.
        return {"seq": seq, "ended": None, "status": None, "next": await self._plan(session, start)}

    # -- the workflow's last words ------------------------------------------------------------------
    @activity.defn(name=INTERRUPT)
    async def interrupt(self, board_id: str) -> None:
        """The workflow was cancelled: give back what it claimed and mark the board
        ``interrupted`` (still running in the store, so a resume takes it up)."""
        owner = f"temporal:{activity.info().workflow_id}"
        self.sessions.evict(board_id)
        given_back = 0
        for inv in await self.store.agenda(board_id):
            with contextlib.suppress(LeaseLost):
                await self.store.heartbeat(board_id, inv.id, owner=owner, lease_s=-CLAIM_LEASE_S)
                given_back += 1
        if given_back:
            await self.store.release_expired()
        info = await self.store.board_info(board_id)
        if info.status == BOARD_RUNNING:
            await self.store.set_status(board_id, BOARD_RUNNING, INTERRUPTED)
        self.log_line(f"board {board_id} interrupted (workflow cancelled); {given_back} claim(s) given back")

    @activity.defn(name=FAIL)
    async def fail(self, board_id: str, reason: str) -> None:
        """End a board this engine cannot run: status ``failed`` with ``reason``."""
        self.sessions.evict(board_id)
        with contextlib.suppress(BoardNotFound):
            await self.store.set_status(board_id, BOARD_FAILED, " ".join(reason.split())[:500])
        self.log_line(f"board {board_id} failed: {reason}")


async def _heartbeat(every: float) -> None:
    while True:
        activity.heartbeat()
        await asyncio.sleep(max(every, 0.05))
