"""Tools an LLM worker may call before proposing: plain Python callables, sync or async.

The protocol is provider-neutral: the model replies ``{"tool": NAME, "args": {...}}``; the worker
runs the tool and sends the result back as a user message, up to a bounded number of calls (see
``LLMWorker``). A tool never sees or changes the board; what it returns is only text for the model.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, overload

from ..kernel.canonical import JSON
from .base import WorkerConfigError, jsonable

__all__ = ["Tool", "ToolResult", "as_tool", "tool"]

_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}
_MAX_RESULT_CHARS = 2000


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The outcome of one tool call: ``ok`` with a JSON ``value``, or the ``error`` text."""

    name: str
    ok: bool
    value: JSON = None
    error: str | None = None

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
    constrained decoding, in the reply schema). ``call`` never raises for a tool's own failure
    (bad arguments, an exception inside): it returns a failed ToolResult the model can read.
    """

    name: str
    fn: Callable[..., Any]
    description: str = ""
    parameters: Mapping[str, Any] | None = None

    async def call(self, args: Mapping[str, JSON]) -> ToolResult:
        """Run the tool with ``args`` (awaiting it when it is async)."""
        if not isinstance(args, Mapping):
            return ToolResult(self.name, False, error=f"args must be an object, got {type(args).__name__}")
        try:
            result = self.fn(**dict(args))
            if inspect.isawaitable(result):
                result = await result
        except TypeError as exc:
            return ToolResult(self.name, False, error=f"bad arguments: {exc}")
        except Exception as exc:
            return ToolResult(self.name, False, error=f"{type(exc).__name__}: {exc}")
        return ToolResult(self.name, True, value=jsonable(result))


def _annotation_schema(annotation: Any) -> dict[str, Any]:
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    origin = typing.get_origin(annotation)
    if origin in (list, tuple):
        return {"type": "array"}
    if origin is dict or annotation is dict:
        return {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        subs = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(subs) == 1:
            return _annotation_schema(subs[0])
    return {}


def _signature_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """A JSON Schema for the keyword arguments of ``fn`` from its annotations (best effort)."""
    try:
        sig = inspect.signature(fn)
        hints = typing.get_type_hints(fn)
    except (TypeError, ValueError, NameError):
        return {"type": "object"}
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        props[name] = _annotation_schema(hints.get(name, param.annotation))
        if param.default is param.empty:
            required.append(name)
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Declare a tool: ``@tool``, ``@tool(name=..., description=..., parameters=...)`` or
    ``tool(fn, name=...)``.

    The name defaults to the function's name, the description to its docstring's first line,
    and the parameters schema to one derived from its annotations.
    """

    def make(f: Callable[..., Any]) -> Tool:
        doc = (inspect.getdoc(f) or "").strip().splitlines()
        return Tool(
            name or str(getattr(f, "__name__", "tool")),
            f,
            description if description is not None else (doc[0] if doc else ""),
            dict(parameters) if parameters is not None else _signature_schema(f),
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
