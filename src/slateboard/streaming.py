"""Live output of a run that is not state: model tokens and the progress a worker reports.

A run that someone streams ``tokens`` or ``custom`` from installs a ``StreamTap`` for its
duration (``streaming_to``); the step engine opens an ``invocation_scope`` around each worker
call, which tags what the worker produces with its worker and invocation. Without a tap every
function here is a no-op, so a run nobody streams takes the same path as before.

- Tokens: an LLM worker (and a team's agent) calls its model through
  ``slateboard.models.streamed.generate``. When tokens are wanted that opens a ``TokenSink`` for
  the call (``open_sink``), which the providers that can stream read with ``token_sink()`` (the
  OpenAI-compatible one, Anthropic, the local model, the scripted model). Each chunk is tagged
  with the model call's number within the invocation (``call``) and the attempt (``attempt``: a
  provider retry after a broken stream starts a new one). The chunks of a call's last attempt,
  joined, equal the reply that call returned (``TokenSink.settle`` sends the reply as one chunk
  in a last attempt when they do not, e.g. from a model that cannot stream), which is the reply
  the worker logs. Model calls outside a worker (a coordinator's choice, the Architect) are not
  streamed.
- Custom: a function worker whose signature takes ``emit`` gets an ``emit(data)`` callable (any
  other worker can call ``progress_emitter()`` inside its ``propose``); the JSON ``data``
  reaches the streams as a ``custom`` event, and nothing of it is logged.
- Updates and values of a ``Team`` (``Team.stream(prompt, modes=...)``): the step engine reports
  each accepted proposal (``committed``); a ``Runner`` derives them from its own events.

Streaming only observes: what a provider returns, and so what the log holds, is the same whether
or not anyone streams (the exception, in docs/follow.md: a server that reports no usage in a
streamed reply, e.g. ``llama_cpp.server``, has its usage estimated and marked so).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import orjson

from .errors import InvalidInput
from .kernel.canonical import JSON
from .vocabulary import CUSTOM_EVENT, OUTCOME_ACCEPTED, TOKENS_EVENT, UPDATE_EVENT, VALUES_EVENT, EventKind

if TYPE_CHECKING:
    from .kernel.record import Record

__all__ = [
    "CUSTOM_EVENT",
    "TOKENS_EVENT",
    "UPDATE_EVENT",
    "VALUES_EVENT",
    "Emit",
    "StreamTap",
    "TokenSink",
    "committed",
    "invocation_scope",
    "open_sink",
    "progress_emitter",
    "sink_installed",
    "streaming_to",
    "token_sink",
]

Deliver = Callable[[EventKind, str, dict[str, JSON]], None]
"""``deliver(kind, board_id, data)``: how a tap hands an event to its run (on the run's loop)."""

Emit = Callable[[JSON], None]
"""What a function worker's ``emit`` parameter receives: ``emit(data)`` with JSON ``data``."""


@dataclass(frozen=True, slots=True)
class StreamTap:
    """Where a run's tokens and custom progress go: ``deliver(kind, board_id, data)`` on
    ``loop``, for the modes ``wants`` says are wanted now (asked each time, so a listener that
    subscribes after the run started is served): ``tokens`` (model chunks), ``custom`` (worker
    progress), ``updates`` and ``values`` (each accepted proposal's patch and the state after it,
    for runs that have no other way to report them, e.g. a ``Team``'s)."""

    deliver: Deliver
    loop: asyncio.AbstractEventLoop
    wants: Callable[[str], bool]
    calls: dict[tuple[str, str], int] = field(default_factory=dict, compare=False)
    """Model calls made so far per (board, invocation): a proposal retried after a rejection
    calls the model again under the same invocation, and its chunks must not share a ``call``."""

    @classmethod
    def of(cls, deliver: Deliver, loop: asyncio.AbstractEventLoop, modes: Iterable[str]) -> StreamTap:
        """A tap for a fixed set of ``modes``."""
        fixed = frozenset(modes)
        return cls(deliver, loop, fixed.__contains__)

    @property
    def tokens(self) -> bool:
        """Whether model chunks are wanted now."""
        return self.wants("tokens")

    @property
    def custom(self) -> bool:
        """Whether worker progress is wanted now."""
        return self.wants("custom")

    def send(self, kind: EventKind, board_id: str, data: dict[str, JSON]) -> None:
        """Deliver one event on the tap's loop, whichever thread calls (llama.cpp streams from a
        worker thread; a function worker may report from one of its own)."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self.loop:
            self.deliver(kind, board_id, data)
        elif not self.loop.is_closed():
            self.loop.call_soon_threadsafe(self.deliver, kind, board_id, data)


@dataclass(slots=True)
class _Scope:
    """One worker call of a streamed run: its tags (its model calls are counted by the tap)."""

    tap: StreamTap
    board_id: str
    worker: str
    invocation: str


_TAP: ContextVar[StreamTap | None] = ContextVar("slateboard_stream_tap", default=None)
_SCOPE: ContextVar[_Scope | None] = ContextVar("slateboard_stream_scope", default=None)
_SINK: ContextVar[TokenSink | None] = ContextVar("slateboard_token_sink", default=None)


@contextlib.contextmanager
def streaming_to(tap: StreamTap | None) -> Iterator[None]:
    """Install ``tap`` for the code inside (and the tasks it creates); None installs nothing."""
    if tap is None:
        yield
        return
    token = _TAP.set(tap)
    try:
        yield
    finally:
        _TAP.reset(token)


def invocation_scope(board_id: str, worker: str, invocation: str) -> contextlib.AbstractContextManager[None]:
    """Tag what runs inside with the board, ``worker`` and ``invocation`` (the step engine wraps
    each worker call in one); nothing happens when no tap is installed or it wants neither
    tokens nor custom progress when the call starts (a run nobody streams pays one lookup, and
    gets a shared no-op: nothing is made that would live, tracked by the garbage collector, for
    the length of the worker's call)."""
    tap = _TAP.get()
    if tap is None or not (tap.tokens or tap.custom):
        return _NO_SCOPE
    return _scoped(_Scope(tap, board_id, worker, invocation))


_NO_SCOPE: contextlib.AbstractContextManager[None] = contextlib.nullcontext()


@contextlib.contextmanager
def _scoped(scope: _Scope) -> Iterator[None]:
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


class TokenSink:
    """Takes the chunks of one model call and delivers them, tagged, to the run's streams.

    Providers call ``sink(text)`` per chunk (from any thread) and ``sink.restart()`` when they
    retry after chunks were sent; ``text`` is what the current attempt has sent so far."""

    __slots__ = ("_lock", "_parts", "_scope", "attempt", "call", "model", "sent")

    def __init__(self, scope: _Scope, call: int, model: str) -> None:
        self._scope = scope
        self.call = call
        self.model = model
        self.attempt = 0
        self.sent = 0
        self._parts: list[str] = []
        self._lock = threading.Lock()

    @property
    def text(self) -> str:
        """The chunks of the current attempt, joined."""
        with self._lock:
            return "".join(self._parts)

    def restart(self) -> None:
        """A new attempt begins (a retry): what the last one sent is to be discarded."""
        with self._lock:
            if self._parts or self.sent:
                self.attempt += 1
                self._parts = []

    def settle(self, reply: str) -> None:
        """Close the call: when the chunks of the current attempt do not join to ``reply`` (a
        model that cannot stream sent none), a last attempt sends ``reply`` as one chunk."""
        if self.text != reply:
            self.restart()
            self(reply)

    def __call__(self, text: str) -> None:
        """Deliver one chunk (an empty one is dropped)."""
        if not text:
            return
        with self._lock:
            self._parts.append(text)
            self.sent += 1
            data: dict[str, JSON] = {
                "worker": self._scope.worker,
                "invocation": self._scope.invocation,
                "call": self.call,
                "attempt": self.attempt,
                "model": self.model,
                "text": text,
            }
        self._scope.tap.send(TOKENS_EVENT, self._scope.board_id, data)


def token_sink() -> TokenSink | None:
    """The sink of the model call in progress, when its tokens are streamed; else None (then a
    provider makes its ordinary, unstreamed request)."""
    return _SINK.get()


def open_sink(model: str) -> TokenSink | None:
    """A sink for the next model call of the worker call in progress, numbered in call order
    within its invocation (retries of a rejected proposal included), when its run streams tokens; else None (``slateboard.models.streamed.generate`` uses it)."""
    scope = _SCOPE.get()
    if scope is None or not scope.tap.tokens:
        return None
    key = (scope.board_id, scope.invocation)
    call = scope.tap.calls.get(key, 0)
    scope.tap.calls[key] = call + 1
    return TokenSink(scope, call, model)


@contextlib.contextmanager
def sink_installed(sink: TokenSink) -> Iterator[None]:
    """Make ``sink`` the one ``token_sink()`` returns inside (the model call's providers)."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def _checked(data: JSON) -> JSON:
    """``data`` as plain JSON, or InvalidInput naming what is not."""
    try:
        value: JSON = orjson.loads(orjson.dumps(data))
        return value
    except TypeError as exc:
        raise InvalidInput(f"emit() takes JSON data (dict, list, str, number, bool, None): {exc}") from None


def progress_emitter() -> Emit:
    """The ``emit(data)`` a function worker gets: it checks ``data`` is JSON (always, so a worker
    behaves the same streamed or not) and, when the run streams ``custom``, delivers a custom
    event with the worker, invocation and data. Never logged."""
    scope = _SCOPE.get()
    target = scope if scope is not None and scope.tap.custom else None

    def emit(data: JSON) -> None:
        value = _checked(data)
        if target is not None:
            data = {"worker": target.worker, "invocation": target.invocation, "data": value}
            target.tap.send(CUSTOM_EVENT, target.board_id, data)

    return emit


def committed(board_id: str, record: Record, version: int, state: JSON) -> None:
    """Report an accepted proposal's ``record`` (reaching ``version`` with ``state``) to a tap that
    wants ``updates`` or ``values`` (the step engine calls this after each decision)."""
    tap = _TAP.get()
    if tap is None or record.outcome != OUTCOME_ACCEPTED:
        return
    updates, values = tap.wants("updates"), tap.wants("values")
    if updates:
        patch: JSON = orjson.loads(record.patch) if record.patch is not None else None
        tap.send(
            UPDATE_EVENT,
            board_id,
            {
                "seq": record.seq,
                "worker": record.worker,
                "invocation": record.invocation,
                "version": version,
                "patch": patch,
            },
        )
    if values:
        # Copied now: by the time a listener reads the event the state may have moved on.
        tap.send(
            VALUES_EVENT, board_id, {"seq": record.seq, "version": version, "state": orjson.loads(orjson.dumps(state))}
        )
