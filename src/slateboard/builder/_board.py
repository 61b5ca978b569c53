"""``Board``: a blueprint declared in Python, producing the same ``Blueprint`` model as YAML.

The builder is a front, not a second engine: ``Board.blueprint()`` is a plain ``Blueprint`` (so
``to_yaml()`` and back give the same digest) and ``Board.build()`` goes through the one-report
``compile_blueprint``. Contract paths are pointer-pattern strings or ``ref(State, selector)``
typed paths. Rules, invariants, ``done`` and ``fail`` are CEL strings: CEL is the logged,
replayable form. A Python invariant (``python_invariant``) is accepted because the kernel logs
its verdict (a rejection reason) like any invariant's; it must be a pure function of the node.
Every mistake the builder can see (a duplicate worker name, a function whose signature is not a
function worker's, a state that is not a pydantic model) is a BlueprintError raised while the
board is being declared or built, naming the worker and the field, never during a run.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import Annotated, Any, Generic, TypeVar, get_args, get_origin

from pydantic import BaseModel

from ..blueprint.compile import BlueprintError, BlueprintIssue, CompiledBlueprint, compile_blueprint
from ..blueprint.gather import gather_issues
from ..blueprint.models import (
    BatchSpec,
    Blueprint,
    InvariantSpec,
    JoinPart,
    JoinSpec,
    OpName,
    RuleSpec,
    Trigger,
    TriggerOp,
    WorkerSpec,
)
from ..blueprint.output_type import OutputType
from ..blueprint.state_schema import StateNotExpressible, closed_state_schema
from ..kernel.pointer import PointerError, parse_pointer
from ._paths import _unwrap

__all__ = ["Board", "part"]

S = TypeVar("S", bound=BaseModel)
F = TypeVar("F", bound=Callable[..., Any])

_FUNCTION_EXTRAS = frozenset({"event", "feedback"})

_BUILDING: ContextVar[tuple[Board[Any], ...]] = ContextVar("slateboard_building_boards", default=())
"""The boards whose blueprint is being made, outermost first (a sub-board cycle check)."""


def _error(where: str, message: str) -> BlueprintError:
    return BlueprintError([BlueprintIssue(where, message)])


def part(on: TriggerOp, path: str, *, key: str, when: str | None = None) -> JoinPart:
    """One part of a join (``Board.join``): a committed ``on`` change at ``path`` (a pattern or a
    ``ref(...)``), counted when CEL ``when`` holds, correlated by CEL ``key`` (over ``value``,
    ``event``, ``bindings``, ``state``, like a rule's condition)."""
    return JoinPart(on=Trigger(op=on, path=path), key=key, when=when)


def _bare(annotation: Any) -> Any:
    """``annotation`` without ``Annotated[...]`` metadata (constraints stay in the schema)."""
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


class Board(Generic[S]):
    """A blueprint under construction over the state model ``state`` (a pydantic model class).

    The state schema is the model's JSON Schema with every object closed (``additionalProperties:
    false``) unless its model says ``extra="allow"``, so a path or CEL field naming no field is a
    BlueprintError when the board is built; slateboard keywords (``x-refers-to``...) go in
    ``Field(json_schema_extra={...})``. ``initial`` is the initial state (default: the model's
    defaults).
    """

    def __init__(self, name: str, state: type[S], *, initial: S | None = None, description: str = "") -> None:
        if not (isinstance(state, type) and issubclass(state, BaseModel)):
            raise _error("schema", f"Board(state=...) takes a pydantic model class, got {state!r}")
        self.name = name
        self.state = state
        self.description = description
        self._initial = initial
        self._workers: dict[str, WorkerSpec] = {}
        self._functions: dict[str, Callable[..., Any]] = {}
        self._rules: list[RuleSpec] = []
        self._invariants: list[InvariantSpec] = []
        self._python_invariants: list[tuple[str, Callable[..., Any], str | None]] = []
        self._guards: list[dict[str, Any]] = []
        self._extra: dict[str, Any] = {}
        self._boards: dict[str, Board[Any] | None] = {}

    def _add(self, name: str, spec: dict[str, Any]) -> None:
        if name in self._workers:
            raise _error(f"workers/{name}", f"worker {name!r} is declared twice")
        try:
            self._workers[name] = WorkerSpec.model_validate(spec)
        except ValueError as exc:
            raise _error(
                f"workers/{name}", str(exc).splitlines()[0] + ": " + " ".join(str(exc).splitlines()[1:3])
            ) from None

    def llm_worker(
        self,
        name: str,
        *,
        instruction: str,
        reads: Sequence[str],
        writes: Sequence[str] = (),
        ops: Sequence[OpName] = ("add", "replace", "test"),
        model: str | None = None,
        view_budget: int = 4000,
        max_invocations: int | None = None,
        output: str | None = None,
        output_type: Any = None,
    ) -> None:
        """Declare an LLM worker: its role instruction, model string and read/write contract.

        ``output`` (a concrete pointer, or ``ref(...)``) makes the worker typed: the model
        replies with one JSON value, decoded against the state schema at that pointer, and the
        worker proposes adding it there (``WorkerSpec.output``; ``writes`` defaults to it).
        ``output_type`` states the Python type of that value: the state model's field at
        ``output`` must be of that type (a list of it, for an append pointer), else a
        BlueprintError naming the worker and the field; the schema is the state's, so the
        kernel checks each reply at stage ``schema`` and the worker retries with the reason.
        """
        if output_type is not None:
            if output is None:
                raise _error(
                    f"workers/{name}/output_type", "output_type needs output=<the state path it is written to>"
                )
            OutputType.of(output_type, f"workers/{name}/output_type")
            self._check_output_type(name, output, output_type)
        spec: dict[str, Any] = {
            "instruction": instruction,
            "reads": list(reads),
            "writes": list(writes) if writes or output is None else [output],
            "ops": list(ops),
            "view_budget": view_budget,
        }
        if model is not None:
            spec["model"] = model
        if max_invocations is not None:
            spec["max_invocations"] = max_invocations
        if output is not None:
            spec["output"] = output
        self._add(name, spec)

    def _check_output_type(self, worker: str, output: str, output_type: Any) -> None:
        """The state model's field at ``output`` must hold ``output_type`` (one value of it; an
        item of the list, for an append pointer)."""
        where = f"workers/{worker}/output_type"
        try:
            tokens = parse_pointer(output)
        except PointerError as exc:
            raise _error(f"workers/{worker}/output", str(exc)) from None
        annotation: Any = self.state
        for token in tokens:
            inner = _unwrap(annotation)
            if isinstance(inner, type) and issubclass(inner, BaseModel):
                field = next(
                    (f for n, f in inner.model_fields.items() if (f.alias or n) == token),
                    None,
                )
                if field is None:
                    raise _error(where, f"{inner.__name__} has no field {token!r} (output {output!r})")
                annotation = field.annotation
            elif get_origin(inner) is list or inner is list:
                args = get_args(inner)
                annotation = args[0] if args else Any
            else:
                raise _error(where, f"output {output!r}: {token!r} is below a value that is neither a model nor a list")
        if _bare(_unwrap(annotation)) != _bare(output_type):
            shown = getattr(annotation, "__name__", repr(annotation))
            raise _error(
                where,
                f"the state field at {output} is {shown}, not {getattr(output_type, '__name__', output_type)!r}: "
                "the state model's field sets the schema the kernel checks",
            )

    def function(
        self,
        *,
        reads: Sequence[str],
        writes: Sequence[str],
        ops: Sequence[OpName] = ("add", "replace", "test"),
        name: str | None = None,
    ) -> Callable[[F], F]:
        """Decorator declaring a function worker. The function takes the view as its first
        parameter (optionally ``event`` and ``feedback`` after it) and returns a patch. It must be
        defined at module level: the blueprint refers to it as ``"module:qualname"``."""

        def declare(fn: F) -> F:
            worker = name or fn.__name__
            where = f"workers/{worker}/function"
            if not callable(fn):
                raise _error(where, f"{fn!r} is not callable")
            params = list(inspect.signature(fn).parameters.values())
            if not params or params[0].kind not in (params[0].POSITIONAL_ONLY, params[0].POSITIONAL_OR_KEYWORD):
                raise _error(where, f"{fn.__qualname__} must take the view as its first positional parameter")
            unknown = [p.name for p in params[1:] if p.name not in _FUNCTION_EXTRAS and p.default is p.empty]
            if unknown:
                raise _error(
                    where,
                    f"{fn.__qualname__} has parameters {unknown} a function worker is never given "
                    "(after the view only 'event' and 'feedback')",
                )
            if "<locals>" in fn.__qualname__:
                raise _error(where, f"{fn.__qualname__} is defined inside a function; declare it at module level")
            self._add(
                worker,
                {
                    "function": f"{fn.__module__}:{fn.__qualname__}",
                    "reads": list(reads),
                    "writes": list(writes),
                    "ops": list(ops),
                },
            )
            self._functions[worker] = fn
            return fn

        return declare

    def sub_board(
        self,
        name: str,
        blueprint: Board[Any] | Blueprint | dict[str, Any] | str,
        *,
        reads: Sequence[str],
        output: str,
        inputs: dict[str, str] | None = None,
        each: str | None = None,
        max_parallel: int = 4,
        max_items: int = 1000,
    ) -> None:
        """Declare a sub-board worker (``WorkerSpec.board``, docs/composing.md): it runs a child
        board of ``blueprint`` (a ``Board``, a ``Blueprint``, its JSON, a file path or
        ``template:NAME``) started from ``inputs`` (child member -> a pointer into this board's
        state, or CEL over ``state``, ``item`` and ``index``), one per item of ``each`` when
        given, and proposes its answer (the list of answers, with ``each``) at ``output``. A
        child ``Board`` that contains this one (directly or through others) is a BlueprintError
        when the board is built, and so is one with Python invariants (they are not part of a
        blueprint, so a child board could not hold them)."""
        board: dict[str, Any] = {"blueprint": blueprint, "inputs": dict(inputs or {})}
        board.update(max_parallel=max_parallel, max_items=max_items)
        if each is not None:
            board["each"] = each
        self._boards[name] = blueprint if isinstance(blueprint, Board) else None
        if isinstance(blueprint, Board):
            board["blueprint"] = {}  # filled in by blueprint(), when the child is complete
        elif isinstance(blueprint, Blueprint):
            board["blueprint"] = blueprint.to_json()
        self._add(name, {"reads": list(reads), "writes": [output], "output": output, "board": board})

    def _children(self, data: dict[str, Any]) -> None:
        """Put each child ``Board``'s blueprint in ``data`` (see ``sub_board``)."""
        for name, child in self._boards.items():
            if child is None:
                continue
            where = f"workers/{name}/board/blueprint"
            if child in _BUILDING.get():
                names = " -> ".join(b.name for b in (*_BUILDING.get(), child))
                raise _error(where, f"sub-board cycle: the board names itself ({names})")
            if child._python_invariants:
                raise _error(where, f"board {child.name!r} has Python invariants, which a child board cannot hold")
            token = _BUILDING.set((*_BUILDING.get(), child))
            try:
                data["workers"][name]["board"]["blueprint"] = child.blueprint().to_json()
            finally:
                _BUILDING.reset(token)

    def rule(
        self,
        invoke: str,
        *,
        on: TriggerOp = "any",
        path: str = "",
        when: str | None = None,
        name: str | None = None,
        priority: int = 0,
    ) -> None:
        """Wake worker ``invoke`` after a committed ``on`` change at ``path`` when CEL ``when`` holds."""
        self._rules.append(
            RuleSpec(name=name, on=Trigger(op=on, path=path), when=when, invoke=invoke, priority=priority)
        )

    def join(
        self,
        invoke: str,
        parts: Mapping[str, JoinPart],
        *,
        name: str,
        within_versions: int | None = None,
        within_seconds: float | None = None,
        max_keys: int | None = None,
        priority: int = 0,
    ) -> None:
        """Wake worker ``invoke`` once per correlation key, when every one of ``parts`` (made with
        ``part``) has happened for that key, within the window; its invocation's event names the
        key and the event of each part. A bound out of range is a BlueprintError naming the rule."""
        spec = JoinSpec(
            parts=dict(parts), within_versions=within_versions, within_seconds=within_seconds, max_keys=max_keys
        )
        self._gathering(RuleSpec(name=name, invoke=invoke, priority=priority, join=spec))

    def batch(
        self,
        invoke: str,
        *,
        on: TriggerOp = "any",
        path: str = "",
        size: int,
        seconds: float | None = None,
        when: str | None = None,
        name: str,
        priority: int = 0,
    ) -> None:
        """Wake worker ``invoke`` with a batch of the committed ``on`` changes at ``path`` (where
        CEL ``when`` holds) once ``size`` have arrived, or ``seconds`` after the first of them (a
        logged timer record). A size or timeout out of range is a BlueprintError naming the rule."""
        spec = BatchSpec(size=size, seconds=seconds)
        trigger = Trigger(op=on, path=path)
        self._gathering(RuleSpec(name=name, on=trigger, when=when, invoke=invoke, priority=priority, batch=spec))

    def _gathering(self, rule: RuleSpec) -> None:
        """Add a join or batch rule, or raise the BlueprintError of the bounds it breaks."""
        issues = gather_issues(rule, len(self._rules))
        if issues:
            raise BlueprintError([BlueprintIssue(where, message) for where, message in issues])
        self._rules.append(rule)

    def invariant(self, rule: str, *, at: str = "", message: str | None = None, name: str | None = None) -> None:
        """A CEL invariant every committed state must satisfy at location pattern ``at``."""
        self._invariants.append(InvariantSpec(name=name, at=at, rule=rule, message=message))

    def python_invariant(self, at: str, func: Callable[..., Any], *, name: str | None = None) -> None:
        """A Python invariant (``func(ctx)`` returns None or the rejection reason); its verdict is
        logged like a CEL one. It is not part of the blueprint's YAML or digest."""
        self._python_invariants.append((at, func, name))

    def guard(
        self,
        *,
        name: str | None = None,
        workers: Sequence[str] = (),
        timeout: float = 30.0,
        shares_reason: bool = False,
    ) -> Callable[[F], F]:
        """Decorator declaring a function guard (a stage after the invariants, see
        ``slateboard.guards``): ``fn(before, after, patch)`` returns a bool, ``(bool, reason)`` or
        ``{ok, reason}``. Defined at module level: the blueprint refers to it as ``"module:qualname"``."""

        def declare(fn: F) -> F:
            if "<locals>" in getattr(fn, "__qualname__", "<locals>"):
                raise _error(f"guards/{name or fn}", f"{fn!r} must be a function defined at module level")
            spec = {"name": name or fn.__name__, "function": f"{fn.__module__}:{fn.__qualname__}"}
            self._guards.append({**spec, **self._guard_terms(workers, timeout, shares_reason)})
            return fn

        return declare

    def judge(
        self,
        name: str,
        *,
        model: str,
        instruction: str,
        verdict: dict[str, str] | None = None,
        context: Sequence[str] = (),
        workers: Sequence[str] = (),
        timeout: float = 30.0,
        max_tokens: int = 256,
        shares_reason: bool = False,
    ) -> None:
        """A model judge guard: ``model`` checks each patch against ``instruction`` and replies
        with ``verdict`` (default ``{"ok": "bool", "reason": "str"}``), shown the patch and the
        ``context`` pointers of the state after it."""
        spec: dict[str, Any] = {"name": name, "model": model, "instruction": instruction, "max_tokens": max_tokens}
        if verdict is not None:
            spec["verdict"] = dict(verdict)
        if context:
            spec["context"] = list(context)
        self._guards.append({**spec, **self._guard_terms(workers, timeout, shares_reason)})

    @staticmethod
    def _guard_terms(workers: Sequence[str], timeout: float, shares_reason: bool) -> dict[str, Any]:
        out: dict[str, Any] = {"timeout": timeout, "shares_reason": shares_reason}
        if workers:
            out["workers"] = list(workers)
        return out

    def settings(self, **members: Any) -> None:
        """Other blueprint members (``done``, ``fail``, ``answer``, ``limits``, ``circuit``...)."""
        self._extra.update(members)

    def blueprint(self) -> Blueprint:
        """The declared board as a ``Blueprint`` model (shape-checked; ``build()`` checks the rest)."""
        try:
            schema = closed_state_schema(self.state)
        except StateNotExpressible as exc:
            raise _error("/schema", str(exc)) from None
        initial = self._initial if self._initial is not None else self._defaults()
        data: dict[str, Any] = {
            "name": self.name,
            "schema": schema,
            "initial_state": initial.model_dump(mode="json", by_alias=True, exclude_none=True) if initial else {},
            "workers": {k: v.model_dump(mode="json", exclude_none=True) for k, v in self._workers.items()},
            "rules": [r.model_dump(mode="json", exclude_none=True) for r in self._rules],
            "invariants": [i.model_dump(mode="json", exclude_none=True) for i in self._invariants],
            **({"guards": list(self._guards)} if self._guards else {}),
            **self._extra,
        }
        if self.description:
            data["description"] = self.description
        token = _BUILDING.set(_BUILDING.get() or (self,))
        try:
            self._children(data)
        finally:
            _BUILDING.reset(token)
        try:
            return Blueprint.model_validate(data)
        except ValueError as exc:
            raise _error("", str(exc)) from None

    def _defaults(self) -> S:
        """The state model's defaults (the initial state when none was given); a BlueprintError
        at ``initial_state`` when a field has no default."""
        try:
            return self.state()
        except ValueError as exc:  # pydantic's ValidationError
            missing = ", ".join(str(e["loc"][0]) for e in getattr(exc, "errors", list)() if e.get("loc")) or str(exc)
            raise _error(
                "/initial_state", f"{self.state.__name__} has fields without a default ({missing}): pass initial=..."
            ) from None

    def build(self) -> CompiledBlueprint:
        """Compile the board with the one-report validation of the YAML route (BlueprintError lists
        every issue); ``typed_state(result.state)`` then gives a ``state`` instance."""
        compiled = compile_blueprint(self.blueprint(), source_label=f"board {self.name}", schema=self.state)
        for at, func, name in self._python_invariants:
            compiled.add_invariant(at, func, name=name)
        return compiled
