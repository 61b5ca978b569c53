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
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from ..kernel.record import Usage
from ..runtime.events import INVOCATION_STARTED, PROPOSAL_DECIDED, RUN_ENDED, RunEvent
from ..runtime.session import RunnerError
from ..scheduling.invocation import CLAIMED, PENDING
from ..workers.base import Feedback, WorkerReply, feedback_lines

if TYPE_CHECKING:
    from ..runtime.runner import Runner
    from ..views import View

__all__ = ["Bridge", "BridgeError", "ExternalWorker", "Waiting"]

COMPONENT = "external"
"""The usage component of external proposals (tokens are the agent's own: reported as 0)."""


class BridgeError(RunnerError):
    """A request the bridge cannot serve now (no invocation waiting, the run ended, ...); the
    message says what to do instead."""


@dataclass
class Waiting:
    """One invocation waiting for the external agent's patch."""

    view: View
    event: JSON
    feedback: list[str]
    reply: asyncio.Future[WorkerReply]
    invocation: str | None = None
    since: float = field(default_factory=time.monotonic)

    def summary(self) -> dict[str, JSON]:
        """The invocation as an agent sees it: id, event, feedback, view version and hash."""
        return {
            "invocation": self.invocation,
            "event": self.event,
            "feedback": list(self.feedback),
            "view_version": self.view.version,
            "view_hash": self.view.hash,
        }


class ExternalWorker:
    """A worker whose patches an external agent supplies (see the module docstring).

    Guarantees: ``propose`` returns only the patch handed to ``submit`` for the invocation it
    published (one invocation at a time), and propagates cancellation."""

    def __init__(self, name: str) -> None:
        self._name = name
        self.waiting: Waiting | None = None
        self.next_invocation: str | None = None  # set by the Bridge from the runner's events
        self._changed = asyncio.Event()

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Publish this invocation and wait for the external agent's patch."""
        waiting = Waiting(
            view,
            event,
            feedback_lines(view, feedback),
            asyncio.get_running_loop().create_future(),
            invocation=self.next_invocation,
        )
        self.next_invocation = None
        self.waiting = waiting
        self._poke()
        try:
            return await waiting.reply
        finally:
            self.waiting = None
            self._poke()

    def submit(self, patch: Any, *, expand: tuple[str, ...] = (), client: str | None = None) -> Waiting:
        """Hand ``patch`` to the waiting invocation; returns it. Raises BridgeError when none waits."""
        waiting = self.waiting
        if waiting is None or waiting.reply.done():
            raise BridgeError("no invocation is waiting for a patch: call wait_for_invocation first")
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
        return waiting

    def _poke(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def changed(self, timeout: float) -> None:
        """Wait until an invocation is published or answered, or ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), timeout)


class Bridge:
    """Connects an ``ExternalWorker`` to the ``Runner`` that drives its board (see module)."""

    def __init__(self, runner: Runner, worker: ExternalWorker) -> None:
        if runner.parallel != 1:
            raise InvalidInput("an external worker is driven one invocation at a time: use parallel=1")
        self.runner = runner
        self.worker = worker
        self.ended: str | None = None
        self._decisions: asyncio.Queue[dict[str, JSON]] = asyncio.Queue()
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
                inv_id = inv if isinstance(inv, str) else None
                # the runner emits this right before calling propose; either may be seen first
                waiting = self.worker.waiting
                if waiting is not None and waiting.invocation is None:
                    waiting.invocation = inv_id
                    self.worker._poke()
                else:
                    self.worker.next_invocation = inv_id
            elif ev.kind == PROPOSAL_DECIDED:
                self._decisions.put_nowait(dict(ev.data))
            elif ev.kind == RUN_ENDED:
                reason = ev.data.get("reason")
                self.ended = reason if isinstance(reason, str) else "ended"
                self.worker._poke()
                self._decisions.put_nowait({"ended": self.ended})

    async def wait_for_invocation(self, timeout_s: float) -> dict[str, JSON]:
        """The invocation waiting for a patch (waits up to ``timeout_s``), or why there is none."""
        deadline = time.monotonic() + max(0.0, timeout_s)
        while True:
            waiting = self._current()
            if waiting is not None:
                return {"waiting": True, **waiting.summary()}
            if self.ended is not None:
                return {"waiting": False, "ended": self.ended}
            left = deadline - time.monotonic()
            if left <= 0:
                return {"waiting": False, "ended": None}
            await self.worker.changed(left)

    def _current(self) -> Waiting | None:
        """The waiting invocation once its id is known (from the runner's events)."""
        waiting = self.worker.waiting
        if waiting is None or waiting.invocation is None or waiting.reply.done():
            return None
        return waiting

    def view(self) -> dict[str, JSON]:
        """The view of the waiting invocation, as the runner built it (``View.to_json``)."""
        waiting = self._current()
        if waiting is None:
            raise BridgeError(
                "no invocation is waiting: call wait_for_invocation first"
                + (f" (the run ended: {self.ended})" if self.ended else "")
            )
        return {"invocation": waiting.invocation, "view": waiting.view.to_json(), "text": waiting.view.render()}

    async def pending(self) -> list[dict[str, JSON]]:
        """This worker's pending and claimed invocations in the store (the one waiting for a
        patch marked ``awaiting_patch``)."""
        current = self._current()
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

    async def propose(self, patch: Any, *, expand: tuple[str, ...] = (), client: str | None = None) -> dict[str, JSON]:
        """Submit ``patch`` for the waiting invocation and return the kernel's decision
        (outcome, stage, reason, seq, version, requeued)."""
        if self.ended is not None:
            raise BridgeError(f"the board's run ended ({self.ended}): nothing more is proposed")
        while not self._decisions.empty():  # nothing stale may answer this proposal
            self._decisions.get_nowait()
        waiting = self.worker.submit(patch, expand=expand, client=client)
        decided = await self._decisions.get()
        if "ended" in decided and "seq" not in decided:
            raise BridgeError(f"the board's run ended ({decided['ended']}) before the patch was decided")
        return {
            "invocation": waiting.invocation,
            "outcome": decided.get("outcome"),
            "stage": decided.get("stage"),
            "reason": decided.get("reason"),
            "seq": decided.get("seq"),
            "version": decided.get("version"),
            "requeued": decided.get("requeued"),
        }

    async def close(self) -> None:
        """Stop following the runner's events."""
        if self._follow is not None:
            self._follow.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._follow
