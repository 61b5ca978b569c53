"""Typed contract paths: JSON Pointer patterns spelled with a pydantic state model's fields.

``path(State).notes.append`` is ``"/notes/-"``, ``path(State).claims.each.status`` is
``"/claims/*/status"``, ``path(State).everything`` is ``"/**"``. Each step is checked against the
model as it is written: a field the model does not have, ``append`` on something that is not a
list, or ``each`` on something that is neither a list nor a mapping raises BlueprintError naming
the model, the field and the fields it does have, so a mistyped path fails where the board is
built, never at run time. A ``TypedPath`` is a ``str`` (its pointer pattern), so it goes wherever
a blueprint takes a pattern: ``reads``, ``writes``, ``pinned``, a rule's ``on.path``, an
invariant's ``at``, ``answer``, ``approval``.

What a type checker sees: attribute access on a ``TypedPath`` is dynamic (``__getattr__``), so
mypy does not flag a missing field; the check is this module's, at build time. Fields are
written by their Python or JSON name and become their JSON name (the alias, as the schema
names it). A field whose name ``str`` already uses (``title``, ``count``...) is reached with
``.field("title")``.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from .compile import BlueprintError, BlueprintIssue

__all__ = ["TypedPath", "path"]


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _unwrap(annotation: Any) -> Any:
    """``X | None`` and ``Optional[X]`` as ``X``; ``Annotated[X, ...]`` as ``X``."""
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation = typing.get_args(annotation)[0]
            continue
        if origin in (typing.Union, types.UnionType):
            rest = [a for a in typing.get_args(annotation) if a is not type(None)]
            if len(rest) == 1:
                annotation = rest[0]
                continue
        return annotation


def _kind(annotation: Any) -> tuple[str, Any]:
    """What a step can do with ``annotation``: ("model", cls), ("list", item), ("map", value) or
    ("leaf", annotation)."""
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "model", annotation
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    listlike = origin in (list, tuple, set, frozenset) or (isinstance(origin, type) and issubclass(origin, Sequence))
    if listlike and origin is not str:
        return "list", args[0] if args else Any
    if origin is dict or (isinstance(origin, type) and issubclass(origin, Mapping)):
        return "map", args[1] if len(args) == 2 else Any
    return "leaf", annotation


class TypedPath(str):
    """A pointer pattern built step by step from a state model (see the module docstring)."""

    _annotation: Any
    _where: str

    def __new__(cls, pointer: str, annotation: Any, where: str) -> TypedPath:
        made = super().__new__(cls, pointer)
        made._annotation = annotation
        made._where = where
        return made

    def _step(self, token: str, annotation: Any, label: str) -> TypedPath:
        return TypedPath(f"{self}/{token}", annotation, f"{self._where}.{label}")

    def _fail(self, message: str) -> BlueprintError:
        return BlueprintError([BlueprintIssue(str(self) or "/", f"typed path {self._where}: {message}")])

    def __getattr__(self, name: str) -> TypedPath:
        if name.startswith("_"):
            raise AttributeError(name)
        return self.field(name)

    def field(self, name: str) -> TypedPath:
        """The field ``name`` (its Python or JSON name). Attribute access does the same, except
        for names ``str`` already has (``title``, ``count``, ``index``...): spell those
        ``.field("title")``."""
        kind, target = _kind(self._annotation)
        if kind == "map":
            return self._step(_escape(name), target, name)
        if kind != "model":
            raise self._fail(f"{_describe(self._annotation)} has no field {name!r}")
        fields = {(info.alias or key): info for key, info in target.model_fields.items()}
        by_python_name = {key: (info.alias or key) for key, info in target.model_fields.items()}
        json_name = name if name in fields else by_python_name.get(name)
        if json_name is None:
            known = ", ".join(sorted(fields)) or "none"
            raise self._fail(f"{target.__name__} has no field {name!r} (its fields: {known})")
        return self._step(_escape(json_name), fields[json_name].annotation, name)

    def key(self, name: str) -> TypedPath:
        """One entry of a mapping field by its key (any string, escaped as JSON Pointer wants)."""
        kind, target = _kind(self._annotation)
        if kind != "map":
            raise self._fail(f"{_describe(self._annotation)} is not a mapping: key({name!r}) does not apply")
        return self._step(_escape(name), target, f"key({name!r})")

    @property
    def append(self) -> TypedPath:
        """The append position of a list field (``-``): a write contract that adds items."""
        kind, target = _kind(self._annotation)
        if kind != "list":
            raise self._fail(f"{_describe(self._annotation)} is not a list: append does not apply")
        return self._step("-", target, "append")

    @property
    def each(self) -> TypedPath:
        """Any one item of a list or value of a mapping (``*``)."""
        kind, target = _kind(self._annotation)
        if kind not in ("list", "map"):
            raise self._fail(f"{_describe(self._annotation)} is neither a list nor a mapping: each does not apply")
        return self._step("*", target, "each")

    @property
    def everything(self) -> str:
        """This node and everything under it (``/**``; the whole state at the root)."""
        return f"{self}/**"


def _describe(annotation: Any) -> str:
    annotation = _unwrap(annotation)
    return annotation.__name__ if isinstance(annotation, type) else str(annotation)


def path(model: type[BaseModel]) -> TypedPath:
    """The root of ``model``'s typed paths (``""``, the whole state): step into it with its field
    names, ``.append``, ``.each``, ``.key(name)`` and ``.everything``."""
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise BlueprintError([BlueprintIssue("/", f"path() takes a pydantic model class, got {model!r}")])
    return TypedPath("", model, model.__name__)
