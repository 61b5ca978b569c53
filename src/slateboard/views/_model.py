"""The public objects of a view: View and Handle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..kernel.canonical import JSON


@dataclass(frozen=True, slots=True)
class Handle:
    """A compact stand-in for a part of the read region that the view does not show in full.

    An *item handle* names one member of a collection: ``handle`` is ``"<pointer>#<id>"`` where
    ``pointer`` is the collection and ``id`` the member's ``id`` field (array members whose
    ``id`` is a readable string or integer) or else its key or index. The same member keeps the
    same handle string across versions. ``path`` is the member's pointer at this version,
    ``summary`` the start of its content, ``size`` the characters its data entries would take
    (``">N"`` when over the whole budget ``N``), ``items`` its member count for containers.

    A *range handle* (``id`` ``"[a:b]"``) stands for the collection's region members at positions
    ``a`` to ``b - 1`` (array order, or sorted keys for objects); ``items`` is their number. Ranges
    are paging cursors: they are only meaningful while the collection keeps its shape.
    """

    handle: str
    pointer: str
    id: str
    path: str | None = None
    summary: str | None = None
    size: int | str | None = None
    items: int | None = None

    @property
    def is_range(self) -> bool:
        """True for a range handle."""
        return self.path is None

    def to_json(self) -> dict[str, JSON]:
        """The handle as the worker sees it (absent fields are left out)."""
        out: dict[str, JSON] = {"handle": self.handle, "pointer": self.pointer, "id": self.id}
        if self.path is not None:
            out["path"] = self.path
        if self.summary is not None:
            out["summary"] = self.summary
        if self.size is not None:
            out["size"] = self.size
        if self.items is not None:
            out["items"] = self.items
        return out


_PARSED: tuple[str, dict[str, Any]] = ("", {})
"""The last view text whose members a ``View`` property parsed, and its parse: one slot for the
whole process (not one per view), so reading several members of one view parses it once while
a view nobody reads holds only its text."""


def _shown(text: str) -> dict[str, Any]:
    """The members of a view's rendered ``text`` (parsed afresh: nothing is shared with the state)."""
    global _PARSED
    last = _PARSED
    if last[0] is text:
        return last[1]
    shown: dict[str, Any] = orjson.loads(text) if text else {}
    _PARSED = (text, shown)
    return shown


@dataclass(frozen=True, slots=True, repr=False)
class View:
    """What one worker sees at one state version: bounded, inside its read contract, hashed.

    Guarantees: ``len(render()) == size <= budget`` plus the size of the worker's pinned and
    windowed paths (shown whole outside the budget, see slateboard.views); every pointer in ``data`` (and every node
    below it) lies inside the worker's read contract, and every ``data`` value is the exact
    state value at that pointer at ``version``; ``hash`` is the SHA-256 of ``render()``, so it
    changes exactly when what the worker sees changes (``version`` itself is not shown). The
    view shares no objects with the state.

    A view holds its rendered ``text`` and its handles; ``data``, ``writable``, ``event``,
    ``rejections`` and ``notes`` are the members of that text, parsed when read (issue 41: with
    many boards waiting on their models, the parsed parts are what a waiting view held). Only
    the last view text read is kept parsed, process-wide, so reading one view's members one
    after another parses it once; a value read is not the view's to change.
    """

    worker: str
    version: int
    budget: int
    handles: tuple[Handle, ...]
    size: int
    hash: str
    level: int
    text: str

    @property
    def data(self) -> dict[str, JSON]:
        """Each shown pointer's exact state value (keys never overlap)."""
        data: dict[str, JSON] = _shown(self.text).get("data", {})
        return data

    @property
    def writable(self) -> tuple[dict[str, JSON], ...]:
        """The paths the worker may write, with their ops and schema fragments."""
        return tuple(_shown(self.text).get("writable", ()))

    @property
    def event(self) -> JSON:
        """The triggering event as shown (None when there is none or it is not shown)."""
        event: JSON = _shown(self.text).get("event")
        return event

    @property
    def rejections(self) -> tuple[dict[str, JSON], ...]:
        """The worker's recent rejections as shown."""
        return tuple(_shown(self.text).get("rejections", ()))

    @property
    def notes(self) -> tuple[str, ...]:
        """Notes on the view (e.g. an expansion that was ignored)."""
        return tuple(_shown(self.text).get("notes", ()))

    def __hash__(self) -> int:
        return hash((self.worker, self.version, self.budget, self.text))

    def __repr__(self) -> str:
        return (
            f"View(worker={self.worker!r}, version={self.version!r}, budget={self.budget!r}, data={self.data!r},"
            f" writable={self.writable!r}, event={self.event!r}, rejections={self.rejections!r},"
            f" handles={self.handles!r}, notes={self.notes!r}, size={self.size!r}, hash={self.hash!r},"
            f" level={self.level!r})"
        )

    def render(self) -> str:
        """The canonical JSON text given to the worker; its length is what the budget bounds."""
        return self.text

    def to_json(self) -> dict[str, JSON]:
        """Every field as plain JSON (for logs, stores and external workers)."""
        shown = orjson.loads(self.text) if self.text else {}
        return {
            "worker": self.worker,
            "version": self.version,
            "budget": self.budget,
            "size": self.size,
            "hash": self.hash,
            "level": self.level,
            "data": shown.get("data", {}),
            "writable": list(shown.get("writable", ())),
            "event": shown.get("event"),
            "rejections": list(shown.get("rejections", ())),
            "handles": [h.to_json() for h in self.handles],
            "notes": list(shown.get("notes", ())),
        }

    def handle(self, name: str) -> Handle | None:
        """The handle with string ``name`` in this view, or None."""
        return next((h for h in self.handles if h.handle == name), None)
