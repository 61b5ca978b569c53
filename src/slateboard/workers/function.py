"""Function workers: plain Python callables (sync or async) that propose patches.

A function receives the view (and, when its signature takes them, the triggering ``event``, the
rejection ``feedback`` and ``emit``: a callable reporting JSON progress to the run's ``custom``
stream, never logged) and returns a patch: a list of operations, one operation object, a
JSON string, a ``{"patch": ..., "usage": ..., "expand": ...}`` object, a ``(patch, Usage)`` pair,
or a full WorkerReply. A plain (``def``) function runs in a worker thread, not in the event loop
(``run_in_thread``), so a slow one neither stalls the loop nor holds up a timeout or Ctrl-C.
Declare one with ``@function_worker(reads=..., writes=..., ops=...)`` (its
contract then travels with it: ``to_spec()`` is its blueprint entry, and ``make_worker`` checks
it against the blueprint) or wrap any callable in ``FunctionWorker(fn)``. Blueprints refer to
functions as ``"package.module:callable"`` (``resolve_function``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import logging
import os
import queue
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, overload

from ..kernel.canonical import JSON
from ..kernel.kernel import declined_reason
from ..kernel.record import Usage
from ..streaming import progress_emitter
from .base import DEFAULT_COMPONENT, Feedback, WorkerConfigError, WorkerReply, jsonable

if TYPE_CHECKING:
    from ..kernel.contract import WorkerContract
    from ..views import View

__all__ = ["FunctionWorker", "function_worker", "resolve_function", "run_in_thread"]

logger = logging.getLogger("slateboard.workers")

_Job = tuple[
    contextvars.Context,
    Callable[..., Any],
    tuple[Any, ...],
    dict[str, Any],
    asyncio.AbstractEventLoop,
    asyncio.Future[Any],
]


class _DaemonThreads:
    """A pool of daemon threads for plain function workers.

    Not ``asyncio.to_thread``: the default executor's threads are joined when ``asyncio.run``
    ends and again at interpreter exit, so a function still running after Ctrl-C (or a worker
    timeout) would hold the process until it returned. A daemon thread is never joined: an
    abandoned call runs on in the background, its result dropped, and the interpreter's exit
    stops it wherever it is. A thread is added whenever none is idle (an abandoned call keeps
    its thread busy), and idle threads are reused, so a run pays one thread hand-off per call,
    not one thread start."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every thread: an empty queue, no thread idle."""
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._count = 0

    def submit(self, job: _Job) -> None:
        """Queue ``job``; start a thread when no thread is idle to take it."""
        with self._lock:
            if self._idle > 0:
                self._idle -= 1
            else:
                self._count += 1
                threading.Thread(target=self._serve, name=f"slateboard-function-{self._count}", daemon=True).start()
        self._jobs.put(job)

    def _serve(self) -> None:
        while True:
            ctx, fn, args, kwargs, loop, future = self._jobs.get()
            try:
                result: Any = ctx.run(fn, *args, **kwargs)
                error: BaseException | None = None
            except BaseException as exc:  # handed to the awaiting task, which decides what it means
                result, error = None, exc
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits for the result
                loop.call_soon_threadsafe(_settle, future, result, error)
            del ctx, fn, args, kwargs, loop, future, result, error  # free them while idle
            with self._lock:
                self._idle += 1


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


_THREADS = _DaemonThreads()
# A forked child has none of the parent's threads: start it with an empty pool (else it would
# count the parent's idle threads and queue jobs that no thread takes).
os.register_at_fork(after_in_child=_THREADS.reset)


async def run_in_thread(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a daemon worker thread (with the caller's context variables),
    awaited without blocking the event loop; its exception is raised here.

    Cancelling the await (Ctrl-C, a worker timeout) returns at once and does not stop the call:
    Python cannot interrupt a thread, so the function runs on until it returns, its result is
    dropped, and the process may exit meanwhile (a daemon thread never delays exit: it is
    stopped wherever it is, so a function with side effects can be cut off mid-way)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    _THREADS.submit((contextvars.copy_context(), fn, args, kwargs, loop, future))
    return await future


def resolve_function(reference: str) -> Callable[..., Any]:
    """The callable named by ``"package.module:callable"`` (``callable`` may be dotted, e.g.
    ``"pkg.mod:Class.method"``). Raises WorkerConfigError naming the reference and the cause
    when the module cannot be imported, the attribute is missing, or it is not callable."""
    if not isinstance(reference, str) or reference.count(":") != 1:
        raise WorkerConfigError(f"bad function reference {reference!r}: expected 'package.module:callable'")
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise WorkerConfigError(f"bad function reference {reference!r}: expected 'package.module:callable'")
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # ImportError, or anything the module raises while importing
        hint = ""
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing is not None and module_name.split(".")[0] == missing.split(".")[0]:
            searched = [p or "." for p in sys.path if "site-packages" not in p and "/lib/python" not in p]
            hint = (
                f" (module {module_name!r} was searched on {searched}; fix: run from the directory that"
                f" holds {missing.split('.')[0]}.py or keep it beside the blueprint, or add its directory"
                " to PYTHONPATH)"
            )
        raise WorkerConfigError(f"cannot import function {reference!r}: {type(exc).__name__}: {exc}{hint}") from exc
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise WorkerConfigError(
                f"cannot import function {reference!r}: module {module_name!r} has no attribute {attr!r}"
            ) from None
    if not callable(target):
        raise WorkerConfigError(f"function reference {reference!r} names a {type(target).__name__}, not a callable")
    return target  # type: ignore[no-any-return]


def _arity(fn: Callable[..., Any]) -> tuple[bool, bool]:
    """(pass event positionally, pass feedback by keyword) for ``fn``'s signature."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return True, False
    params = list(sig.parameters.values())
    # ``feedback`` and ``emit`` are passed by keyword: a parameter so named is not the event.
    positional = [
        p
        for p in params
        if p.kind == p.POSITIONAL_ONLY or (p.kind == p.POSITIONAL_OR_KEYWORD and p.name not in ("feedback", "emit"))
    ]
    var_pos = any(p.kind == p.VAR_POSITIONAL for p in params)
    var_kw = any(p.kind == p.VAR_KEYWORD for p in params)
    takes_event = var_pos or len(positional) >= 2
    takes_feedback = var_kw or "feedback" in sig.parameters
    return takes_event, takes_feedback


def _takes_emit(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` names an ``emit`` parameter (a ``**kwargs`` alone does not get one)."""
    try:
        return "emit" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (an ``async def``, also behind a partial or
    as a callable object's ``async def __call__``)."""
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(fn, "__call__", None)  # noqa: B004 (the bound __call__ itself is inspected)
    inner = getattr(fn, "func", None)  # functools.partial
    return inspect.iscoroutinefunction(call) or (inner is not None and inspect.iscoroutinefunction(inner))


class FunctionWorker:
    """A worker that runs a Python callable (see the module docstring for what it may return).

    Guarantees: ``propose`` returns a WorkerReply; an ``async def`` function runs in the event
    loop, a plain one in a daemon worker thread (``run_in_thread``: when the run is cancelled,
    e.g. by Ctrl-C, or the worker times out, the call is abandoned and runs on to its end,
    its result dropped); an exception raised by the function (or a
    return value that is not a patch) does not propagate: it becomes a reply with an empty patch
    (a parse rejection) whose ``diagnostics["error"]`` names the exception, and is logged.
    Usage carries ``component`` and the call's wall time; tokens are whatever the function
    reported (0 otherwise).
    """

    kind = "function"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        reads: Sequence[str] | None = None,
        writes: Sequence[str] | None = None,
        ops: Sequence[str] | None = None,
        instruction: str = "",
        component: str = DEFAULT_COMPONENT,
        reference: str | None = None,
    ) -> None:
        if not callable(fn):
            raise WorkerConfigError(f"a function worker needs a callable, got {type(fn).__name__}")
        self.fn = fn
        self._name = name or str(getattr(fn, "__name__", "function"))
        self.reads = tuple(reads) if reads is not None else None
        self.writes = tuple(writes) if writes is not None else None
        self.ops = tuple(ops) if ops is not None else None
        self.instruction = instruction
        self.component = component
        module = getattr(fn, "__module__", None)
        qualname = getattr(fn, "__qualname__", None)
        self.reference = reference or (f"{module}:{qualname}" if module and qualname else None)
        self._takes_event, self._takes_feedback = _arity(fn)
        self._takes_emit = _takes_emit(fn)
        self._is_async = _is_async(fn)

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped function directly (decorated functions stay usable as functions)."""
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"FunctionWorker({self.reference or self.fn!r}, name={self._name!r})"

    def with_name(self, name: str) -> FunctionWorker:
        """The same function and contract, proposing for worker ``name``."""
        return FunctionWorker(
            self.fn,
            name=name,
            reads=self.reads,
            writes=self.writes,
            ops=self.ops,
            instruction=self.instruction,
            component=self.component,
            reference=self.reference,
        )

    def to_spec(self) -> dict[str, JSON]:
        """This worker's blueprint entry: ``{"function": reference, "reads", "writes", "ops", ...}``
        (members it does not declare are left out, so blueprint defaults apply)."""
        spec: dict[str, JSON] = {}
        if self.reference and "<locals>" not in self.reference:
            spec["function"] = self.reference
        if self.instruction:
            spec["instruction"] = self.instruction
        if self.reads is not None:
            spec["reads"] = list(self.reads)
        if self.writes is not None:
            spec["writes"] = list(self.writes)
        if self.ops is not None:
            spec["ops"] = list(self.ops)
        return spec

    def check_contract(self, contract: WorkerContract) -> None:
        """Raise WorkerConfigError when a contract this worker declares (reads, writes, ops)
        differs from the blueprint's contract for it."""
        problems = []
        declared = (
            ("reads", self.reads, [p.text for p in contract.reads]),
            ("writes", self.writes, [p.text for p in contract.writes]),
            ("ops", self.ops, sorted(contract.ops)),
        )
        for label, mine, theirs in declared:
            if mine is not None and set(mine) != set(theirs):
                problems.append(f"{label}: declared {sorted(mine)}, blueprint has {sorted(theirs)}")
        if problems:
            raise WorkerConfigError(f"function worker {contract.name!r} contract mismatch: " + "; ".join(problems))

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Run the function on the view (see the class for the guarantees)."""
        started = time.perf_counter()
        diagnostics: dict[str, JSON] = {"kind": self.kind, "function": self.reference or self._name}
        args: list[Any] = [view, event] if self._takes_event else [view]
        kwargs: dict[str, Any] = {"feedback": feedback} if self._takes_feedback else {}
        if self._takes_emit:
            kwargs["emit"] = progress_emitter()
        try:
            if self._is_async:
                result = await self.fn(*args, **kwargs)
            else:
                result = await run_in_thread(self.fn, *args, **kwargs)
                if inspect.isawaitable(result):  # a plain function that returns a coroutine
                    result = await result
        except Exception as exc:
            logger.exception("worker %s: function %s raised", self._name, self.reference or self.fn)
            error = f"{type(exc).__name__}: {exc}"
            # The kernel rejects a call that failed at stage ``model`` with this reason (as a
            # timeout), so the log says the function raised, not that its reply was "not valid JSON".
            raised = f"function {self.reference or self._name} raised {error}"
            diagnostics.update({"error": error, "error_type": type(exc).__name__, "model_error": raised[:2000]})
            return WorkerReply("", self._usage(started, None), diagnostics=diagnostics)
        return self._reply(result, started, diagnostics)

    def _usage(self, started: float, reported: Usage | None) -> Usage:
        latency = round((time.perf_counter() - started) * 1000.0, 3)
        if reported is None:
            return Usage(0, 0, latency, self.component)
        return Usage(reported.tokens_in, reported.tokens_out, reported.latency_ms or latency, self.component)

    def _reply(self, result: Any, started: float, diagnostics: dict[str, JSON]) -> WorkerReply:
        if isinstance(result, WorkerReply):
            merged = {**diagnostics, **result.diagnostics}
            return WorkerReply(result.patch, self._usage(started, result.usage), result.expand, merged, result.raw)
        reported: Usage | None = None
        expand: tuple[str, ...] = ()
        patch: Any = result
        if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], Usage):
            patch, reported = result
        elif isinstance(result, dict) and "patch" in result:
            patch = result["patch"]
            raw_usage = result.get("usage")
            if isinstance(raw_usage, Usage):
                reported = raw_usage
            elif isinstance(raw_usage, dict):
                reported = Usage.from_json(raw_usage)
            raw_expand = result.get("expand")
            if isinstance(raw_expand, (list, tuple)):
                expand = tuple(h for h in raw_expand if isinstance(h, str))
        if isinstance(patch, dict) and "op" in patch:
            patch = [patch]
        if declined_reason(patch) is not None:
            pass  # {"decline": reason}: the kernel logs it as a no-op (stage decline)
        elif patch is None:
            diagnostics["error"] = "the function returned no patch"
            patch = ""
        elif not isinstance(patch, (list, str, bytes, bytearray)):
            diagnostics["error"] = f"the function returned a {type(patch).__name__}, not a patch"
            diagnostics["returned"] = jsonable(patch, 500)
            patch = ""
        return WorkerReply(patch, self._usage(started, reported), expand, diagnostics)


@overload
def function_worker(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    reads: Sequence[str] | None = None,
    writes: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    instruction: str = "",
    component: str = DEFAULT_COMPONENT,
) -> FunctionWorker: ...


@overload
def function_worker(
    *,
    name: str | None = None,
    reads: Sequence[str] | None = None,
    writes: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    instruction: str = "",
    component: str = DEFAULT_COMPONENT,
) -> Callable[[Callable[..., Any]], FunctionWorker]: ...


def function_worker(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    reads: Sequence[str] | None = None,
    writes: Sequence[str] | None = None,
    ops: Sequence[str] | None = None,
    instruction: str = "",
    component: str = DEFAULT_COMPONENT,
) -> FunctionWorker | Callable[[Callable[..., Any]], FunctionWorker]:
    """Declare a function worker with its contract: ``@function_worker`` or
    ``@function_worker(reads=[...], writes=[...], ops=[...])``. The result is a FunctionWorker
    that can still be called as the plain function."""

    def make(f: Callable[..., Any]) -> FunctionWorker:
        return FunctionWorker(
            f, name=name, reads=reads, writes=writes, ops=ops, instruction=instruction, component=component
        )

    if fn is not None:
        return make(fn)
    return make
