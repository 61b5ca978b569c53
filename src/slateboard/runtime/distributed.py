"""Runner processes: many processes serve every board of one PostgreSQL store.

Long by design: ``RunnerProcess``'s claim loop, lease heartbeats, sweep of expired claims and
graceful shutdown share one set of in-flight claims and cached sessions; the guarantees below
(one commit per invocation, boards end once) hold only because these parts agree on that state.
``submit`` and ``wait`` are the two thin entry points the CLI and users call next to it.

``submit`` creates a board (recording the model string its LLM workers use in the board's meta),
``RunnerProcess(store).serve()`` runs until stopped, and ``wait`` follows a board to its end.

A runner process loops: claim the best pending invocation of any running board
(``FOR UPDATE SKIP LOCKED``: concurrent runners never get the same one) while fewer than
``concurrency`` are in flight; run each through ``BoardSession.step`` (the single-board Runner's
step, ``runtime.step.StepEngine``) on a cached session of its board, which catches up with records other runners appended
before building the view; hold the claim's lease with heartbeats while the worker runs; commit
through the store's compare-and-set together with the agenda rows the commit creates. With
nothing to claim it sleeps in ``store.wait_for_work`` (``LISTEN/NOTIFY``) — no polling; the wait
has a safety timeout (half the lease) after which the runner puts the expired claims of dead
runners back (``release_expired``, which wakes the others) and ends boards that nobody will
claim work for any more (a finisher that died before setting the status).

Guarantees (with a PostgreSQL store):

- **One commit per invocation.** An invocation is completed by exactly one record: a runner that
  dies after its worker answered but before its commit leaves the claim to expire and be claimed
  again; a second commit of the same invocation is refused by the store (its idempotency key is
  spent) and that runner drops its result and catches up.
- **Nothing committed is lost or rewritten**: every record goes through the compare-and-set on
  the board's log position; a runner that loses it catches up and decides again.
- **Boards end once.** The runner that sees a board's end (done condition, empty agenda, circuit
  halt, limits, a proposal held for approval) appends the run-end record by compare-and-set and
  sets the board's status and end reason exactly as ``Runner`` does; if several see it at once,
  one record is written.
- **Graceful stop.** ``stop()`` (the CLI wires SIGTERM/SIGINT to it): no new claims; in-flight
  invocations get ``grace_s`` seconds to finish; the rest are cancelled and their claims given
  back at once (not left to expire).

- **The board's control unit decides.** For a board submitted with ``control``
  (``round-robin``, ``coordinator``; default agenda order, which is the claim order already) a
  runner that claimed one of its invocations catches up, restores the unit from the board's
  records (``scheduling.control.restore_control``) and asks it which of the board's invocations
  runs now; when the unit picks another one the claim is given back and that one is claimed
  instead, or, when the pick is running elsewhere, the claim waits for that commit (bounded).
  So the board runs one invocation at a time in the unit's order: the order of commits is the
  order the single-process ``Runner`` gives, and it continues across runners and restarts.

Model strings: the board's meta ``model`` (set by ``submit``) unless the runner overrides it.
Besides the providers of ``slateboard.models`` a runner resolves ``python:MODULE:NAME``: NAME is
a Model, or a callable returning one (how tests and benchmarks plug scripted models into real
runner processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..blueprint.compile import BlueprintError, CompiledBlueprint, compile_blueprint
from ..errors import InvalidInput, RunError
from ..kernel.canonical import JSON
from ..kernel.record import MODEL_META
from ..models import Model, ModelError
from ..models.errors import ModelConfigError
from ..scheduling.control import ControlUnit, restore_control
from ..scheduling.invocation import PENDING, Invocation
from ..scheduling.units import CONTROL_UNITS
from ..stores.base import (
    BoardInfo,
    Claim,
    LeaseLost,
    ScansStalledBoards,
    ServesManyRunners,
    Store,
    StoreError,
    StoreUnavailable,
    WatchesBoards,
    WatchesWork,
    supports,
)
from ..vocabulary import BOARD_FAILED, BOARD_RUNNING
from ..workers.base import WorkerConfigError
from ..workers.factory import make_workers
from .board_cache import BoardSessions, commit_lines
from .boards import RunnerError, board_result
from .models import resolve_runner_model
from .result import RunResult
from .runner import create_board
from .session import BoardSession
from .step import Shared
from .timers import fire_due, wait_s

log = logging.getLogger("slateboard.runtime.distributed")

__all__ = [
    "RunnerProcess",
    "RunnerStats",
    "WaitTimeout",
    "resolve_runner_model",
    "submit",
    "wait",
]

SCALE_OUT_NEEDS_POSTGRES = "scale-out across runner processes needs a postgresql:// store"


class WaitTimeout(RunError, TimeoutError):
    """``wait`` gave up: the board was still running when the timeout passed."""

    def __init__(self, board_id: str, timeout: float, info: BoardInfo) -> None:
        super().__init__(f"board {board_id} still running after {timeout:g} s (version {info.version})")
        self.board_id = board_id
        self.info = info


# -- submit and wait ------------------------------------------------------------------------------
async def submit(
    store: Store,
    blueprint: CompiledBlueprint | dict[str, Any],
    *,
    task: str | None = None,
    inputs: Mapping[str, JSON] | None = None,
    model: str | None = None,
    name: str | None = None,
    board_id: str | None = None,
    max_steps: int | None = None,
    control: str | None = None,
    meta: Mapping[str, JSON] | None = None,
) -> str:
    """Create a running board for runner processes and return its id.

    ``meta`` is added to the board's meta (the CLI records ``blueprint_dir`` there, where a
    later ``resume`` also imports function workers from).

    ``model`` (a model string) is recorded in the board's meta: runner processes build the
    board's LLM workers on it unless they override it. It is resolved first, and every worker
    built once, so a bad model string or function reference fails before the board exists.
    ``max_steps`` (recorded too) overrides the blueprint's limit. ``control`` (recorded too: one
    of ``agenda``, ``round-robin``, ``coordinator``) is the control unit every runner process
    asks which of the board's invocations runs next."""
    compiled = blueprint if isinstance(blueprint, CompiledBlueprint) else compile_blueprint(blueprint)
    make_workers(compiled, model=resolve_runner_model(model))
    meta_out: dict[str, JSON] = {**(meta or {}), "submitted_at": time.time()}
    if model is not None:
        meta_out[MODEL_META] = model
    if control is not None:
        if control not in CONTROL_UNITS:
            raise InvalidInput(f"unknown control unit {control!r}; expected one of {', '.join(CONTROL_UNITS)}")
        if control == "coordinator" and model is None:
            raise InvalidInput("the coordinator control unit needs a model: submit with model=...")
        meta_out["control"] = control
    if max_steps is not None:
        if max_steps < 1:
            raise InvalidInput("max_steps must be >= 1")
        meta_out["max_steps"] = max_steps
    return await create_board(store, compiled, inputs=inputs, task=task, board_id=board_id, name=name, meta=meta_out)


async def wait(store: Store, board_id: str, *, timeout: float | None = None) -> RunResult:
    """Follow a board until its status is no longer ``running`` and return its result (state,
    answer, end reason; counts over the whole log). A store that ``WatchesBoards`` wakes it
    when the status changes (PostgreSQL: ``NOTIFY``); with another store the status is read
    every 0.2 s. Raises BoardNotFound, or WaitTimeout when ``timeout`` seconds pass first."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    while True:
        left = 3600.0 if deadline is None else deadline - loop.time()
        # The declared capability decides (``supports``); the isinstance only narrows the type.
        if supports(store, WatchesBoards) and isinstance(store, WatchesBoards):
            info = await store.wait_for_board(board_id, max(left, 0.0))
        else:
            info = await store.board_info(board_id)
            if info.status == BOARD_RUNNING and left > 0:
                await asyncio.sleep(min(0.2, left))
                continue
        if info.status != BOARD_RUNNING:
            return await board_result(store, board_id)
        if deadline is not None and loop.time() >= deadline:
            raise WaitTimeout(board_id, timeout or 0.0, info)


# -- the runner process ---------------------------------------------------------------------------
@dataclass(slots=True)
class RunnerStats:
    """What a runner process did: claims taken, records committed, results dropped (committed
    elsewhere first), boards it ended, invocations that failed with an error, claims given back
    on stop, wake-ups from the idle wait, and claim attempts that found nothing."""

    claims: int = 0
    commits: int = 0
    dropped: int = 0
    boards_ended: int = 0
    errors: int = 0
    released: int = 0
    wakeups: int = 0
    empty_claims: int = 0

    def to_json(self) -> dict[str, int]:
        """Plain JSON form."""
        return {
            "claims": self.claims,
            "commits": self.commits,
            "dropped": self.dropped,
            "boards_ended": self.boards_ended,
            "errors": self.errors,
            "released": self.released,
            "wakeups": self.wakeups,
            "empty_claims": self.empty_claims,
        }


class RunnerProcess:
    """Serves every running board of ``store`` until ``stop()`` (see the module docstring).

    ``concurrency``: invocations in flight at once. ``worker_names``: serve only these blueprint
    workers (None: all). ``model``: overrides every board's model. ``functions``: function workers
    by name or reference. ``lease_s``: claim lease, extended every third of it while a worker
    runs. ``grace_s``: how long a stop waits for in-flight invocations. ``log_line``: receives one
    line per commit and per board end (and start/stop lines). ``import_blueprint_dirs`` (what
    ``slateboard worker`` sets): before a board's workers are built, the directory its blueprint
    was submitted from (the board's meta ``blueprint_dir``, when it still exists) is appended to
    ``sys.path``, so its function workers (``module:callable``) import as ``run`` imports them.
    """

    def __init__(
        self,
        store: Store,
        *,
        concurrency: int = 4,
        worker_names: Sequence[str] | None = None,
        model: Model | str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        lease_s: float = 30.0,
        worker_timeout: float = 120.0,
        grace_s: float = 30.0,
        idle_s: float | None = None,
        owner: str | None = None,
        max_sessions: int = 256,
        log_line: Callable[[str], None] | None = None,
        import_blueprint_dirs: bool = False,
    ) -> None:
        if concurrency < 1:
            raise InvalidInput("concurrency must be >= 1")
        if lease_s <= 0:
            raise InvalidInput("lease_s must be > 0")
        if worker_names is not None and not list(worker_names):
            raise InvalidInput("worker_names is empty: name at least one worker (or None for all)")
        if not supports(store, ServesManyRunners):
            raise RunnerError(f"{SCALE_OUT_NEEDS_POSTGRES} (got {store.url}); run a board in one process with Runner")
        self.store = store
        self.concurrency = concurrency
        self.worker_names = None if worker_names is None else tuple(worker_names)
        self.model = model
        self.lease_s = lease_s
        self.worker_timeout = worker_timeout
        self.grace_s = grace_s
        self.idle_s = idle_s if idle_s is not None else max(0.5, min(lease_s / 2, 30.0))
        self.owner = owner or f"runner-{uuid.uuid4().hex[:8]}"
        self.log_line = log_line or (lambda line: log.info("%s", line))
        self.stats = RunnerStats()
        self._stop = asyncio.Event()
        self.sessions = BoardSessions(
            store,
            Shared,
            model=model,
            functions=functions,
            worker_names=self.worker_names,
            worker_timeout=worker_timeout,
            max_sessions=max_sessions,
            import_blueprint_dirs=import_blueprint_dirs,
            emit_for=lambda board_id: commit_lines(board_id, self.log_line),
        )

    def stop(self) -> None:
        """Ask ``serve`` to stop gracefully (safe to call from a signal handler in the loop)."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        """True once ``stop()`` was called."""
        return self._stop.is_set()

    async def serve(self) -> RunnerStats:
        """Claim and run invocations until ``stop()``; returns the process's statistics.

        Raises StoreError when the store fails outside an invocation (e.g. it cannot be reached
        to claim); an invocation that fails is logged, counted and left to its lease."""
        who = f" serving workers {', '.join(self.worker_names)}" if self.worker_names else ""
        self.log_line(f"runner {self.owner} started (concurrency {self.concurrency}, lease {self.lease_s:g} s){who}")
        stop_task = asyncio.create_task(self._stop.wait())
        in_flight: dict[asyncio.Task[None], Claim] = {}
        try:
            await self._sweep()
            while not self._stop.is_set():
                # Forget finished invocations first: their slots are free for the claims below
                # (a free slot must never wait for a notification that was already consumed).
                for task in [t for t in in_flight if t.done()]:
                    del in_flight[task]
                while len(in_flight) < self.concurrency and not self._stop.is_set():
                    claim = await self.store.claim(
                        None, owner=self.owner, lease_s=self.lease_s, worker_names=self.worker_names
                    )
                    if claim is None:
                        self.stats.empty_claims += 1
                        break
                    self.stats.claims += 1
                    in_flight[asyncio.create_task(self._handle(claim))] = claim
                if self._stop.is_set():
                    break
                if len(in_flight) >= self.concurrency:
                    await asyncio.wait([*in_flight, stop_task], return_when=asyncio.FIRST_COMPLETED)
                    continue
                waiter = asyncio.create_task(self._wait_for_work())
                done, _ = await asyncio.wait([waiter, stop_task], return_when=asyncio.FIRST_COMPLETED)
                if waiter not in done:
                    waiter.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StoreError):
                        await waiter
                    break
                if waiter.result():
                    self.stats.wakeups += 1
                else:
                    # Quiet for a while: dead runners' leases may have expired, and a board whose
                    # finisher died may wait for its end.
                    released = await self.store.release_expired()
                    if released:
                        self.log_line(f"released {released} expired claim(s) of dead runners")
                    await self._sweep()
        finally:
            stop_task.cancel()
            await self._shutdown(in_flight)
        self.log_line(
            f"runner {self.owner} stopped: {self.stats.commits} commits, {self.stats.boards_ended} boards ended,"
            f" {self.stats.dropped} dropped, {self.stats.released} released, {self.stats.wakeups} wake-ups,"
            f" {self.stats.empty_claims} empty claims"
        )
        return self.stats

    async def _wait_for_work(self) -> bool:
        store = self.store
        # Wake up for the next batch timer of a board this process knows (the sweep fires it).
        waits = [w for s in self.sessions.loaded() if (w := wait_s(s)) is not None]
        idle = max(0.05, min([self.idle_s, *waits]))
        if supports(store, WatchesWork) and isinstance(store, WatchesWork):
            return await store.wait_for_work(idle, worker_names=self.worker_names)
        return await self.store.wait_for_work(idle)

    async def _shutdown(self, in_flight: dict[asyncio.Task[None], Claim]) -> None:
        if not in_flight:
            return
        busy = [t for t in in_flight if not t.done()]
        if busy:
            self.log_line(f"stopping: waiting up to {self.grace_s:g} s for {len(busy)} invocation(s) in flight")
            _, late = await asyncio.wait(busy, timeout=self.grace_s)
        else:
            late = set()
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
        given_back = 0
        for task in late:
            claim = in_flight[task]
            with contextlib.suppress(LeaseLost, StoreError):
                # A lease that ends now makes the invocation claimable at once.
                await self.store.heartbeat(claim.board_id, claim.invocation.id, owner=self.owner, lease_s=-self.lease_s)
                given_back += 1
        if given_back:
            with contextlib.suppress(StoreError):
                await self.store.release_expired()
            self.stats.released += given_back
            self.log_line(f"gave back {given_back} claim(s) still running after the grace period")

    # -- one claimed invocation -------------------------------------------------------------------
    async def _handle(self, claim: Claim) -> None:
        board_id, inv = claim.board_id, claim.invocation
        try:
            session = await self.sessions.get(board_id)
        except StoreUnavailable as exc:
            self.stats.errors += 1
            self.log_line(f"board {board_id}: store unavailable ({exc}); {inv.id} left to its lease")
            return
        except (BlueprintError, RunnerError, WorkerConfigError, ModelConfigError, StoreError) as exc:
            await self._fail_board(board_id, exc)
            return
        try:
            await self._run(session, inv)
        except asyncio.CancelledError:
            raise
        except (StoreError, ModelError, RunnerError) as exc:
            self.stats.errors += 1
            self._evict(board_id)  # its state may be half-way: reload next time
            self.log_line(f"board {board_id}: {inv.id} failed ({type(exc).__name__}: {exc}); left to its lease")
        except Exception as exc:
            self.stats.errors += 1
            self._evict(board_id)
            log.exception("board %s: invocation %s failed", board_id, inv.id)
            self.log_line(f"board {board_id}: {inv.id} failed ({type(exc).__name__}: {exc}); left to its lease")

    async def _run(self, session: BoardSession, claimed: Invocation) -> None:
        inv = await session.begin(claimed)
        if inv is None:
            if session.accounts.ended_at_head:
                self._ended(session)
            else:
                self.log_line(f"board {session.board_id}: {claimed.id} was committed elsewhere; skipped")
            return
        reason = f"claimed by {self.owner}"
        control = self.sessions.controls.get(session.board_id)
        if control is not None:
            picked = await self._pick(session, control, inv)
            if picked is None:
                return
            inv, reason = picked
        await self._step(session, inv, reason)

    async def _give_back(self, session: BoardSession, inv: Invocation, why: str) -> None:
        """End our lease on ``inv`` now, so it is pending again for whoever the unit picks."""
        with contextlib.suppress(LeaseLost):
            await self.store.heartbeat(session.board_id, inv.id, owner=self.owner, lease_s=-self.lease_s)
        await self.store.release_expired()
        if session.agenda.cancel(inv.id) is not None:
            session.agenda.push(inv)  # pending again, exactly as the store has it (no attempt counted)
        log.debug("board %s: claim on %s given back (%s)", session.board_id, inv.id, why)

    async def _pick(
        self, session: BoardSession, control: ControlUnit, inv: Invocation
    ) -> tuple[Invocation, str] | None:
        """Ask the board's control unit, restored from the board's records, which of the board's
        invocations (pending or claimed, by anyone) runs now. Every runner asks the same unit
        about the same committed board, so all get the same answer: ours -> run it; a pending
        one this runner serves -> give ours back and claim that one; one claimed elsewhere (or
        of a worker served elsewhere) -> hold ours until that one is committed (at most a third
        of the lease, then give it back), catch up and ask again. So the board runs one invocation at a time, in the unit's order. None when there
        is nothing for this claim to run (or the unit ended the board)."""
        board = session.board_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lease_s / 3
        current: Invocation | None = inv
        while current is not None:
            # Every active invocation of the board, also those of workers this runner does not
            # serve: the unit's order is the board's, whoever serves it.
            active = await self.store.agenda(board)
            restore_control(control, session.history)
            selection = await control.select(active, session.summary())
            await self.sessions.note_control_spend(session, control, selection.reason)
            selection.check(active)
            chosen = selection.invocation
            if chosen is None:
                await self._give_back(session, current, "the control unit ends the board")
                if await session.finish(f"control: {selection.reason}") is not None:
                    self._ended(session)
                return None
            if chosen.id == current.id:
                return current, selection.reason
            if chosen.status == PENDING and chosen.worker in session.workers:
                await self._give_back(session, current, f"the control unit picked {chosen.id}")
                claim = await self.store.claim(board, owner=self.owner, lease_s=self.lease_s, invocation_id=chosen.id)
                if claim is None:
                    self.log_line(f"board {board}: {chosen.id}, picked by its control unit, was taken; skipped")
                    return None
                self.stats.claims += 1
                return session.adopt(claim.invocation) or claim.invocation, selection.reason
            # Its turn is another runner's (running it, or serving its worker): wait for that commit.
            while any(i.id == chosen.id for i in await self.store.agenda(board)):
                if loop.time() >= deadline or self._stop.is_set():
                    await self._give_back(session, current, f"{chosen.id} is not committed yet")
                    return None
                await asyncio.sleep(0.01)
            current = await session.begin(current)
            if current is None and session.accounts.ended_at_head:
                self._ended(session)
        return None

    async def _step(self, session: BoardSession, inv: Invocation, reason: str) -> None:
        outcome = await session.step(inv, reason, owner=self.owner, lease_s=self.lease_s)
        if outcome.record is None:
            self.stats.dropped += 1
            self.log_line(f"board {session.board_id}: result for {inv.id} dropped ({outcome.dropped})")
        else:
            self.stats.commits += 1
        await fire_due(session)  # a batch whose timeout passed (runtime.timers)
        ended = await session.settle(catch_up=outcome.record is None)
        if ended is not None:
            self._ended(session)

    def _ended(self, session: BoardSession) -> None:
        """Forget a board that ended; count and log it when this process wrote its end."""
        self._evict(session.board_id)
        if not session.finished_here:
            return
        last = session.accounts.last
        reason = last.reason if last is not None else "?"
        self.stats.boards_ended += 1
        self.log_line(f"board {session.board_id} ended: {reason} (version {session.kernel.version})")

    async def _fail_board(self, board_id: str, exc: BaseException) -> None:
        reason = f"runner {self.owner} cannot run the board: {type(exc).__name__}: {exc}"
        self.stats.errors += 1
        self.log_line(f"board {board_id} failed: {reason}")
        with contextlib.suppress(StoreError):
            await self.store.set_status(board_id, BOARD_FAILED, " ".join(reason.split())[:500])

    def _evict(self, board_id: str) -> None:
        self.sessions.evict(board_id)

    async def _sweep(self) -> None:
        """Fire the due batch timers of the boards this process holds; end the running boards
        that have no pending or claimed invocation left (and no batch waiting for its timer)."""
        for cached in self.sessions.loaded():
            with contextlib.suppress(StoreError):
                await fire_due(cached)
        store = self.store
        if supports(store, ScansStalledBoards) and isinstance(store, ScansStalledBoards):
            stalled = await store.stalled_boards()
        else:
            stalled = [b.board_id for b in await self.store.list_boards(status=BOARD_RUNNING)]
            stalled = [b for b in stalled if not await self.store.agenda(b)]
        for board_id in stalled:
            if self._stop.is_set():
                return
            try:
                session = await self.sessions.get(board_id)
                await session.refresh()
                await fire_due(session)  # an idle board may wait for nothing but a batch's timer
                if await session.settle() is not None:
                    self._ended(session)
            except (BlueprintError, RunnerError, WorkerConfigError, ModelConfigError) as exc:
                await self._fail_board(board_id, exc)
            except StoreError as exc:
                self.log_line(f"board {board_id}: could not be ended now ({exc})")
