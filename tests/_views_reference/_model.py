"""The public objects of a view: View and Handle."""

from __future__ import annotations

from dataclasses import dataclass, field

import orjson

from slateboard.kernel.canonical import JSON


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


@dataclass(frozen=True, slots=True)
class View:
    """What one worker sees at one state version: bounded, inside its read contract, hashed.

    Guarantees: ``len(render()) == size <= budget`` plus the size of the worker's pinned and
    windowed paths (shown whole outside the budget, see slateboard.views); every pointer in ``data`` (and every node
    below it) lies inside the worker's read contract, and every ``data`` value is the exact
    state value at that pointer at ``version``; ``hash`` is the SHA-256 of ``render()``, so it
    changes exactly when what the worker sees changes (``version`` itself is not shown). The
    view shares no objects with the state.
    """

    worker: str
    version: int
    budget: int
    data: dict[str, JSON]
    writable: tuple[dict[str, JSON], ...]
    event: JSON
    rejections: tuple[dict[str, JSON], ...]
    handles: tuple[Handle, ...]
    notes: tuple[str, ...]
    size: int
    hash: str
    level: int
    text: str = field(repr=False)

    def __hash__(self) -> int:
        return hash((self.worker, self.version, self.budget, self.text))

    def render(self) -> str:
        """The canonical JSON text given to the worker; its length is what the budget bounds."""
        return self.text

    def to_json(self) -> dict[str, JSON]:
        """Every field as plain JSON (for logs, stores and external workers)."""
        return {
            "worker": self.worker,
            "version": self.version,
            "budget": self.budget,
            "size": self.size,
            "hash": self.hash,
            "level": self.level,
            "data": orjson.loads(orjson.dumps(self.data)),
            "writable": orjson.loads(orjson.dumps(list(self.writable))),
            "event": orjson.loads(orjson.dumps(self.event)),
            "rejections": orjson.loads(orjson.dumps(list(self.rejections))),
            "handles": [h.to_json() for h in self.handles],
            "notes": list(self.notes),
        }

    def handle(self, name: str) -> Handle | None:
        """The handle with string ``name`` in this view, or None."""
        return next((h for h in self.handles if h.handle == name), None)
