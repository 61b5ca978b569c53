"""Stages: named phases of a board, entered and exited by CEL conditions over the state.

A stage moves one way through ``pending -> active -> exited``:

* a stage without ``enter`` becomes active at its first evaluation (board creation); a stage with
  ``enter`` becomes active at the first evaluation where ``enter`` holds;
* an active stage whose ``exit`` holds is exited, and stays exited for good (a stage whose
  ``enter`` and ``exit`` hold at the same evaluation is entered and exited at once);
* a rule that names a stage fires only while that stage is active.

The tracker is evaluated after every commit with the committed state; each transition is
reported as a typed lifecycle event (``stage.entered`` / ``stage.exited``) carrying the version.
Only the conditions that can still change something are evaluated (``enter`` of pending
stages, ``exit`` of active ones), in blueprint order. A condition that errors counts as false
and is reported as a Diagnostic. Everything here is a deterministic function of the sequence
of evaluated states, and the tracker round-trips through JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..kernel.canonical import JSON
from .diagnostics import Diagnostic

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint, CompiledRule, CompiledStage
    from ..kernel.cel import CelExpr

PENDING, ACTIVE, EXITED = "pending", "active", "exited"
STAGE_STATUSES = (PENDING, ACTIVE, EXITED)
STAGE_ENTERED, STAGE_EXITED = "stage.entered", "stage.exited"


@dataclass(frozen=True, slots=True)
class StageEvent:
    """A stage lifecycle event: ``kind`` is ``stage.entered`` or ``stage.exited``.

    ``version`` is the state version whose evaluation caused the transition.
    """

    kind: str
    stage: str
    version: int

    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form."""
        return {"kind": self.kind, "stage": self.stage, "version": self.version}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StageEvent:
        """Inverse of to_json."""
        return cls(str(data["kind"]), str(data["stage"]), int(data["version"]))


@dataclass(frozen=True, slots=True)
class StageUpdate:
    """What one evaluation produced: lifecycle events and diagnostics, both in blueprint order."""

    events: tuple[StageEvent, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()


@dataclass(frozen=True, slots=True)
class StageMark:
    """A tracker's statuses at one moment (``StageTracker.mark``/``restore``)."""

    status: dict[str, str]
    since: dict[str, int | None]
    evaluated: int | None


class StageTracker:
    """Tracks which stages are active (see module docstring for the guarantees)."""

    def __init__(self, stages: Sequence[CompiledStage]) -> None:
        self._stages: tuple[CompiledStage, ...] = tuple(stages)
        names = [s.name for s in self._stages]
        if len(set(names)) != len(names):
            raise InvalidInput(f"duplicate stage names: {names}")
        self._status: dict[str, str] = dict.fromkeys(names, PENDING)
        self._since: dict[str, int | None] = dict.fromkeys(names, None)
        self._evaluated: int | None = None

    @classmethod
    def from_blueprint(cls, blueprint: CompiledBlueprint) -> StageTracker:
        """A fresh tracker (nothing evaluated yet) for the blueprint's stages."""
        return cls(blueprint.stages)

    # -- queries ----------------------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        """Stage names in blueprint order."""
        return tuple(s.name for s in self._stages)

    @property
    def evaluated_version(self) -> int | None:
        """The version of the last evaluation (None before the first)."""
        return self._evaluated

    def status(self, name: str) -> str:
        """``pending``, ``active`` or ``exited``; KeyError for an unknown stage."""
        return self._status[name]

    def is_active(self, name: str) -> bool:
        """True while the stage is active."""
        return self._status.get(name) == ACTIVE

    @property
    def active(self) -> tuple[str, ...]:
        """Names of the active stages, in blueprint order."""
        return tuple(n for n in self.names if self._status[n] == ACTIVE)

    def allows(self, rule: CompiledRule) -> bool:
        """True when the rule may fire now: it names no stage, or its stage is active."""
        stage = rule.spec.stage
        return stage is None or self.is_active(stage)

    # -- evaluation -------------------------------------------------------------------------
    def update(self, state: JSON, version: int) -> StageUpdate:
        """Evaluate the conditions against the committed ``state`` at ``version``.

        Idempotent per version: a second call with a version already evaluated (or older)
        changes nothing and returns an empty update, so callers may evaluate defensively.
        """
        if self._evaluated is not None and version <= self._evaluated:
            return StageUpdate()
        self._evaluated = version
        context: dict[str, Any] = {"state": state}
        events: list[StageEvent] = []
        diags: list[Diagnostic] = []
        for stage in self._stages:
            name = stage.name
            if self._status[name] == PENDING:
                if stage.enter is not None and not _holds(stage.enter, context, name, "enter", version, diags):
                    continue
                self._status[name] = ACTIVE
                self._since[name] = version
                events.append(StageEvent(STAGE_ENTERED, name, version))
            if (
                self._status[name] == ACTIVE
                and stage.exit is not None
                and _holds(stage.exit, context, name, "exit", version, diags)
            ):
                self._status[name] = EXITED
                self._since[name] = version
                events.append(StageEvent(STAGE_EXITED, name, version))
        return StageUpdate(tuple(events), tuple(diags))

    # -- undo -------------------------------------------------------------------------------
    def mark(self) -> StageMark:
        """What ``restore`` needs to put the tracker back as it is now (O(number of stages))."""
        return StageMark(dict(self._status), dict(self._since), self._evaluated)

    def restore(self, mark: StageMark) -> None:
        """Put the tracker back as it was when ``mark`` was taken."""
        self._status, self._since, self._evaluated = dict(mark.status), dict(mark.since), mark.evaluated

    # -- persistence ------------------------------------------------------------------------
    def to_json(self) -> dict[str, JSON]:
        """Plain JSON form: each stage's status and the version it reached it at."""
        return {
            "evaluated": self._evaluated,
            "stages": {n: {"status": self._status[n], "since": self._since[n]} for n in self.names},
        }

    @classmethod
    def from_json(cls, stages: Sequence[CompiledStage], data: dict[str, Any]) -> StageTracker:
        """Restore a tracker saved by to_json; stages unknown to the snapshot start pending.

        Raises ValueError for a snapshot naming a stage the blueprint does not have, or an
        unknown status.
        """
        tracker = cls(stages)
        saved = data.get("stages") or {}
        for name, entry in saved.items():
            if name not in tracker._status:
                raise InvalidInput(f"snapshot names unknown stage {name!r}")
            status = entry.get("status", PENDING)
            if status not in STAGE_STATUSES:
                raise InvalidInput(f"stage {name!r}: unknown status {status!r}")
            tracker._status[name] = status
            since = entry.get("since")
            tracker._since[name] = None if since is None else int(since)
        evaluated = data.get("evaluated")
        tracker._evaluated = None if evaluated is None else int(evaluated)
        return tracker

    def rules_of(self, rules: Iterable[CompiledRule], stages: Iterable[str]) -> frozenset[str]:
        """Names of the rules gated by any of ``stages`` (e.g. to cancel their pending work)."""
        wanted = set(stages)
        return frozenset(r.name for r in rules if r.spec.stage in wanted)


def _holds(expr: CelExpr, context: dict[str, Any], stage: str, which: str, version: int, out: list[Diagnostic]) -> bool:
    result = expr.test(context)
    if result.error is not None:
        out.append(Diagnostic("stage", stage, version, f"{which} condition {expr.source!r} failed: {result.error}"))
        return False
    return bool(result.value)
