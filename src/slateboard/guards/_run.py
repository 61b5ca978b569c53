"""Running a board's guards: function guards, the ``GuardSet`` and the engine's guarded decision.

``GuardSet.prepare(kernel, proposal)`` is what the step engine calls in place of
``kernel.prepare`` on a board with guards: the kernel decides; when only the guards' verdicts
are missing (``Decision.unguarded``) the dry decision is aborted, the applicable guards run in
order on copies of the state before and after the patch (stopping at the first refusal: a later
guard, a judge's tokens included, is not spent on a patch already refused), and the kernel
decides again with their verdicts in the proposal's meta, so they are logged in the record.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from .. import telemetry
from ..blueprint.compile import BlueprintError, BlueprintIssue, CompiledBlueprint
from ..blueprint.models import GuardSpec
from ..kernel.canonical import JSON
from ..kernel.guardstage import GUARDS_META
from ..kernel.kernel import Decision, Kernel, Proposal
from ..kernel.patch import apply_ops, check_ops
from ..models import Model, ModelConfigError, ModelError, resolve_model
from ..redaction import redact
from ..workers.base import WorkerConfigError
from ..workers.function import resolve_function, run_in_thread
from ..workers.llm import SpendHook
from ._judge import REASON_LIMIT, Judge

__all__ = ["FunctionGuard", "GuardSet", "GuardVerdict", "build_guards", "function_verdict"]


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    """What a guard function may return: ``ok`` (the patch passes) and why."""

    ok: bool
    reason: str = ""


def function_verdict(name: str, value: object) -> tuple[bool, str] | None:
    """(ok, reason) of a guard function's return value (a bool, ``(bool, reason)``, a mapping
    with a boolean ``ok`` and an optional string ``reason``, or a ``GuardVerdict``); None for
    anything else."""
    if isinstance(value, GuardVerdict):
        ok, reason = value.ok, value.reason
    elif isinstance(value, bool):
        ok, reason = value, ""
    elif isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], bool) and isinstance(value[1], str):
        ok, reason = value
    elif isinstance(value, Mapping) and isinstance(value.get("ok"), bool) and isinstance(value.get("reason", ""), str):
        ok, reason = bool(value["ok"]), str(value.get("reason", ""))
    else:
        return None
    if not ok and not reason:
        reason = f"guard {name!r} refused the patch"
    return ok, reason[:REASON_LIMIT]


class FunctionGuard:
    """Guard ``spec`` on Python callable ``fn(before, after, patch)`` (``worker=`` too when it
    names such a parameter), sync or async. A sync function runs in a daemon thread, so one that
    hangs is left behind at ``spec.timeout`` (Python cannot stop a thread) and the patch refused."""

    def __init__(self, spec: GuardSpec, fn: Callable[..., Any]) -> None:
        self.spec = spec
        self.fn = fn
        self.is_async = _is_async(fn)
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        self.takes_worker = "worker" in params

    async def call(self, worker: str, before: JSON, after: JSON, patch: JSON) -> object:
        """The function's return value (raises what it raises; ``TimeoutError`` past the timeout)."""
        kwargs = {"worker": worker} if self.takes_worker else {}
        async with asyncio.timeout(self.spec.timeout):
            if self.is_async:
                return await self.fn(before, after, patch, **kwargs)
            return await run_in_thread(self.fn, before, after, patch, **kwargs)

    async def check(self, worker: str, before: JSON, after: JSON, patch: JSON) -> dict[str, JSON]:
        """The verdict (``kernel.guardstage``); raising, timing out or returning something that is
        no verdict is a refusal with ``error`` set."""
        spec = self.spec
        out: dict[str, JSON] = {"name": spec.name, "by": "function", "function": spec.function}
        try:
            value = await self.call(worker, before, after, patch)
        except TimeoutError:
            return {**out, "ok": False, "error": "timeout", "reason": f"guard timed out after {spec.timeout:g} s"}
        except Exception as exc:
            why = redact(f"{type(exc).__name__}: {exc}")[:REASON_LIMIT]
            return {**out, "ok": False, "error": "raised", "reason": f"guard raised {why}"}
        found = function_verdict(spec.name, value)
        if found is None:
            what = type(value).__name__
            reason = f"guard returned a {what}, not a verdict (a bool, (bool, reason) or {{ok, reason}})"
            return {**out, "ok": False, "error": "verdict", "reason": reason}
        out["ok"], out["reason"] = found
        return out


def _is_async(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` gives a coroutine (an ``async def``, also as a callable object's
    ``async def __call__`` or behind a ``functools.partial``)."""
    inner = getattr(fn, "func", None)
    return any(inspect.iscoroutinefunction(f) for f in (fn, getattr(fn, "__call__", None), inner) if f is not None)  # noqa: B004


Guard = FunctionGuard | Judge


class GuardSet:
    """A board's built guards, in the blueprint's order (``build_guards``). ``spend`` is the
    hook every judge's call reserves against (a session's spend guard sets it)."""

    def __init__(self, digest: str, guards: list[Guard]) -> None:
        self.digest = digest
        self.guards = guards

    @property
    def spend(self) -> SpendHook | None:
        """The judges' spend hook."""
        return next((g.spend for g in self.guards if isinstance(g, Judge)), None)

    @spend.setter
    def spend(self, hook: SpendHook | None) -> None:
        for g in self.guards:
            if isinstance(g, Judge):
                g.spend = hook

    async def verdicts(self, worker: str, before: JSON, after: JSON, patch: JSON) -> list[JSON]:
        """The verdicts of the guards that check ``worker``, in order, up to the first refusal.
        Each function gets its own copies of the states and the patch (one may not change what
        the next one sees)."""
        frozen = [orjson.dumps(v) for v in (before, after, patch)]
        out: list[JSON] = []
        for g in self.guards:
            if g.spec.workers and worker not in g.spec.workers:
                continue
            b, a, p = (orjson.loads(x) for x in frozen)
            with telemetry.span("slateboard.guard", {"slateboard.guard": g.spec.name}):  # telemetry hook
                verdict = await (g.check(worker, b, a, p) if isinstance(g, FunctionGuard) else g.check(worker, a, p))
            out.append(verdict)
            if verdict.get("ok") is not True:
                break
        return out

    async def prepare(self, kernel: Kernel, proposal: Proposal) -> Decision:
        """``kernel.prepare(proposal)``, with the guards run and their verdicts logged when the
        kernel needs them (see the module docstring). The kernel is not pending while the guards
        run: the caller holds the board's lock, nothing else decides meanwhile."""
        decision = kernel.prepare(proposal)
        if not decision.unguarded:
            return decision
        patch = orjson.loads(decision.record.patch or "[]")
        kernel.abort(decision)
        before = orjson.loads(orjson.dumps(kernel.state))
        after = apply_ops(orjson.loads(orjson.dumps(before)), check_ops(patch)).root
        verdicts = await self.verdicts(proposal.worker, before, after, patch)
        return kernel.prepare(replace(proposal, meta={**proposal.meta, GUARDS_META: verdicts}))


def build_guards(
    blueprint: CompiledBlueprint,
    *,
    functions: Mapping[str, Callable[..., Any]] | None = None,
    models: Mapping[str, Model | str] | None = None,
    judges: bool = True,
) -> GuardSet | None:
    """The guards of ``blueprint`` (None when it declares none). A function is taken from
    ``functions`` (by its reference or the guard's name) or imported; a judge's model from
    ``models`` (by the guard's name) or its model string; ``judges=False`` builds the function
    guards only (re-running them needs no model). Raises BlueprintError naming every
    guard whose function cannot be imported or whose model cannot be resolved."""
    specs = blueprint.spec.guards
    if not specs:
        return None
    functions, models = functions or {}, models or {}
    built: list[Guard] = []
    issues: list[BlueprintIssue] = []
    for i, spec in enumerate(specs):
        try:
            if spec.function is not None:
                fn = functions.get(spec.function) or functions.get(spec.name) or resolve_function(spec.function)
                built.append(FunctionGuard(spec, fn))
            elif judges:
                built.append(Judge(spec, resolve_model(models.get(spec.name, spec.model))))
        except (WorkerConfigError, ModelConfigError, ModelError) as exc:
            where = "function" if spec.function is not None else "model"
            issues.append(BlueprintIssue(f"/guards/{i}/{where}", f"guard {spec.name!r}: {redact(str(exc))}"))
    if issues:
        raise BlueprintError(issues, "guards")
    return GuardSet(blueprint.digest, built)
