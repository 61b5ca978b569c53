"""The external worker: a blueprint worker whose proposals come from outside the process.

``ExternalWorker`` implements the worker protocol. When the runner invokes it, ``propose``
publishes the invocation (the view the runner built for it, the triggering event, the feedback)
and waits until an external agent hands in a patch; the runner then decides that patch with the
kernel and logs it like any proposal. ``Bridge`` pairs the worker with a runner: it follows the
runner's events to learn each invocation's id and the kernel's decision on each patch, so an
agent's ``propose`` returns the decision (outcome, stage, reason, seq).

The agent therefore sees exactly what an internal worker would (the same ``View`` object: bounded,
inside the read contract, hashed), and its patch goes through the same kernel stages and the same
store append; nothing it sends can bypass its write contract.

Sessions (issue 29, R2). Several agents may serve one worker at once (one MCP session each).
``wait_for_invocation`` gives a session one waiting invocation of its own, with a ``claim`` (an
unguessable token): no other session can read its view or propose for it, and the session keeps
it until it proposes (or the invocation times out). A session is named by that claim (``claim_key``;
MCP's 2026 protocol is stateless, so a client that shares a server passes its claim back), or
else by what its transport keeps per client (a streamable-HTTP session id). A proposal is decided for the invocation whose view the session read, at that view's
version, so the kernel's ``stale`` check compares it with what its author saw; the decision is
routed by invocation id to the session that proposed, never to another. With the runner's
``parallel`` above 1, several invocations of the worker wait at once, one per session.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator, Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON
from ..kernel.record import Usage
from ..runtime.events import INVOCATION_STARTED, PROPOSAL_DECIDED, RUN_ENDED, RunEvent
from ..runtime.session import RunnerError
from ..scheduling.invocation import CLAIMED, PENDING
from ..workers.base import Feedback, WorkerReply, feedback_lines

if TYPE_CHECKING:
    from ..runtime.runner import Runner
    from ..views import View

__all__ = ["ANONYMOUS", "Bridge", "BridgeError", "ExternalWorker", "Session", "Waiting", "claim_key"]

COMPONENT = "external"
"""The usage component of external proposals (tokens are the agent's own: reported as 0)."""


class BridgeError(RunnerError):
    """A request the bridge cannot serve now (no invocation waiting, the run ended, ...); the
    message says what to do instead."""


Session = Hashable
"""Who holds an invocation: a key that identifies one agent (``claim_key(claim)``, or a key the
transport keeps per client)."""


ANONYMOUS: Session = ("anonymous",)
"""The session of MCP calls that carry no claim and no transport session: each such
``wait_for_invocation`` takes a fresh invocation (never one already held), and ``read_view`` /
``propose`` without a claim act on the one invocation held so, refusing when there are several."""


def claim_key(claim: str) -> Session:
    """The session key of a claim token returned by ``wait_for_invocation``."""
    return ("claim", claim)


@dataclass(eq=False)
class Waiting:
    """One invocation waiting for the external agent's patch."""

    view: View
    event: JSON
    feedback: list[str]
    reply: asyncio.Future[WorkerReply]
    invocation: str | None = None
    since: float = field(default_factory=time.monotonic)
    owner: Session | None = None
    claim: str | None = None

    def summary(self) -> dict[str, JSON]:
        """The invocation as an agent sees it: id, event, feedback, view version and hash."""
        return {
            "invocation": self.invocation,
            "event": self.event,
            "feedback": list(self.feedback),
            "view_version": self.view.version,
            "view_hash": self.view.hash,
            "claim": self.claim,
        }

    @property
    def open(self) -> bool:
        """Its id is known and no patch was handed in yet."""
        return self.invocation is not None and not self.reply.done()

    def held_by(self, session: Session) -> bool:
        """Whether ``session`` holds this invocation."""
        if self.owner is None:
            return False
        return self.owner == session or (self.claim is not None and session == claim_key(self.claim))

    @property
    def free(self) -> bool:
        """No session holds it."""
        return self.owner is None


class ExternalWorker:
    """A worker whose patches an external agent supplies (see the module docstring).

    Guarantees: ``propose`` returns only the patch handed to ``submit`` for the invocation it
    published; several invocations may wait at once (the runner's ``parallel``), each answered on
    its own; cancellation propagates."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.open: list[Waiting] = []
        """Invocations waiting for a patch, oldest first."""
        self.unnamed: list[Waiting] = []
        """Published invocations whose id the runner's events have not told yet, in call order."""
        self._changed = asyncio.Event()

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    @property
    def waiting(self) -> Waiting | None:
        """The oldest invocation waiting for a patch (None when none does)."""
        return next((w for w in self.open if not w.reply.done()), None)

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Publish this invocation and wait for the external agent's patch."""
        waiting = Waiting(view, event, feedback_lines(view, feedback), asyncio.get_running_loop().create_future())
        self.open.append(waiting)
        # The runner announces an invocation (its id) right before it calls ``propose``, with no
        # await in between: announcements and calls come in the same order.
        self.unnamed.append(waiting)
        self._poke()
        try:
            return await waiting.reply
        finally:
            self.open.remove(waiting)
            self._poke()

    def name_next(self, invocation: str | None) -> None:
        """The runner announced ``invocation``: it is the oldest published one still unnamed."""
        if self.unnamed:
            self.unnamed.pop(0).invocation = invocation
            self._poke()

    def submit(self, waiting: Waiting, patch: Any, *, expand: tuple[str, ...] = (), client: str | None = None) -> None:
        """Hand ``patch`` to ``waiting``. Raises BridgeError when it no longer waits."""
        if waiting not in self.open or waiting.reply.done():
            raise BridgeError("this invocation no longer waits for a patch: call wait_for_invocation again")
        diagnostics: dict[str, JSON] = {"kind": COMPONENT}
        if client:
            diagnostics["client"] = client
        waiting.reply.set_result(
            WorkerReply(
                patch=patch,
                usage=Usage(0, 0, round((time.monotonic() - waiting.since) * 1000.0, 3), COMPONENT),
                expand=expand,
                diagnostics=diagnostics,
            )
        )

    def _poke(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self, timeout: float) -> None:
        """Wait until an invocation is published, named or answered, or ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)


class _Sole:
    """The session of callers that name none (one agent, e.g. the Python API)."""


_SOLE = _Sole()


class Bridge:
    """Connects an ``ExternalWorker`` to the ``Runner`` that drives its board (see module)."""

    def __init__(self, runner: Runner, worker: ExternalWorker) -> None:
        self.runner = runner
        self.worker = worker
        self.ended: str | None = None
        self._decided: dict[str, asyncio.Future[dict[str, JSON]]] = {}
        self._events: AsyncIterator[RunEvent] = runner.events()  # subscribe before run() starts
        self._follow: asyncio.Task[None] | None = None
        self.run_task: asyncio.Task[Any] | None = None  # the runner's run, when open_bridge started it

    @property
    def board_id(self) -> str:
        """The board the worker works on."""
        return self.runner.board_id

    def start(self) -> None:
        """Follow the runner's events (call in the event loop, before or right after run())."""
        if self._follow is None:
            self._follow = asyncio.create_task(self._consume())

    async def _consume(self) -> None:
        async for ev in self._events:
            if ev.data.get("worker") != self.worker.name and ev.kind != RUN_ENDED:
                continue
            if ev.kind == INVOCATION_STARTED:
                inv = ev.data.get("invocation")
                self.worker.name_next(inv if isinstance(inv, str) else None)
            elif ev.kind == PROPOSAL_DECIDED:
                inv = ev.data.get("invocation")
                future = self._decided.pop(inv, None) if isinstance(inv, str) else None
                if future is not None and not future.done():
                    future.set_result(dict(ev.data))
            elif ev.kind == RUN_ENDED:
                reason = ev.data.get("reason")
                self.ended = reason if isinstance(reason, str) else "ended"
                self.worker._poke()
                for future in self._decided.values():
                    if not future.done():
                        future.set_result({"ended": self.ended})
                self._decided.clear()

    def _held(self, session: Session) -> Waiting | None:
        """The open invocation ``session`` holds, if any."""
        held = [w for w in self.worker.open if w.open and w.held_by(session)]
        if len(held) > 1:
            raise BridgeError(
                f"{len(held)} invocations are held without a claim: pass the claim wait_for_invocation returned"
            )
        return held[0] if held else None

    def _take(self, session: Session) -> Waiting | None:
        """The invocation ``session`` holds, else the oldest free one, now held by it (an
        anonymous caller always takes a free one: it cannot show it held one before)."""
        if session != ANONYMOUS:
            held = self._held(session)
            if held is not None:
                return held
        for waiting in self.worker.open:
            if waiting.open and waiting.free:
                waiting.owner = session
                waiting.claim = secrets.token_urlsafe(18)
                return waiting
        return None

    async def wait_for_invocation(self, timeout_s: float, session: Session = _SOLE) -> dict[str, JSON]:
        """The invocation waiting for this session's patch (one it holds, else a free one it now
        holds; waits up to ``timeout_s``), or why there is none."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            waiting = self._take(session)
            if waiting is not None:
                return {"waiting": True, **waiting.summary()}
            if self.ended is not None:
                return {"waiting": False, "ended": self.ended}
            left = deadline - time.monotonic()
            if left <= 0:
                return {"waiting": False, "ended": None}
            await self.worker.changed(left)

    def _mine(self, session: Session) -> Waiting:
        waiting = self._held(session)
        if waiting is None:
            raise BridgeError(
                "this session holds no invocation: call wait_for_invocation first"
                + (f" (the run ended: {self.ended})" if self.ended else "")
            )
        return waiting

    def view(self, session: Session = _SOLE) -> dict[str, JSON]:
        """The view of the invocation this session holds, as the runner built it (``View.to_json``)."""
        waiting = self._mine(session)
        return {"invocation": waiting.invocation, "view": waiting.view.to_json(), "text": waiting.view.render()}

    async def pending(self, session: Session = _SOLE) -> list[dict[str, JSON]]:
        """This worker's pending and claimed invocations in the store (the one this session holds
        marked ``awaiting_patch``)."""
        try:
            current = self._held(session)
        except BridgeError:  # several held without a claim: none is this caller's for sure
            current = None
        out: list[dict[str, JSON]] = []
        for inv in await self.runner.store.agenda(self.board_id, (PENDING, CLAIMED)):
            if inv.worker != self.worker.name:
                continue
            out.append(
                {
                    "invocation": inv.id,
                    "status": inv.status,
                    "priority": inv.priority,
                    "event": inv.event,
                    "attempts": inv.attempts,
                    "feedback": inv.feedback,
                    "awaiting_patch": current is not None and current.invocation == inv.id,
                }
            )
        return out

    async def propose(
        self,
        patch: Any,
        *,
        expand: tuple[str, ...] = (),
        client: str | None = None,
        session: Session = _SOLE,
        invocation: str | None = None,
        view_version: int | None = None,
    ) -> dict[str, JSON]:
        """Submit ``patch`` for the invocation this session holds and return the kernel's decision
        on it (outcome, stage, reason, seq, version, requeued). ``invocation`` and ``view_version``,
        when given, must be that invocation's and the version of its view (what the agent read):
        anything else is refused before the kernel sees it, since the patch was made from another
        view. The kernel decides the patch as of that view's version (the ``stale`` check)."""
        if self.ended is not None:
            raise BridgeError(f"the board's run ended ({self.ended}): nothing more is proposed")
        waiting = self._mine(session)
        if invocation is not None and invocation != waiting.invocation:
            raise BridgeError(
                f"this session holds invocation {waiting.invocation}, not {invocation}: read its view and propose for it"
            )
        if view_version is not None and view_version != waiting.view.version:
            raise BridgeError(
                f"invocation {waiting.invocation} was viewed at version {waiting.view.version}, not {view_version}:"
                " call read_view and propose from that view"
            )
        inv_id = waiting.invocation
        assert inv_id is not None  # an open invocation is named
        decided: asyncio.Future[dict[str, JSON]] = asyncio.get_running_loop().create_future()
        self._decided[inv_id] = decided
        try:
            self.worker.submit(waiting, patch, expand=expand, client=client)
        except BaseException:
            self._decided.pop(inv_id, None)
            raise
        answer = await decided
        if "ended" in answer and "seq" not in answer:
            raise BridgeError(f"the board's run ended ({answer['ended']}) before the patch was decided")
        return {
            "invocation": inv_id,
            "view_version": waiting.view.version,
            "outcome": answer.get("outcome"),
            "stage": answer.get("stage"),
            "reason": answer.get("reason"),
            "seq": answer.get("seq"),
            "version": answer.get("version"),
            "requeued": answer.get("requeued"),
        }

    async def close(self) -> None:
        """Stop following the runner's events."""
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
