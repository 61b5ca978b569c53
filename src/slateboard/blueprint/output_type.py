"""Typed outputs: a Python type (a pydantic model, usually) as a JSON Schema at a state path.

An ``output_type`` never adds a second validation engine: its JSON Schema is placed in the
board's state schema at the path the typed value is written to, so the kernel checks the value
at stage ``schema`` like any other proposal (and replay re-decides it from the log alone); the
same schema is sent to the model for constrained decoding where the provider can. Python only
turns the committed JSON back into an instance (``OutputType.instance``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from pydantic import TypeAdapter

from .compile import BlueprintError, BlueprintIssue

__all__ = ["OutputType", "embed_schema"]

T = TypeVar("T")

_DEFS = "#/$defs/"


@dataclass(frozen=True, eq=False)
class OutputType(Generic[T]):
    """``output_type`` checked once: its JSON Schema (``schema``, ``$defs`` at its root) and the
    adapter that turns committed JSON into an instance.

    Guarantees: ``OutputType.of`` either returns one whose ``schema`` is a JSON Schema pydantic
    generated for the type, or raises ``BlueprintError`` at ``where`` naming the type and why.
    """

    type: type[T]
    schema: dict[str, Any]
    adapter: TypeAdapter[T]

    @classmethod
    def of(cls, output_type: Any, where: str) -> OutputType[Any]:
        """Check ``output_type`` (a pydantic model or any type pydantic can express as a JSON
        Schema); BlueprintError at ``where`` when it cannot be."""
        name = getattr(output_type, "__name__", repr(output_type))
        if isinstance(output_type, str) or output_type is None:
            raise BlueprintError(
                [BlueprintIssue(where, f"output_type must be a type (e.g. a pydantic model), got {output_type!r}")]
            )
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = adapter.json_schema()
        except Exception as exc:  # pydantic raises several error types for inexpressible types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise BlueprintError(
                [BlueprintIssue(where, f"output_type {name} cannot be expressed as a JSON Schema: {first}")]
            ) from None
        return cls(cast(type[Any], output_type), schema, adapter)

    def instance(self, value: Any) -> T:
        """The committed JSON ``value`` as an instance of the type (the kernel already checked it
        against ``schema``, so this only fails for constraints JSON Schema cannot state)."""
        return self.adapter.validate_python(value)

    def text(self, value: Any) -> str:
        """The JSON text of a committed value (what ``.value`` shows)."""
        return self.adapter.dump_json(self.instance(value)).decode("utf-8")


def embed_schema(schema: dict[str, Any], prefix: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``schema`` (with its own root ``$defs``) split into a subschema to place inside a bigger
    schema and the definitions to merge into that schema's root ``$defs``: every definition is
    renamed ``<prefix><name>`` and every local reference rewritten, so two embedded types never
    collide."""
    body = copy.deepcopy(schema)
    defs = body.pop("$defs", {})

    def rewrite(node: Any) -> Any:
        if isinstance(node, dict):
            out = {}
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str) and value.startswith(_DEFS):
                    out[key] = _DEFS + prefix + value[len(_DEFS) :]
                else:
                    out[key] = rewrite(value)
            return out
        if isinstance(node, list):
            return [rewrite(v) for v in node]
        return node

    return rewrite(body), {prefix + name: rewrite(d) for name, d in defs.items()}
