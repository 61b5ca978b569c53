"""The Python front of the one blueprint model: a board defined with a pydantic state model,
typed contract paths and decorated function workers, built into the same ``Blueprint`` (and
``CompiledBlueprint``) a YAML file gives.

``BoardBuilder`` is a front, not a second engine: ``blueprint()`` returns a ``Blueprint`` (so
``to_yaml()`` writes what a YAML user would have written, with the same digest), ``build()``
compiles it with ``compile_blueprint(..., schema=State)`` (so ``typed_state`` works on results).
Rules, invariants and ``done`` stay CEL strings: the logged, replayable form. Function workers
registered with ``@board.function(...)`` are handed to the Runner through ``board.functions``.

Mistakes are blueprint issues raised when the board is built, never at run time, in one
``BlueprintError`` that lists every issue (the builder's own and the compiler's): a typed path to a
missing field (at once, where it is written), a worker or function declared twice, a rule that
invokes an unknown worker, a function whose signature cannot take a view.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from .blueprint import Blueprint, BlueprintError, BlueprintIssue, CompiledBlueprint, compile_blueprint
from .blueprint.paths import TypedPath, path
from .workers.function import FunctionWorker

__all__ = ["BoardBuilder"]

S = TypeVar("S", bound=BaseModel)
TriggerOp = Literal["start", "add", "replace", "remove", "any"]


class BoardBuilder(Generic[S]):
    """Declares one board in Python (see the module docstring).

    ``state``: the pydantic model of the state (its JSON schema is the blueprint's schema).
    ``initial``: the initial state (default: ``state()``, so every field needs a default then).
    ``p`` is ``path(state)``: the typed paths to write contracts, triggers and invariants with.
    """

    def __init__(
        self, name: str, state: type[S], *, initial: S | None = None, description: str = "", task: str | None = None
    ) -> None:
        self.name = name
        self.state = state
        self.p: TypedPath = path(state)
        self.description = description
        self._initial = initial
        self._task = task
        self._workers: dict[str, dict[str, Any]] = {}
        self._functions: dict[str, FunctionWorker] = {}
        self._rules: list[dict[str, Any]] = []
        self._invariants: list[dict[str, Any]] = []
        self._done: str | None = None
        self._answer: str | None = None
        self._issues: list[BlueprintIssue] = []

    # -- workers ------------------------------------------------------------------------------------
    def _claim(self, name: str) -> bool:
        if not isinstance(name, str) or not name:
            self._issues.append(BlueprintIssue("/workers", f"a worker needs a non-empty name, got {name!r}"))
            return False
        if name in self._workers:
            self._issues.append(BlueprintIssue(f"/workers/{name}", f"worker {name!r} is declared twice"))
            return False
        return True

    def llm_worker(
        self,
        name: str,
        *,
        instruction: str,
        reads: Sequence[str],
        writes: Sequence[str],
        model: str | None = None,
        ops: Sequence[str] | None = None,
        view_budget: int | None = None,
        pinned: Sequence[str] | None = None,
    ) -> None:
        """Declare an LLM worker: its instruction, its read and write contracts (typed paths or
        pointer patterns), optionally its own model string, ops, view budget and pinned paths."""
        if not self._claim(name):
            return
        spec: dict[str, Any] = {"instruction": instruction, "reads": list(reads), "writes": list(writes)}
        for key, value in (("model", model), ("view_budget", view_budget)):
            if value is not None:
                spec[key] = value
        if ops is not None:
            spec["ops"] = list(ops)
        if pinned is not None:
            spec["pinned"] = list(pinned)
        self._workers[name] = spec

    def function(
        self,
        *,
        reads: Sequence[str],
        writes: Sequence[str],
        ops: Sequence[str] | None = None,
        name: str | None = None,
    ) -> Callable[[Callable[..., Any]], FunctionWorker]:
        """Decorator: the function becomes the function worker ``name`` (default: its own name)
        with this contract. It is called with the worker's view (and, when it takes them, the
        triggering ``event`` and the rejection ``feedback``) and returns a patch, as any function
        worker does (``slateboard.workers.function``)."""

        def register(fn: Callable[..., Any]) -> FunctionWorker:
            worker_name = name or str(getattr(fn, "__name__", ""))
            problem = _signature_problem(fn)
            if problem is not None:
                self._issues.append(BlueprintIssue(f"/workers/{worker_name}", problem))
            worker = FunctionWorker(fn, name=worker_name, reads=list(reads), writes=list(writes), ops=ops)
            if self._claim(worker_name):
                self._workers[worker_name] = worker.to_spec()
                self._functions[worker_name] = worker
            return worker

        return register

    @property
    def functions(self) -> dict[str, FunctionWorker]:
        """The function workers by name, for ``Runner(..., functions=board.functions)``."""
        return dict(self._functions)

    # -- workflow -----------------------------------------------------------------------------------
    def rule(
        self,
        invoke: str | FunctionWorker,
        *,
        on: TriggerOp = "start",
        at: str = "",
        when: str | None = None,
        priority: int = 0,
    ) -> None:
        """Schedule ``invoke`` (a worker name or a registered function worker) on a committed
        event: ``on`` the op (``start`` fires once when the board is created), ``at`` the path
        pattern it touches, ``when`` a CEL condition over ``event``, ``value``, ``bindings`` and
        ``state``."""
        name = invoke.name if isinstance(invoke, FunctionWorker) else invoke
        trigger: dict[str, Any] = {"op": on}
        if at:
            trigger["path"] = str(at)
        rule: dict[str, Any] = {"on": trigger, "invoke": name}
        if when is not None:
            rule["when"] = when
        if priority:
            rule["priority"] = priority
        self._rules.append(rule)

    def invariant(self, at: str, rule: str, message: str | None = None) -> None:
        """A CEL invariant at a schema location (``self`` is the node there, ``oldSelf`` its
        previous value, ``root`` the whole state), checked on every proposal that touches it."""
        entry: dict[str, Any] = {"at": str(at), "rule": rule}
        if message is not None:
            entry["message"] = message
        self._invariants.append(entry)

    def done(self, condition: str) -> None:
        """The CEL condition over ``state`` that ends the board ``solved``."""
        self._done = condition

    def answer(self, at: str) -> None:
        """The path of the final answer (``RunResult.answer``)."""
        self._answer = str(at)

    # -- building -----------------------------------------------------------------------------------
    def blueprint(self) -> Blueprint:
        """The ``Blueprint`` this builder declares (not yet compiled); BlueprintError listing
        the builder's issues when there are any."""
        issues = list(self._issues)
        for i, rule in enumerate(self._rules):
            if rule["invoke"] not in self._workers:
                known = ", ".join(sorted(self._workers)) or "none"
                issues.append(BlueprintIssue(f"/rules/{i}/invoke", f"unknown worker {rule['invoke']!r} ({known})"))
        initial = self._initial if self._initial is not None else self._default_state(issues)
        if issues:
            raise BlueprintError(issues, f"built by BoardBuilder({self.name!r})")
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "schema": self.state.model_json_schema(by_alias=True),
            "initial_state": initial.model_dump(mode="json", by_alias=True, exclude_none=True) if initial else {},
            "workers": self._workers,
            "rules": self._rules,
            "invariants": self._invariants,
        }
        for key, value in (("done", self._done), ("answer", self._answer), ("task", self._task)):
            if value is not None:
                data[key] = value
        return Blueprint.model_validate(data)

    def build(self) -> CompiledBlueprint:
        """The compiled blueprint (``compile_blueprint(self.blueprint(), schema=State)``): every
        check the YAML route makes, in one BlueprintError."""
        return compile_blueprint(self.blueprint(), schema=self.state, source_label=f"BoardBuilder({self.name!r})")

    def _default_state(self, issues: list[BlueprintIssue]) -> S | None:
        try:
            return self.state()
        except Exception as exc:  # pydantic's ValidationError: a field without a default
            issues.append(
                BlueprintIssue("/initial_state", f"{self.state.__name__}() needs values ({exc}); pass initial=...")
            )
            return None


def _signature_problem(fn: Callable[..., Any]) -> str | None:
    """Why ``fn`` cannot be a function worker (it must take the view as its first positional
    argument; ``event`` and ``feedback`` may follow), or None."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None  # builtins and C callables: taken as they are
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        return f"function {getattr(fn, '__name__', fn)!r} takes no argument: a function worker is called with its view"
    required = [p for p in positional[1:] if p.default is p.empty and p.name not in ("event", "feedback")]
    if required:
        names = ", ".join(p.name for p in required)
        return (
            f"function {getattr(fn, '__name__', fn)!r} requires ({names}) besides the view: "
            "a function worker is called with its view, and optionally event and feedback"
        )
    return None
