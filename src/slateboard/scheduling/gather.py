"""Joins and batches: rules that gather several committed events before they fire.

* A **join** rule fires once per correlation key, when every one of its parts has happened for
  that key (a part: a trigger, an optional condition, and a CEL key over the event), all within
  its window (``within_versions`` / ``within_seconds`` of the key's first part). Once fired, a
  key is remembered as fired: later parts for it are ignored, so each key fires exactly once.
* A **batch** rule collects the events its trigger matches and fires with them once ``size``
  have arrived, or, with ``seconds``, once that long has passed since the first of them.

Everything here is a fold over **notes**, small JSON objects the scheduler logs in the
``meta["gather"]`` of the record whose commit produced them (``GATHER_META``): a part's arrival
(rule, part, key, path, version, and the clock time ``at`` when its window is in seconds), an
event added to a batch, a key that failed to evaluate (``error``, naming the rule and part), and
a batch's timer firing (a ``timer`` record of its own, appended when the timeout passed: see
``runtime.timers``). The live path makes notes from a commit's events and applies them; a board
loaded or caught up applies the logged notes of its records (``Gathers.note_record``). Both go
through ``Gathers.apply``, so what fires is a function of the log alone: replay reads no clock,
and every runner process sharing a board fires a key exactly once, at the record that completes
it (each record is appended by compare-and-set on the log, after catching up with the others).

Bounds: a join remembers at most ``max_keys`` open keys (the oldest open one is dropped, and a
note says so) and ``max_keys`` fired ones (the oldest forgotten first); a batch holds at most
``size`` events. ``begin``/``commit``/``rollback`` undo a prepared schedule whose append failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..blueprint.gather import CompiledBatch, CompiledJoin
from ..kernel.canonical import JSON, canonical_str
from ..kernel.record import Record
from ..vocabulary import GATHER_META

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint, CompiledRule

__all__ = ["MAX_KEY_CHARS", "Fired", "Gathers", "noted", "rule_notes"]

MAX_KEY_CHARS = 256
"""The longest correlation key (its canonical JSON): a longer one is a key error, logged."""


@dataclass(frozen=True, slots=True)
class Fired:
    """A join or a batch that fired: the rule, the binding its invocation gets (unique per
    firing, so two firings are never de-duplicated into one) and the invocation's event."""

    rule: str
    binding: tuple[str, ...]
    event: dict[str, JSON]


@dataclass(slots=True)
class _Join:
    spec: CompiledJoin
    open: dict[str, dict[str, Any]] = field(default_factory=dict)
    fired: dict[str, None] = field(default_factory=dict)


@dataclass(slots=True)
class _Batch:
    spec: CompiledBatch
    items: list[dict[str, JSON]] = field(default_factory=list)
    first_at: float | None = None
    count: int = 0


_Track = _Join | _Batch


class Gathers:
    """The joins and batches of one board (see the module docstring).

    ``clock`` gives the time logged in notes that need one (``time.time`` by default; tests
    pass their own). Guarantees: ``apply`` is deterministic in the notes; nothing grows without
    a bound; ``rollback`` puts every track back as it was at ``begin``."""

    def __init__(self, rules: Iterable[CompiledRule], clock: Callable[[], float] | None = None) -> None:
        self.clock: Callable[[], float] = clock or time.time
        self._tracks: dict[str, _Track] = {}
        self._undo: dict[str, tuple[Any, ...]] | None = None
        for rule in rules:
            if isinstance(rule.gather, CompiledJoin):
                self._tracks[rule.name] = _Join(rule.gather)
            elif isinstance(rule.gather, CompiledBatch):
                self._tracks[rule.name] = _Batch(rule.gather)

    @classmethod
    def of(cls, blueprint: CompiledBlueprint, records: Iterable[Record] = ()) -> Gathers:
        """The gathers of ``blueprint`` after the notes of ``records`` (a board's log, in order)."""
        gathers = cls(blueprint.rules)
        for rec in records:
            gathers.note_record(rec)
        return gathers

    def __bool__(self) -> bool:
        """True when the blueprint has a join or a batch rule."""
        return bool(self._tracks)

    # -- folding ------------------------------------------------------------------------------
    def note_record(self, rec: Record) -> None:
        """Apply the notes a logged record carries (none: nothing changes)."""
        notes = rec.meta.get(GATHER_META) if self._tracks else None
        if isinstance(notes, list):
            for note in notes:
                if isinstance(note, dict):
                    self.apply(note)

    def apply(self, note: dict[str, Any]) -> Fired | None:
        """Fold one note in; what fires because of it, or None. Notes naming a rule this
        blueprint does not gather with, and key errors, change nothing."""
        track = self._tracks.get(str(note.get("rule")))
        if track is None or "error" in note:
            return None
        self._save(str(note["rule"]), track)
        if isinstance(track, _Batch):
            return self._batch(str(note["rule"]), track, note)
        return self._join(str(note["rule"]), track, note)

    def _join(self, rule: str, track: _Join, note: dict[str, Any]) -> Fired | None:
        spec = track.spec
        key_json = note.get("key")
        key = canonical_str(key_json)
        if key in track.fired:
            return None
        version, at = int(note.get("version", 0)), note.get("at")
        # Windows are measured from a key's first part; the oldest keys are first in ``open``.
        while track.open:
            oldest = next(iter(track.open))
            if not _expired(spec, track.open[oldest], version, at):
                break
            del track.open[oldest]
        entry = track.open.get(key)
        if entry is None:
            if len(track.open) >= spec.max_keys:
                del track.open[next(iter(track.open))]
            entry = {"version": version, "at": at, "parts": {}}
        part = str(note.get("part"))
        if part in entry["parts"]:
            return None  # the first arrival of a part stands
        item = {"op": note.get("op"), "path": note.get("path"), "version": version}
        entry = {**entry, "parts": {**entry["parts"], part: item}}
        if len(entry["parts"]) < len(spec.parts):
            track.open[key] = entry
            return None
        track.open.pop(key, None)
        track.fired[key] = None
        if len(track.fired) > spec.max_keys:
            del track.fired[next(iter(track.fired))]
        parts = {p.name: entry["parts"][p.name] for p in spec.parts}
        event: dict[str, JSON] = {"op": "join", "path": item["path"], "version": version, "rule": rule}
        event |= {"key": key_json, "parts": parts}
        return Fired(rule, (rule, key), event)

    def _batch(self, rule: str, track: _Batch, note: dict[str, Any]) -> Fired | None:
        if note.get("timer"):
            return self._flush(rule, track, "timer", int(note.get("version", 0))) if track.items else None
        version = int(note.get("version", 0))
        item: dict[str, JSON] = {"op": note.get("op"), "path": note.get("path"), "version": version}
        if not track.items:
            at = note.get("at")
            track.first_at = float(at) if isinstance(at, (int, float)) else None
        track.items = [*track.items, item]
        if len(track.items) >= track.spec.size:
            return self._flush(rule, track, "size", version)
        return None

    @staticmethod
    def _flush(rule: str, track: _Batch, reason: str, version: int) -> Fired:
        items = track.items
        track.items, track.first_at = [], None
        track.count += 1
        last = items[-1]["path"] if items else ""
        event: dict[str, JSON] = {"op": "batch", "path": last, "version": version, "rule": rule}
        event |= {"reason": reason, "items": list(items)}
        return Fired(rule, (rule, f"#{track.count}"), event)

    # -- timers -------------------------------------------------------------------------------
    def deadlines(self) -> dict[str, float]:
        """Each batch rule holding events under a timeout: when its timer is due (epoch s)."""
        out: dict[str, float] = {}
        for name, track in self._tracks.items():
            if isinstance(track, _Batch) and track.first_at is not None and track.spec.seconds is not None:
                out[name] = track.first_at + track.spec.seconds
        return out

    def next_deadline(self) -> float | None:
        """The earliest due time of a batch timer, or None when no timer is pending."""
        return min(self.deadlines().values(), default=None)

    def due(self, now: float) -> list[str]:
        """The batch rules whose timers are due at ``now``, in blueprint order."""
        return [name for name, at in self.deadlines().items() if at <= now]

    def held(self, rule: str) -> int:
        """How many events (batch) or open keys (join) ``rule`` holds now."""
        track = self._tracks[rule]
        return len(track.items) if isinstance(track, _Batch) else len(track.open)

    # -- undo -----------------------------------------------------------------------------------
    def begin(self) -> None:
        """Start a transaction: each track is saved the first time a note changes it, so
        ``rollback`` can put it back (a commit that touches no gather copies nothing)."""
        self._undo = {}

    def commit(self) -> None:
        """Keep what the notes since ``begin`` changed."""
        self._undo = None

    def rollback(self) -> None:
        """Put back every track the notes since ``begin`` changed (no-op outside one)."""
        undo, self._undo = self._undo, None
        for name, saved in (undo or {}).items():
            track = self._tracks[name]
            if isinstance(track, _Join):
                track.open, track.fired = saved[0], saved[1]
            else:
                track.items, track.first_at, track.count = saved

    def _save(self, name: str, track: _Track) -> None:
        # Shallow copies suffice: entries and item lists are replaced, never changed in place.
        if self._undo is not None and name not in self._undo:
            if isinstance(track, _Join):
                self._undo[name] = (dict(track.open), dict(track.fired))
            else:
                self._undo[name] = (track.items, track.first_at, track.count)


def noted(rec: Record, notes: Sequence[dict[str, JSON]]) -> Record:
    """``rec`` with ``notes`` as its ``meta["gather"]``, sealed again. Replay re-decides a
    proposal with the meta it logged (and rebuilds an action record from its meta), so the notes
    come back and the hash holds, without replay running the rules."""
    return replace(rec, meta={**rec.meta, GATHER_META: list(notes)}).sealed()


def rule_notes(rule: CompiledRule, op: str, path: str, version: int, at: float | None) -> dict[str, JSON]:
    """The note of an event a batch (or, with ``part`` and ``key`` added, a join) takes."""
    note: dict[str, JSON] = {"rule": rule.name, "op": op, "path": path, "version": version}
    if at is not None:
        note["at"] = round(at, 3)
    return note


def _expired(spec: CompiledJoin, entry: dict[str, Any], version: int, at: Any) -> bool:
    if spec.within_versions is not None and version - int(entry["version"]) > spec.within_versions:
        return True
    first = entry.get("at")
    return (
        spec.within_seconds is not None
        and isinstance(at, (int, float))
        and isinstance(first, (int, float))
        and at - first > spec.within_seconds
    )
