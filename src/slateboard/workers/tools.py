"""Tools an LLM worker may call before proposing: plain Python callables, sync or async.

The protocol is provider-neutral: the model replies ``{"tool": NAME, "args": {...}}``; the worker
runs the tool and sends the result back as a user message, up to a bounded number of calls (see
``LLMWorker``). A tool never sees or changes the board; what it returns is only text for the model.

An ``untrusted`` tool (one whose output may carry injected instructions: web pages, mail, a third
party's MCP server) is treated as ``untrusted=`` workers are (issue 29): its output is never shown
to the calling model; the worker appends it to the blueprint's quarantine region with its patch,
where only a worker whose read contract names the region (the sanitiser) reads it and releases
what it judges safe. Tools are trusted by default: a tool is code the board's owner chose, its
output is text only for the calling worker, whose patch still passes every kernel stage, and
the quarantine needs a region and a sanitiser that a blueprint has to declare.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

import pydantic

from ..kernel.canonical import JSON
from .base import WorkerConfigError, jsonable

__all__ = ["Tool", "ToolResult", "args_model_for", "args_schema", "as_tool", "quarantine_target", "tool"]

_MAX_RESULT_CHARS = 2000


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call: ``ok`` with a JSON ``value``, or the ``error`` text."""

    name: str
    ok: bool
    value: JSON = None
    error: str | None = None

    def output(self) -> str:
        """The whole output as text: a string value as it is, another value as JSON, the error
        of a failed call (what an untrusted tool's call puts into quarantine)."""
        import orjson

        if not self.ok:
            return f"error: {self.error}"
        return self.value if isinstance(self.value, str) else orjson.dumps(self.value).decode("utf-8")

    def message(self) -> str:
        """The text sent back to the model (clipped to a bounded size)."""
        import orjson

        if self.ok:
            text = orjson.dumps(self.value).decode("utf-8")
            if len(text) > _MAX_RESULT_CHARS:
                text = text[: _MAX_RESULT_CHARS - 1] + "…"
            return f"Tool {self.name!r} returned: {text}"
        return f"Tool {self.name!r} failed: {self.error}"


@dataclass(frozen=True, slots=True)
class Tool:
    """A named callable a worker may call with keyword arguments.

    ``parameters`` is the JSON Schema of the ``args`` object (used in the prompt and, with
    constrained decoding, in the reply schema; self-contained: no ``$ref``). ``args_model``,
    when set (derived from the type hints), validates and converts the arguments through
    pydantic before the call: ``Literal``, ``list[int]``, nested models, enums and ``Field``
    bounds are enforced, and the function receives converted values (model instances, enum
    members). ``call`` never raises for a tool's own failure (bad arguments, an exception
    inside): it returns a failed ToolResult the model can read. ``untrusted``: its output goes
    to the quarantine region, never into the calling model's prompt (see the module docstring).
    """

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: Mapping[str, Any] | None = None
    args_model: type[pydantic.BaseModel] | None = None
    untrusted: bool = False

    async def call(self, args: Mapping[str, JSON]) -> ToolResult:
        """Run the tool with ``args`` (awaiting it when it is async)."""
        if not isinstance(args, Mapping):
            return ToolResult(self.name, False, error=f"args must be an object, got {type(args).__name__}")
        kwargs: dict[str, Any] = dict(args)
        if self.args_model is not None:
            try:
                validated = self.args_model.model_validate(kwargs)
            except pydantic.ValidationError as exc:
                return ToolResult(self.name, False, error=f"bad arguments: {_errors(exc)}")
            # Only the arguments given (or defaulted), as converted values, not re-dumped dicts.
            kwargs = {k: getattr(validated, k) for k in type(validated).model_fields}
        try:
            result = self.fn(**kwargs)
            if inspect.isawaitable(result):
                result = await result
        except TypeError as exc:
            return ToolResult(self.name, False, error=f"bad arguments: {exc}")
        except Exception as exc:
            return ToolResult(self.name, False, error=f"{type(exc).__name__}: {exc}")
        return ToolResult(self.name, True, value=jsonable(result))


def _errors(exc: pydantic.ValidationError) -> str:
    """One line per problem, ``path: message`` (what the model needs to fix its call)."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ())) or "args"
        parts.append(f"{where}: {err.get('msg', 'invalid')}")
    return "; ".join(parts)


def _inline_refs(node: Any, defs: Mapping[str, Any], depth: int = 0) -> Any:
    """``node`` with every local ``$ref`` replaced by its definition: the args schema is embedded
    inside the worker's reply schema, where root-relative references would not resolve."""
    if depth > 32:  # a recursive model: stop inlining, accept any value there
        return {}
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            target = defs.get(ref.removeprefix("#/$defs/"), {})
            rest = {k: v for k, v in node.items() if k != "$ref"}
            return _inline_refs({**target, **rest}, defs, depth + 1)
        return {k: _inline_refs(v, defs, depth + 1) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs, depth + 1) for v in node]
    return node


def args_model_for(fn: Callable[..., Any], name: str) -> type[pydantic.BaseModel] | None:
    """A pydantic model of ``fn``'s keyword arguments from its type hints (unannotated ones are
    ``Any``; extra arguments are refused), or None when the signature cannot be read."""
    try:
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn, include_extras=True)
    except (TypeError, ValueError, NameError):
        return None
    fields: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            continue
        annotation = hints.get(pname, Any)
        fields[pname] = (annotation, ... if param.default is param.empty else param.default)
    try:
        return pydantic.create_model(
            f"{name}_args", __config__=pydantic.ConfigDict(extra="forbid", arbitrary_types_allowed=True), **fields
        )
    except (pydantic.PydanticUserError, TypeError) as exc:
        raise WorkerConfigError(f"tool {name!r}: cannot derive its argument schema: {exc}") from None


def args_schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The self-contained JSON Schema (no ``$ref``, no titles) of a tool's arguments."""
    schema = model.model_json_schema()
    inlined: dict[str, Any] = _inline_refs(schema, schema.get("$defs", {}))
    inlined.pop("title", None)
    return inlined


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    untrusted: bool = False,
) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    untrusted: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    untrusted: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a tool: ``@tool``, ``@tool(name=..., description=..., parameters=...)`` or
    ``tool(fn, name=...)``; ``untrusted=True`` quarantines its output (module docstring).

    The name defaults to the function's name, the description to its docstring's first line,
    and the parameters schema to the one pydantic derives from its type hints (then arguments
    are validated and converted before each call); an explicit ``parameters`` schema is used
    as given, without validation.
    """

    def make(f: Callable[..., Any]) -> Tool:
        doc = (inspect.getdoc(f) or "").strip().splitlines()
        tool_name = name or str(getattr(f, "__name__", "tool"))
        model = args_model_for(f, tool_name) if parameters is None else None
        if parameters is not None:
            schema: dict[str, Any] = dict(parameters)
        else:
            schema = args_schema(model) if model is not None else {"type": "object"}
        return Tool(
            tool_name,
            f,
            description if description is not None else (doc[0] if doc else ""),
            schema,
            model,
            untrusted,
        )

    if fn is not None:
        return make(fn)
    return make


def as_tool(item: Tool | Callable[..., Any]) -> Tool:
    """A Tool from a Tool or a plain callable (declared with the defaults of ``tool``)."""
    if isinstance(item, Tool):
        return item
    if callable(item):
        return tool(item)
    raise WorkerConfigError(f"not a tool: {item!r} (expected a Tool or a callable)")


def quarantine_target(blueprint: Any, worker: str) -> str | None:
    """Where ``worker``'s untrusted tools put their output: the first of its write patterns that
    lies inside the blueprint's quarantine region and appends to a literal path (e.g.
    ``/quarantine/-``); None when the blueprint has no region or the worker no such pattern."""
    region = getattr(blueprint, "quarantine", None)
    contract = blueprint.workers.get(worker)
    if region is None or contract is None:
        return None
    base: list[str] = []
    for token in region.tokens:
        if token in ("*", "**", "-"):
            break
        base.append(token)
    if not base:
        return None
    for p in contract.writes:
        tokens = list(p.tokens)
        literal = all(t not in ("*", "**", "-") for t in tokens[:-1])
        if tokens[: len(base)] == base and len(tokens) > len(base) and tokens[-1] == "-" and literal:
            return str(p.text)
    return None
