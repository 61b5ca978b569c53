"""Building workers from a blueprint: ``make_worker`` picks the kind from the WorkerSpec."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..kernel.canonical import JSON
from ..models import Model, resolve_model
from .base import Worker, WorkerConfigError
from .function import FunctionWorker, resolve_function
from .llm import Decoding, LLMWorker
from .retention import RetentionWorker
from .tools import Tool

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint

__all__ = ["ToolsArg", "make_worker", "make_workers"]

ToolsArg = Sequence[Tool | Callable[..., Any]] | Mapping[str, Sequence[Tool | Callable[..., Any]]] | None
"""Tools for one worker (a sequence) or per worker name (a mapping)."""


def _function_for(
    name: str,
    reference: str | None,
    functions: Mapping[str, Callable[..., Any] | FunctionWorker],
) -> Callable[..., Any] | FunctionWorker | None:
    if reference is not None and reference in functions:
        return functions[reference]
    if name in functions:
        return functions[name]
    if reference is not None:
        return resolve_function(reference)
    return None


def make_worker(
    blueprint: CompiledBlueprint,
    name: str,
    *,
    model: Model | str | None = None,
    functions: Mapping[str, Callable[..., Any] | FunctionWorker] | None = None,
    tools: ToolsArg = None,
    state: Callable[[], JSON] | None = None,
    decoding: Decoding = "contract",
    **options: Any,
) -> Worker:
    """The worker for blueprint worker ``name``.

    * A spec with ``function: "pkg.mod:callable"`` gives a FunctionWorker; ``functions`` may
      supply the callable under that reference or under the worker's name (otherwise the
      reference is imported). A worker with neither model nor function but an entry in
      ``functions`` is a function worker too. A FunctionWorker that declares a contract must
      match the blueprint's (WorkerConfigError otherwise).
    * Anything else is an LLMWorker on ``model`` (a Model or model string; it overrides the
      spec's ``model``), else the spec's model string, else ``"local"``. ``tools``, ``state``,
      ``decoding`` and ``options`` (LLMWorker keyword arguments) apply to it.

    Raises WorkerConfigError for an unknown worker, an unresolvable function, or tools given to a
    function worker; model strings are resolved at once (ModelConfigError for a bad one).
    """
    contract = blueprint.workers.get(name)
    if contract is None:
        known = ", ".join(sorted(blueprint.workers)) or "none"
        raise WorkerConfigError(f"unknown worker {name!r} (workers: {known})")
    spec = contract.spec
    if spec.board is not None:
        # Its worker runs child boards: the runtime builds it (runtime.subboards), with the store.
        raise WorkerConfigError(f"worker {name!r} is a sub-board worker: a board's runtime builds it")
    bound = blueprint.retention.get(name)
    if bound is not None:
        # A system worker of a retention bound: built from the bound, never overridden.
        return RetentionWorker(bound, state=state, max_ops=blueprint.spec.limits.max_ops)
    own_tools = tools.get(name, ()) if isinstance(tools, Mapping) else (tools or ())
    found = _function_for(name, spec.function, functions or {}) if (spec.function or functions) else None
    if found is not None and spec.model is None:
        if own_tools:
            raise WorkerConfigError(f"worker {name!r} is a function worker: tools are for LLM workers")
        if isinstance(found, FunctionWorker):
            found.check_contract(contract)
            return found if found.name == name else found.with_name(name)
        return FunctionWorker(found, name=name, reference=spec.function)
    return LLMWorker(
        blueprint,
        name,
        model if model is not None else spec.model,
        tools=own_tools,
        state=state,
        decoding=decoding,
        **options,
    )


def make_workers(
    blueprint: CompiledBlueprint,
    *,
    model: Model | str | None = None,
    functions: Mapping[str, Callable[..., Any] | FunctionWorker] | None = None,
    tools: Mapping[str, Sequence[Tool | Callable[..., Any]]] | None = None,
    state: Callable[[], JSON] | None = None,
    decoding: Decoding = "contract",
    **options: Any,
) -> dict[str, Worker]:
    """``make_worker`` for every worker of the blueprint but its sub-board workers (the runtime
    builds those, with the board's store); workers naming the same model string share one
    resolved Model."""
    shared: dict[str, Model] = {}
    out: dict[str, Worker] = {}
    for name, contract in blueprint.workers.items():
        if contract.spec.board is not None:
            continue  # a sub-board worker: built by the runtime (runtime.subboards)
        chosen: Model | str | None = model
        if chosen is None and contract.spec.function is None and not (functions and name in functions):
            # None: SLATEBOARD_MODEL, else the embedded local model (resolve_model decides).
            key = contract.spec.model or os.environ.get("SLATEBOARD_MODEL", "").strip() or "local"
            if key not in shared:
                shared[key] = resolve_model(key)
            chosen = shared[key]
        elif isinstance(chosen, str):
            if chosen not in shared:
                shared[chosen] = resolve_model(chosen)
            chosen = shared[chosen]
        out[name] = make_worker(
            blueprint,
            name,
            model=chosen,
            functions=functions,
            tools=tools,
            state=state,
            decoding=decoding,
            **options,
        )
    return out
