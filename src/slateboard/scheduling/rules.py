"""Rules -> invocations: the scheduler turns an accepted transaction's events into agenda work.

Where it sits in a step (``runtime.step``): ``kernel.prepare`` decides a proposal; when it is
accepted, ``Scheduler.prepare`` runs the rules on its events, its state and its version; the
record and the invocations the rules created are appended to the store together (one
compare-and-set); then the kernel and the scheduler both ``commit``, or both ``abort`` when the
append failed. So rules run *before* the append, on the prepared decision, and their result
becomes durable (or is undone) in the same transaction as the record: the agenda only ever holds
invocations of committed records.

For every event (in the kernel's order) and every rule (in blueprint order) it checks, cheapest
first:

1. the op filter: the event's op equals the trigger's op, or the trigger is ``any``
   (``start`` rules never match events: they fire once, from ``start``);
2. the stage gate: a rule naming a stage fires only while that stage is active (stages are
   evaluated on the committed state *before* the rules, so the commit that enters a stage can
   already trigger its rules, and the commit that exits one cannot);
3. the trigger pattern against the event's concrete path (``*`` binds one segment, ``-``
   matches an index created by an append);
4. the CEL condition, with ``event`` ({op, path, version}), ``value`` (the committed value at
   the event path; null for a removal or when the path no longer exists), ``bindings`` (the
   pattern captures) and ``state`` (the whole state). Each variable is passed only when the
   expression uses it, since converting a value for CEL costs O(its size). A condition that
   errors (or is not boolean) does not fire and is returned as a Diagnostic, never raised.

Invocation ids are ``v<version>.<n>`` where n counts the invocations created for that version,
so a replay of the same log produces the same ids. ``order`` comes from a counter the scheduler
carries in its snapshot. Within one batch an invocation whose key (worker + binding) was already
produced, or is pending on the agenda (``pending``), is not created again; the first one in
(event, rule) order wins. A worker that reached its ``max_invocations`` gets no more invocations
(a ``limit`` diagnostic says so).

A rule with ``recheck`` marks its invocations (``RECHECK_META``): when one comes up, ``lapsed``
evaluates the rule's ``when`` again on the state committed then, and the runtime declines for a
worker whose invocation lapsed instead of calling it (a commit between scheduling and running,
such as another worker doing the work, left it nothing to do).

Join and batch rules (``scheduling.gather``) do not fire on one event: each event their
triggers match becomes a note (logged with the record: ``Scheduled.notes``), and they fire when
the notes complete a key or a batch. ``prepare_timer`` flushes a batch whose timeout passed.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..blueprint.gather import CompiledBatch
from ..kernel.canonical import JSON, canonical_str
from ..kernel.cel import CelExpr, SharedContext
from ..kernel.pointer import MISSING, resolve
from ..vocabulary import RECHECK_META
from ._scheduled import Scheduled, SchedulerBusy
from .diagnostics import Diagnostic
from .gather import MAX_KEY_CHARS, Fired, Gathers, rule_notes
from .invocation import Invocation
from .stages import StageMark, StageTracker

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledBlueprint, CompiledRule
    from ..kernel.kernel import Event

__all__ = ["START_EVENT", "Scheduled", "Scheduler", "SchedulerBusy"]

START_EVENT: dict[str, JSON] = {"op": "start", "path": "", "version": 0}
"""The event recorded on invocations created by ``start`` rules."""


class Scheduler:
    """Matches committed events against a blueprint's rules (see module docstring).

    Its mutable state (the order counter, per-worker issued counts, whether ``start`` ran, and
    the stage tracker) is small, deterministic, and saved/restored by ``to_json``/``from_json``.
    Like the kernel it is transactional: ``prepare`` schedules and keeps what it changed, then
    ``commit`` keeps the change or ``abort`` puts the scheduler back exactly as it was.
    """

    def __init__(
        self,
        blueprint: CompiledBlueprint,
        *,
        order: int = 0,
        stages: StageTracker | None = None,
        gathers: Gathers | None = None,
    ) -> None:
        self.blueprint = blueprint
        self.rules: tuple[CompiledRule, ...] = tuple(blueprint.rules)
        self._gather_rules = tuple(r for r in self.rules if r.gather is not None)
        self._event_rules = tuple(r for r in self.rules if r.spec.on.op != "start" and r.gather is None)
        self._start_rules = tuple(r for r in self.rules if r.spec.on.op == "start" and r.gather is None)
        self._by_index = {r.index: r for r in self.rules if r.spec.recheck}
        self.stages = stages if stages is not None else StageTracker.from_blueprint(blueprint)
        self.gathers: Gathers = gathers if gathers is not None else Gathers(self._gather_rules)
        """The joins' and batches' state: a fold over the log's notes, carried across reloads."""
        self._reacts = bool(self._event_rules) or bool(self.stages.names) or bool(self._gather_rules)
        self._order = order
        self._issued: dict[str, int] = {}
        self._started = False
        self._undo: _Undo | None = None

    @property
    def reacts(self) -> bool:
        """False when no commit can change anything here (no event rules and no stages):
        ``schedule`` would then always return an empty result, and callers may skip it."""
        return self._reacts

    @property
    def order(self) -> int:
        """The next ``order`` value to hand out (monotonically increasing)."""
        return self._order

    @property
    def started(self) -> bool:
        """True once ``start`` has run."""
        return self._started

    def allocate_order(self) -> int:
        """Hand out the next ``order`` value for an invocation created outside the rules (a
        circuit-policy retry); keeps agenda order consistent with rule-created invocations."""
        order = self._order
        self._order += 1
        return order

    def issued(self, worker: str) -> int:
        """How many invocations the scheduler has created for ``worker``."""
        return self._issued.get(worker, 0)

    # -- scheduling -------------------------------------------------------------------------
    def start(self, state: JSON, *, pending: Container[str] | None = None) -> Scheduled:
        """Board creation: evaluate the stages on the initial state (version 0) and fire every
        ``start`` rule once, in blueprint order. A second call returns an empty result."""
        if self._started:
            return Scheduled()
        self._started = True
        update = self.stages.update(state, 0)
        batch = _Batch(self, 0, pending)
        batch.diagnostics.extend(update.diagnostics)
        for rule in self._start_rules:
            if not self.stages.allows(rule):
                continue
            if rule.when is not None:
                ctx = _context(rule, START_EVENT, None, (), state)
                if not batch.condition(rule, ctx, START_EVENT):
                    continue
            batch.add(rule, START_EVENT, ())
        return Scheduled(batch.invocations, batch.diagnostics, update.events)

    def schedule(
        self,
        events: Sequence[Event],
        state: JSON,
        version: int,
        *,
        pending: Container[str] | None = None,
    ) -> Scheduled:
        """Invocations for the events of the commit that produced ``version`` (see module doc).

        ``state`` is the committed state at ``version``. ``pending`` (e.g. ``agenda.pending_keys``)
        holds the keys already pending, which are then not created again. Never raises for a
        condition that fails to evaluate.
        """
        update = self.stages.update(state, version)
        batch = _Batch(self, version, pending)
        batch.diagnostics.extend(update.diagnostics)
        for event in events:
            event_json: JSON = None
            shared: _EventContext | None = None
            if self._gather_rules:
                shared = self._gather(event, state, version, batch)
            for rule in self._event_rules:
                trigger = rule.spec.on.op
                if trigger != "any" and trigger != event.op:
                    continue
                if not self.stages.allows(rule):
                    continue
                binding = rule.pattern.match(event.tokens, appended=event.appended)
                if binding is None:
                    continue
                if event_json is None:
                    event_json = {"op": event.op, "path": event.path, "version": event.version}
                if rule.when is not None:
                    if shared is None:
                        shared = _EventContext(event_json, event, state)
                    if not batch.condition(rule, shared.bind(rule.when, binding), event_json):
                        continue
                batch.add(rule, event_json, binding)
        return Scheduled(batch.invocations, batch.diagnostics, update.events, batch.notes)

    def _gather(self, event: Event, state: JSON, version: int, batch: _Batch) -> _EventContext | None:
        """Note ``event`` for every join part and batch rule it matches, and fire what the notes
        complete; returns the event's CEL context when one was built (the rules reuse it)."""
        shared: _EventContext | None = None
        event_json: JSON = {"op": event.op, "path": event.path, "version": event.version}
        now: float | None = None
        for rule in self._gather_rules:
            if not self.stages.allows(rule):
                continue
            spec = rule.gather
            at: float | None = None
            if (spec.seconds if isinstance(spec, CompiledBatch) else getattr(spec, "within_seconds", None)) is not None:
                # The clock is read here and logged in the note: replay reads the note, never a clock.
                at = now = self.gathers.clock() if now is None else now
            if isinstance(spec, CompiledBatch):
                trigger = rule.spec.on.op
                if trigger != "any" and trigger != event.op:
                    continue
                binding = rule.pattern.match(event.tokens, appended=event.appended)
                if binding is None:
                    continue
                if rule.when is not None:
                    shared = shared or _EventContext(event_json, event, state)
                    if not batch.condition(rule, shared.bind(rule.when, binding), event_json):
                        continue
                batch.note(rule, rule_notes(rule, event.op, event.path, version, at))
                continue
            assert spec is not None
            for part in spec.parts:
                if part.op != "any" and part.op != event.op:
                    continue
                binding = part.pattern.match(event.tokens, appended=event.appended)
                if binding is None:
                    continue
                shared = shared or _EventContext(event_json, event, state)
                note = rule_notes(rule, event.op, event.path, version, at) | {"part": part.name}
                if part.when is not None:
                    held = part.when.test(shared.bind(part.when, binding))
                    if held.error is not None:
                        batch.note(rule, note | {"error": f"condition {part.when.source!r} failed: {held.error}"})
                        continue
                    if not held.value:
                        continue
                key = part.key.evaluate(shared.bind(part.key, binding))
                problem = key.error if key.error is not None else _key_problem(key.value)
                if problem is not None:
                    batch.note(rule, note | {"error": f"key {part.key.source!r} failed: {problem}"})
                    continue
                batch.note(rule, note | {"key": key.value})
        return shared

    def prepare_timer(self, rule: str, version: int, seq: int, at: float) -> Scheduled:
        """The firing of batch ``rule``'s timer at ``at``, logged by record ``seq`` at ``version``, as the
        first half of a transaction (like ``prepare``: ``commit`` or ``abort`` follows): a
        ``timer`` note, and the invocation of the partial batch it flushes (``t<seq>.<n>`` ids).
        Empty when the batch holds nothing (another runner flushed it first)."""
        if self._undo is not None:
            raise SchedulerBusy("a prepared schedule is awaiting commit or abort")
        self._undo = _Undo(self._order, dict(self._issued), self._started, self.stages.mark())
        self.gathers.begin()
        named = next((r for r in self._gather_rules if r.name == rule), None)
        batch = _Batch(self, version, None, prefix=f"t{seq}.")
        if named is not None and self.gathers.held(rule):
            batch.note(named, {"rule": rule, "timer": True, "version": version, "at": round(at, 3)})
        return Scheduled(batch.invocations, batch.diagnostics, (), batch.notes)

    def lapsed(self, invocation: Invocation, state: JSON) -> str | None:
        """Why ``invocation`` no longer has anything to do, or None: it was created by a rule
        with ``recheck`` whose ``when`` does not hold on ``state`` (the committed state when it
        comes up; ``value`` is then what its event's path holds, ``event`` and ``bindings`` are
        the invocation's own). A condition that errors no longer holds either, as at scheduling.
        The runtime then declines for the worker, without calling it (``runtime.step``): a
        logged no-op, replayed like any other. Pure: nothing here changes."""
        index = invocation.meta.get(RECHECK_META)
        rule = self._by_index.get(index) if isinstance(index, int) else None
        if rule is None or rule.when is None:
            return None
        event = invocation.event if isinstance(invocation.event, dict) else START_EVENT
        path = event.get("path")
        ctx: dict[str, Any] = {}
        if rule.when.uses("event"):
            ctx["event"] = event
        if rule.when.uses("bindings"):
            ctx["bindings"] = list(invocation.binding)
        if rule.when.uses("value"):
            found = resolve(state, path) if isinstance(path, str) and path else MISSING
            ctx["value"] = None if found is MISSING else found
        if rule.when.uses("state"):
            ctx["state"] = state
        result = rule.when.test(ctx)
        if result.error is not None:
            return f"rule {rule.name!r}: its condition {rule.when.source!r} failed when rechecked: {result.error}"
        if result.value:
            return None
        return f"rule {rule.name!r}: its condition {rule.when.source!r} no longer holds"

    # -- transactions -------------------------------------------------------------------------
    def prepare(
        self,
        events: Sequence[Event],
        state: JSON,
        version: int,
        *,
        pending: Container[str] | None = None,
    ) -> Scheduled:
        """``schedule`` as the first half of a transaction: the scheduler changes at once, and
        must then be ``commit``-ted or ``abort``-ed before the next ``prepare`` (SchedulerBusy
        otherwise). An abort restores the order counter, the issued counts and the stages."""
        if self._undo is not None:
            raise SchedulerBusy("a prepared schedule is awaiting commit or abort")
        undo = _Undo(self._order, dict(self._issued), self._started, self.stages.mark())
        self.gathers.begin()
        scheduled = self.schedule(events, state, version, pending=pending)
        self._undo = undo
        return scheduled

    def commit(self) -> None:
        """Keep what the last ``prepare`` changed (no-op when nothing is prepared)."""
        self._undo = None
        self.gathers.commit()

    def abort(self) -> None:
        """Undo the last ``prepare`` (no-op when nothing is prepared)."""
        undo, self._undo = self._undo, None
        if undo is None:
            return
        self._order, self._issued, self._started = undo.order, undo.issued, undo.started
        self.stages.restore(undo.stages)
        self.gathers.rollback()

    # -- persistence ------------------------------------------------------------------------
    def to_json(self) -> dict[str, JSON]:
        """The scheduler's restorable state as plain JSON."""
        return {
            "order": self._order,
            "started": self._started,
            "issued": dict(sorted(self._issued.items())),
            "stages": self.stages.to_json(),
        }

    @classmethod
    def from_json(cls, blueprint: CompiledBlueprint, data: dict[str, Any]) -> Scheduler:
        """Restore a scheduler saved by to_json, for the same blueprint."""
        stages = StageTracker.from_json(blueprint.stages, data.get("stages") or {})
        sched = cls(blueprint, order=int(data.get("order", 0)), stages=stages)
        sched._started = bool(data.get("started", False))
        sched._issued = {str(k): int(v) for k, v in (data.get("issued") or {}).items()}
        return sched


@dataclass(frozen=True, slots=True)
class _Undo:
    """What ``Scheduler.abort`` restores (all small: counters and stage statuses)."""

    order: int
    issued: dict[str, int]
    started: bool
    stages: StageMark


class _Batch:
    """Invocations created for one version: ids, order, de-duplication, worker limits."""

    def __init__(self, sched: Scheduler, version: int, pending: Container[str] | None, prefix: str = "") -> None:
        self.sched = sched
        self.version = version
        self.pending = pending
        self.prefix = prefix or f"v{version}."
        self.keys: set[str] = set()
        self.invocations: list[Invocation] = []
        self.diagnostics: list[Diagnostic] = []
        self.notes: list[dict[str, JSON]] = []

    def note(self, rule: CompiledRule, note: dict[str, JSON]) -> None:
        """Log ``note`` and fold it into the gathers; invoke the rule's worker when it fires."""
        self.notes.append(note)
        fired = self.sched.gathers.apply(note)
        if fired is not None:
            self.fire(rule, fired)

    def fire(self, rule: CompiledRule, fired: Fired) -> None:
        """The invocation of a join or batch that fired (its event says what it gathered)."""
        self.add(rule, fired.event, fired.binding)

    def condition(self, rule: CompiledRule, ctx: dict[str, Any] | SharedContext, event: JSON) -> bool:
        assert rule.when is not None
        result = rule.when.test(ctx)
        if result.error is not None:
            msg = f"condition {rule.when.source!r} failed: {result.error}"
            self.diagnostics.append(Diagnostic("rule", rule.name, self.version, msg, event))
            return False
        return bool(result.value)

    def add(self, rule: CompiledRule, event: JSON, binding: tuple[str, ...]) -> None:
        worker = rule.spec.invoke
        key = canonical_str([worker, list(binding)])
        if key in self.keys or (self.pending is not None and key in self.pending):
            return
        sched = self.sched
        contract = sched.blueprint.workers.get(worker)
        limit = contract.spec.max_invocations if contract is not None else None
        if limit is not None and sched._issued.get(worker, 0) >= limit:
            msg = f"worker {worker!r} reached max_invocations={limit}; not invoked"
            self.diagnostics.append(Diagnostic("limit", rule.name, self.version, msg, event))
            return
        self.keys.add(key)
        meta: dict[str, Any] = {"stage": rule.spec.stage} if rule.spec.stage is not None else {}
        if rule.spec.recheck:
            meta[RECHECK_META] = rule.index  # the rule whose condition ``lapsed`` checks again
        inv = Invocation(
            id=f"{self.prefix}{len(self.invocations)}",
            worker=worker,
            priority=rule.spec.priority,
            order=sched._order,
            event=event,
            rule=rule.name,
            binding=binding,
            meta=meta,
        )
        sched._order += 1
        sched._issued[worker] = sched._issued.get(worker, 0) + 1
        self.invocations.append(inv)


def _key_problem(value: Any) -> str | None:
    """Why a correlation key's value cannot key a join (null, not JSON, too long), or None."""
    if value is None:
        return "the key is null"
    try:
        text = canonical_str(value)
    except (TypeError, ValueError):
        return f"the key is a {type(value).__name__}, not a JSON value"
    return f"the key is longer than {MAX_KEY_CHARS} characters" if len(text) > MAX_KEY_CHARS else None


def _context(
    rule: CompiledRule, event_json: JSON, event: Event | None, binding: tuple[str, ...], state: JSON
) -> dict[str, Any]:
    expr = rule.when
    assert expr is not None
    ctx: dict[str, Any] = {}
    if expr.uses("event"):
        ctx["event"] = event_json
    if expr.uses("bindings"):
        ctx["bindings"] = list(binding)
    if expr.uses("value"):
        ctx["value"] = _value(event, state)
    if expr.uses("state"):
        ctx["state"] = state
    return ctx


class _EventContext:
    """The CEL variables of one event, converted once for all the rules it triggers.

    A plain dict is converted to CEL again at every evaluation; the rules of one event see the
    same ``event``, ``value`` and ``state``, so each is bound once, when a rule first uses it
    (a rule never pays for a variable it does not name). ``bindings`` differ per rule and are
    bound again for each rule that uses them. An expression's result does not depend on
    variables it does not name, and the budget estimate only counts the ones it names, so
    each rule gets what it got from its own dict.
    """

    def __init__(self, event_json: JSON, event: Event, state: JSON) -> None:
        self.event_json = event_json
        self.event = event
        self.state = state
        self.ctx = SharedContext({})
        self.bound: set[str] = set()

    def bind(self, expr: CelExpr, binding: tuple[str, ...]) -> SharedContext:
        """The shared context, with every variable ``expr`` names bound for this rule."""
        for name in ("event", "value", "state"):
            if name not in self.bound and expr.uses(name):
                if name == "event":
                    self.ctx.set(name, self.event_json)
                elif name == "value":
                    self.ctx.set(name, _value(self.event, self.state))
                else:
                    self.ctx.set(name, self.state)
                self.bound.add(name)
        if expr.uses("bindings"):
            self.ctx.set("bindings", list(binding))
        return self.ctx


def _value(event: Event | None, state: JSON) -> JSON:
    if event is None or event.kind == "delete":
        return None
    found = resolve(state, event.tokens)
    return None if found is MISSING else found
