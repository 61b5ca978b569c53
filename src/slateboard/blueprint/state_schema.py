"""A pydantic state model as the blueprint's state schema: closed objects, and a clear refusal.

``closed_state_schema(Model)`` is the JSON Schema the Python builder (and ``compile_blueprint(...,
schema=Model)``) puts in the blueprint. Two things differ from ``Model.model_json_schema()``:

- **Closed by default.** Every object a pydantic model describes gets ``additionalProperties:
  false`` unless the model says otherwise: ``extra="allow"`` keeps it open (any member), and a
  ``dict[str, X]`` field is a map whose keys are free. pydantic's default (``extra="ignore"``)
  would drop an unknown member when the state is read back as the model, so a state with one
  would not be what the model says; closed, a misspelt path (``/sumary``) or CEL field
  (``state.tiket``) is a blueprint issue when the board is built, and a worker's patch adding an
  undeclared member is rejected at stage ``schema``.
- **A field pydantic cannot express** as JSON Schema (an arbitrary class, a callable) raises
  ``StateNotExpressible`` naming the field (the builder and ``compile_blueprint`` report it as a
  ``BlueprintError`` at ``/schema``), not pydantic's ``PydanticInvalidForJsonSchema``.
"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from ..errors import UsageError

__all__ = ["StateNotExpressible", "closed_state_schema"]

_OPEN_EXTRA = frozenset({"allow", "forbid"})
"""``extra`` settings pydantic already turns into ``additionalProperties``: left as they are."""


class StateNotExpressible(UsageError, ValueError):
    """A state model pydantic cannot express as a JSON Schema; the message names the field."""


class _ClosedModels(GenerateJsonSchema):
    """pydantic's generator, closing the object of every model that does not say ``extra=``."""

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        json_schema = super().model_schema(schema)
        cls = schema["cls"]
        if (
            cls.model_config.get("extra") not in _OPEN_EXTRA
            and not getattr(cls, "__pydantic_root_model__", False)
            and json_schema.get("type") == "object"
            and "additionalProperties" not in json_schema
        ):
            json_schema["additionalProperties"] = False
        return json_schema


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_in(arg)]


def _unexpressible(model: type[BaseModel], prefix: str) -> tuple[str, Any, Exception] | None:
    """The first field (dotted, from the state) pydantic cannot put in a JSON Schema."""
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if annotation is None:
            continue
        for inner in _models_in(annotation):
            found = _unexpressible(inner, f"{prefix}{name}.")
            if found is not None:
                return found
        try:
            if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                TypeAdapter(annotation, config=ConfigDict(arbitrary_types_allowed=True)).json_schema()
        except Exception as exc:  # pydantic raises several error types for inexpressible types
            return f"{prefix}{name}", annotation, exc
    return None


def closed_state_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The state schema of a pydantic model: closed objects (see the module docstring).

    Raises StateNotExpressible naming the field when pydantic cannot express it."""
    try:
        return model.model_json_schema(schema_generator=_ClosedModels)
    except Exception as exc:  # pydantic raises several error types for inexpressible types
        found = _unexpressible(model, "")
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        if found is None:
            raise StateNotExpressible(f"{model.__name__} cannot be expressed as a JSON Schema: {first}") from None
        path, annotation, why = found
        shown = getattr(annotation, "__name__", repr(annotation))
        first = (str(why).strip().splitlines() or [type(why).__name__])[0]
        raise StateNotExpressible(
            f"state field {model.__name__}.{path} ({shown}) cannot be expressed as a JSON Schema: {first}; "
            "use a JSON type (str, int, float, bool, list, dict, a pydantic model)"
        ) from None
