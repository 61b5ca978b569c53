"""Typed contract paths: a selector over the state model, turned into a JSON Pointer pattern.

``ref(State, lambda s: s.notes[APPEND])`` is ``/notes/-`` and ``ref(State, lambda s: s.claims[EACH].status)``
is ``/claims/*/status``. The selector is ordinary typed Python, so mypy checks every attribute
against the model: a missing field is a mypy error (``attr-defined``). At run of ``ref`` the same
selector is replayed on a recorder that checks each step against the pydantic model, so callers
without a type checker get a BlueprintError naming the field instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, get_args, get_origin

from pydantic import BaseModel

from ..blueprint.compile import BlueprintError, BlueprintIssue

__all__ = ["ALL", "APPEND", "EACH", "ref"]

M = TypeVar("M", bound=BaseModel)


class _Marker(int):
    """An int index that means a pointer wildcard: typed as ``int`` so list indexing type-checks."""

    segment: str

    def __new__(cls, segment: str) -> _Marker:
        made = super().__new__(cls, -1)
        made.segment = segment
        return made


EACH: int = _Marker("*")
"""Any one item of a list (pointer segment ``*``)."""
APPEND: int = _Marker("-")
"""The append position of a list (pointer segment ``-``), for write contracts."""
ALL: int = _Marker("**")
"""The list and everything under it (pattern suffix ``/**``)."""


def _escape(segment: str) -> str:
    return segment.replace("~", "~0").replace("/", "~1")


class _Recorder:
    """Records attribute and index steps, checking each against the annotation it walks."""

    def __init__(self, annotation: Any, segments: tuple[str, ...], where: str) -> None:
        self._annotation = annotation
        self._segments = segments
        self._where = where

    def _fail(self, message: str) -> BlueprintError:
        return BlueprintError([BlueprintIssue(self._where, message)])

    def __getattr__(self, name: str) -> _Recorder:
        if name.startswith("__"):
            raise AttributeError(name)
        model = _unwrap(self._annotation)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise self._fail(f"path /{'/'.join(self._segments)} is not an object; it has no field {name!r}")
        field = model.model_fields.get(name)
        if field is None:
            raise self._fail(f"{model.__name__} has no field {name!r} (fields: {', '.join(model.model_fields)})")
        key = field.alias or name
        return _Recorder(field.annotation, (*self._segments, _escape(key)), self._where)

    def __getitem__(self, index: Any) -> _Recorder:
        inner = _unwrap(self._annotation)
        origin = get_origin(inner)
        if origin not in (list, tuple) and inner not in (list, tuple):
            raise self._fail(f"path /{'/'.join(self._segments)} is not a list; it cannot be indexed")
        args = get_args(inner)
        item = args[0] if args else Any
        segment = index.segment if isinstance(index, _Marker) else str(int(index))
        return _Recorder(item, (*self._segments, segment), self._where)


def _unwrap(annotation: Any) -> Any:
    # Optional[X] / X | None walk into X: the pointer names the same place either way.
    args = get_args(annotation)
    if args and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _unwrap(rest[0])
    return annotation


def ref(model: type[M], select: Callable[[M], object], *, where: str = "") -> str:
    """The JSON Pointer pattern that ``select`` walks on ``model`` (see module docstring).

    Raises BlueprintError at ``where`` when a step names no field of the model or indexes a non-list.
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise BlueprintError([BlueprintIssue(where, f"ref() takes a pydantic model class, got {model!r}")])
    recorded = select(_Recorder(model, (), where))  # type: ignore[arg-type]
    if not isinstance(recorded, _Recorder):
        raise BlueprintError([BlueprintIssue(where, "a path selector must return a field of the state, e.g. s.notes")])
    segments = recorded._segments
    if segments and segments[-1] == "**":
        return "/" + "/".join(segments)
    return "/" + "/".join(segments) if segments else ""
