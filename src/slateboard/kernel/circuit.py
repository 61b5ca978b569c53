"""The circuit policy: deterministic reactions to a board run going wrong.

``CircuitPolicy.check`` is a pure function of the tail of the transaction log and the run's
spend (steps, tokens). It is meant to be called after every record and looks at no more than
``policy.tail`` records, so each call costs O(window) whatever the length of the log. Every
action other than ``continue`` is logged by the runner as a kernel action record
(``Kernel.action(kind="circuit", reason=action.reason, worker=action.worker,
meta=action.to_record_meta())``); those records are part of the log the policy reads back, which
is how it counts retries and knows a streak was already handled.

Triggers, in the order they are checked (the first that fires decides):

1. **budget**: ``steps >= limits.max_steps`` or ``tokens_used >= limits.max_tokens`` -> halt;
2. **model**: the last ``max_consecutive_invalid`` proposals (any worker) were all rejected at
   stage ``model`` (the provider never answered) -> halt with "model unavailable: <error>";
3. **cycle**: among the states of the last ``cycle_window`` accepted records (each record's
   ``state_after``, plus the ``state_before`` of the oldest), a state hash appears twice
   (A->B->A, or any revisit) -> halt, naming both versions;
4. **stuck**: none of the last ``stuck_after`` proposals was accepted -> halt;
4b. **alternation** (hysteresis): the last ``max_alternations`` accepted proposals since the
   last alternation action alternate between two workers (A-B-A-B...) and all overwrite at
   least one common path (appends ``/-`` excluded: they never undo each other) ->
   switch_worker away from the latest of the two, or halt once switched ``retries`` times.
   Unlike the cycle check it needs no state to repeat: two workers overwriting each other
   with ever new values are caught too;
5. **invalid**: the worker of the latest proposal has ``max_consecutive_invalid`` rejected
   proposals in a row -> ``on_invalid`` (retry_with_feedback with the rejection reasons,
   switch_worker, tighten_budget halving the worker's view budget, or halt); once that action
   was taken ``retries`` times since the worker's last non-rejected proposal, -> halt;
6. **noop**: the worker of the latest proposal has ``max_noops`` no-op proposals in a row ->
   switch_worker, or halt once switched ``retries`` times.

Streaks are per worker: other workers' records in between neither extend nor break them, and
``stale`` rejections (a concurrency artefact, re-queued by the runner, not the worker's fault)
are skipped. A logged circuit action for that worker and trigger ends the streak it handled: the
worker gets a fresh ``max_consecutive_invalid`` (or ``max_noops``) proposals before the next
action. The action's ``details`` carry ``trigger`` and, for retry/switch/tighten, ``retry`` (how
many times this action has now been taken in the current run of failures).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import orjson

from ..errors import InvalidInput
from ..vocabulary import (
    BUDGET_EXHAUSTED,
    MODEL_UNAVAILABLE,
    OUTCOME_ACCEPTED,
    OUTCOME_ACTION,
    OUTCOME_NOOP,
    OUTCOME_REJECTED,
    Outcome,
)
from .canonical import JSON
from .protocol import CircuitTerms, KernelBlueprint, KernelLimits
from .record import CIRCUIT_KIND, PROPOSAL_KIND, Record, Usage

CONTINUE = "continue"
RETRY_WITH_FEEDBACK = "retry_with_feedback"
SWITCH_WORKER = "switch_worker"
TIGHTEN_BUDGET = "tighten_budget"
HALT = "halt"
ACTION_KINDS = (CONTINUE, RETRY_WITH_FEEDBACK, SWITCH_WORKER, TIGHTEN_BUDGET, HALT)

_ON_INVALID = {"retry": RETRY_WITH_FEEDBACK, "switch": SWITCH_WORKER, "tighten": TIGHTEN_BUDGET, "halt": HALT}
_MIN_VIEW_BUDGET = 64
_REASON_CAP = 1000
_TAIL_FACTOR = 4


@dataclass(frozen=True, slots=True)
class CircuitAction:
    """The policy's verdict: ``kind`` (one of ACTION_KINDS), the worker it concerns, a reason
    for the log, and JSON ``details`` (always with ``trigger`` unless ``continue``).

    ``details`` must be treated as read-only; equal logs give equal actions.
    """

    kind: str
    worker: str | None = None
    reason: str = ""
    details: dict[str, JSON] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in ACTION_KINDS:
            raise InvalidInput(f"unknown circuit action {self.kind!r}; expected one of {', '.join(ACTION_KINDS)}")

    @property
    def logged(self) -> bool:
        """True for every action that must be written to the log (all but ``continue``)."""
        return self.kind != CONTINUE

    @property
    def trigger(self) -> str | None:
        """What fired: budget, model, cycle, stuck, alternation, invalid or noop (None for ``continue``)."""
        t = self.details.get("trigger")
        return t if isinstance(t, str) else None

    @property
    def feedback(self) -> str | None:
        """For retry_with_feedback: the rejection reasons to give the worker, one per line."""
        f = self.details.get("feedback")
        return f if isinstance(f, str) else None

    def to_record_meta(self) -> dict[str, JSON]:
        """The ``meta`` of the kernel action record that logs this action."""
        return {"action": self.kind, "worker": self.worker, "details": dict(self.details)}

    @classmethod
    def from_record(cls, record: Record) -> CircuitAction | None:
        """The action a circuit record logged, or None for any other record."""
        if record.outcome != OUTCOME_ACTION or record.kind != CIRCUIT_KIND:
            return None
        meta = record.meta or {}
        kind = meta.get("action")
        if kind not in ACTION_KINDS:
            return None
        worker = meta.get("worker", record.worker)
        details = meta.get("details")
        return cls(
            str(kind),
            worker if isinstance(worker, str) else None,
            record.reason or "",
            dict(details) if isinstance(details, dict) else {},
        )


CONTINUE_ACTION = CircuitAction(CONTINUE)


class CircuitPolicy:
    """The circuit thresholds of one blueprint, applied to a log tail (see module docstring)."""

    def __init__(
        self, spec: CircuitTerms, limits: KernelLimits, *, view_budgets: Mapping[str, int] | None = None
    ) -> None:
        self.spec = spec
        self.limits = limits
        self.view_budgets: dict[str, int] = dict(view_budgets or {})
        span = max(spec.max_consecutive_invalid, spec.max_noops) * (spec.retries + 1) + spec.retries + 1
        self.tail: int = _TAIL_FACTOR * max(spec.stuck_after, spec.cycle_window + 1, span, spec.max_alternations)
        """The most records ``check`` looks at (the newest ones)."""

    @classmethod
    def from_blueprint(cls, blueprint: KernelBlueprint) -> CircuitPolicy:
        """The policy of a compiled blueprint, with its workers' view budgets."""
        budgets = {name: c.spec.view_budget for name, c in blueprint.workers.items()}
        return cls(blueprint.spec.circuit, blueprint.spec.limits, view_budgets=budgets)

    def check(self, records: Sequence[Record], *, tokens_used: int, steps: int) -> CircuitAction:
        """The action the log calls for now (``continue`` when nothing fired).

        Pure and deterministic: reads only the last ``self.tail`` records of ``records`` and the
        two counters; the same inputs always give an equal action.
        """
        budget = self._budget(tokens_used, steps)
        if budget is not None:
            return budget
        n = len(records)
        tail = [records[i] for i in range(max(0, n - self.tail), n)]
        for found in (self._model(tail), self._cycle(tail), self._stuck(tail), self._alternation(tail)):
            if found is not None:
                return found
        worker = next((r.worker for r in reversed(tail) if r.kind == PROPOSAL_KIND), None)
        if worker is None:
            return CONTINUE_ACTION
        for found in (self._invalid(tail, worker), self._noop(tail, worker)):
            if found is not None:
                return found
        return CONTINUE_ACTION

    # -- triggers ---------------------------------------------------------------------------
    def _budget(self, tokens_used: int, steps: int) -> CircuitAction | None:
        lim = self.limits
        if steps >= lim.max_steps:
            return CircuitAction(
                HALT,
                None,
                f"step {BUDGET_EXHAUSTED}: {steps} steps (max_steps={lim.max_steps})",
                {"trigger": "budget", "budget": "steps", "used": steps, "limit": lim.max_steps},
            )
        if lim.max_tokens is not None and tokens_used >= lim.max_tokens:
            return CircuitAction(
                HALT,
                None,
                f"token {BUDGET_EXHAUSTED}: {tokens_used} tokens (max_tokens={lim.max_tokens})",
                {"trigger": "budget", "budget": "tokens", "used": tokens_used, "limit": lim.max_tokens},
            )
        return None

    def _cycle(self, tail: list[Record]) -> CircuitAction | None:
        window = self.spec.cycle_window
        accepted: list[Record] = []
        counted: set[int] = set()
        for rec in reversed(tail):
            # A record given twice (by seq) is one transition: a version never repeats itself.
            if rec.outcome == OUTCOME_ACCEPTED and rec.seq not in counted:
                counted.add(rec.seq)
                accepted.append(rec)
                if len(accepted) == window:
                    break
        if len(accepted) < 2:
            return None
        accepted.reverse()
        states = [(accepted[0].state_before, accepted[0].version - 1)]
        states.extend((r.state_after, r.version) for r in accepted)
        seen: dict[str, int] = {}
        found: tuple[int, int, str] | None = None
        for h, version in states:
            if seen.get(h) == version:
                continue
            if h in seen:
                found = (seen[h], version, h)
            seen[h] = version
        if found is None:
            return None
        earlier, later, h = found
        worker = next((r.worker for r in reversed(accepted) if r.version == later), None)
        return CircuitAction(
            HALT,
            worker,
            f"state cycle: the state at version {later} repeats the state at version {earlier} "
            f"(within the last {len(accepted)} accepted transitions, cycle_window={window})",
            {"trigger": "cycle", "versions": [earlier, later], "state_hash": h},
        )

    def _model(self, tail: list[Record]) -> CircuitAction | None:
        """The last ``max_consecutive_invalid`` proposals all failed at stage ``model`` (the
        provider never answered): halt as "model unavailable" with the provider's error, rather
        than as invalid proposals (no retry can fix an unreachable or refusing provider)."""
        threshold = self.spec.max_consecutive_invalid
        recent = [r for r in tail if r.kind == PROPOSAL_KIND][-threshold:]
        if len(recent) < threshold or any(r.stage != "model" for r in recent):
            return None
        last = recent[-1]
        details: dict[str, JSON] = {
            "trigger": "model",
            "streak": len(recent),
            "rejections": [{"seq": r.seq, "stage": r.stage, "reason": _cap(r.reason or "")} for r in recent],
        }
        reason = f"{MODEL_UNAVAILABLE}: {_cap(last.reason or '')} ({len(recent)} consecutive model failures)"
        return CircuitAction(HALT, last.worker, reason, details)

    def _stuck(self, tail: list[Record]) -> CircuitAction | None:
        limit = self.spec.stuck_after
        count = 0
        first_seq = None
        for rec in reversed(tail):
            if rec.kind != PROPOSAL_KIND:
                continue
            if rec.outcome == OUTCOME_ACCEPTED:
                return None
            count += 1
            first_seq = rec.seq
            if count == limit:
                return CircuitAction(
                    HALT,
                    None,
                    f"stuck: none of the last {limit} proposals was accepted (since record {first_seq}, stuck_after={limit})",
                    {"trigger": "stuck", "proposals": limit, "since_seq": first_seq},
                )
        return None

    def _alternation(self, tail: list[Record]) -> CircuitAction | None:
        """Hysteresis: two workers overwriting the same paths turn about (A-B-A-B...)."""
        n = self.spec.max_alternations
        if n < 2:
            return None
        recent: list[Record] = []
        prior: int | None = None
        for rec in reversed(tail):
            act = CircuitAction.from_record(rec)
            if act is not None and act.trigger == "alternation":
                r = act.details.get("retry")
                prior = r if isinstance(r, int) else self.spec.retries
                break
            if rec.kind == PROPOSAL_KIND and rec.outcome == OUTCOME_ACCEPTED and len(recent) < n:
                recent.append(rec)
        if len(recent) < n:
            return None  # not enough accepted proposals since the last alternation action
        recent.reverse()
        workers = [r.worker for r in recent]
        if len(set(workers)) != 2 or any(a == b for a, b in pairwise(workers)):
            return None
        common = set.intersection(*(_overwritten(r) for r in recent))
        if not common:
            return None
        done = prior or 0
        latest = workers[-1]
        pair = sorted({w for w in workers if w is not None})
        head = (
            f"alternation: {pair[0]!r} and {pair[1]!r} overwrote {', '.join(sorted(common))} in turn "
            f"{n} times (records {recent[0].seq}..{recent[-1].seq}, max_alternations={n})"
        )
        details: dict[str, JSON] = {
            "trigger": "alternation",
            "workers": list(pair),
            "paths": sorted(common),
            "seqs": [r.seq for r in recent],
        }
        if done >= self.spec.retries:
            return CircuitAction(
                HALT, latest, f"{head} after {done} switch(es) (retries={self.spec.retries}): halting",
                details | {"escalated": self.spec.retries > 0, "retries": done},
            )  # fmt: skip
        k = done + 1
        return CircuitAction(
            SWITCH_WORKER, latest, f"{head}: switch {k} of {self.spec.retries} away from {latest!r}",
            details | {"retry": k},
        )  # fmt: skip

    def _streak(self, tail: list[Record], worker: str, outcome: Outcome, trigger: str) -> tuple[list[Record], int]:
        """The worker's latest run of ``outcome`` proposals since the last action for this
        trigger (oldest first), and that action's ``retry`` count (0 when there was none)."""
        streak: list[Record] = []
        prior = 0
        for rec in reversed(tail):
            if rec.outcome == OUTCOME_ACTION:
                act = CircuitAction.from_record(rec)
                if act is not None and act.worker == worker and act.trigger == trigger:
                    r = act.details.get("retry")
                    prior = r if isinstance(r, int) else self.spec.retries
                    break
                continue
            if rec.kind != PROPOSAL_KIND or rec.worker != worker:
                continue
            if (rec.outcome == OUTCOME_REJECTED and rec.stage == "stale") or rec.stage == "decline":
                continue  # neither counts nor breaks a streak: a decline is an answer, not a failure
            if rec.outcome != outcome:
                break
            streak.append(rec)
        streak.reverse()
        return streak, prior

    def _invalid(self, tail: list[Record], worker: str) -> CircuitAction | None:
        spec = self.spec
        threshold = spec.max_consecutive_invalid
        streak, prior = self._streak(tail, worker, OUTCOME_REJECTED, "invalid")
        if len(streak) < threshold:
            return None
        recent = streak[-threshold:]
        rejections: list[JSON] = [{"seq": r.seq, "stage": r.stage, "reason": _cap(r.reason or "")} for r in recent]
        head = f"{len(streak)} consecutive invalid proposals by {worker!r} (max_consecutive_invalid={threshold})"
        base: dict[str, JSON] = {"trigger": "invalid", "streak": len(streak), "rejections": rejections}
        kind = _ON_INVALID[spec.on_invalid]
        if kind == HALT:
            return CircuitAction(HALT, worker, f"{head}: on_invalid=halt", base)
        if prior >= spec.retries:
            return CircuitAction(
                HALT,
                worker,
                f"{head} after {prior} {spec.on_invalid} action(s) (retries={spec.retries}): escalating to halt",
                base | {"escalated": True, "retries": prior},
            )
        k = prior + 1
        details = base | {"retry": k}
        if kind == RETRY_WITH_FEEDBACK:
            lines = [f"[{r.stage}] {_cap(r.reason or '')}" for r in recent]
            details["feedback"] = "\n".join(lines)
            reason = f"{head}: retry {k} of {spec.retries} with the rejection reasons as feedback"
        elif kind == SWITCH_WORKER:
            reason = f"{head}: switch {k} of {spec.retries} to another worker"
        else:
            details["factor"] = 0.5**k
            base_budget = self.view_budgets.get(worker)
            if base_budget is not None:
                details["view_budget"] = max(_MIN_VIEW_BUDGET, base_budget >> k)
            shown = f" to {details['view_budget']}" if "view_budget" in details else ""
            reason = f"{head}: tighten {k} of {spec.retries}: halve the view budget{shown}"
        return CircuitAction(kind, worker, reason, details)

    def _noop(self, tail: list[Record], worker: str) -> CircuitAction | None:
        spec = self.spec
        streak, prior = self._streak(tail, worker, OUTCOME_NOOP, "noop")
        if len(streak) < spec.max_noops:
            return None
        head = f"{len(streak)} consecutive no-op proposals by {worker!r} (max_noops={spec.max_noops})"
        base: dict[str, JSON] = {"trigger": "noop", "streak": len(streak), "seqs": [r.seq for r in streak]}
        if prior >= spec.retries:
            return CircuitAction(
                HALT,
                worker,
                f"{head} after {prior} switch(es) (retries={spec.retries}): halting",
                base | {"escalated": spec.retries > 0, "retries": prior},
            )
        k = prior + 1
        return CircuitAction(
            SWITCH_WORKER, worker, f"{head}: switch {k} of {spec.retries} to another worker", base | {"retry": k}
        )


def circuit_summary(rec: Record) -> Record:
    """What ``CircuitPolicy.check`` reads of a record, and nothing else: a proposal's copy
    without its event, invocation, view hash, usage, meta (the worker's diagnostics) and the
    values of its patch (each op keeps its ``op`` and ``path``, all ``_overwritten`` reads); any
    other record (an action, a run end, an approval) as it is, since the policy reads its meta.
    The copy's ``hash`` and ``prev`` are empty: it is a summary for the policy's window (held
    for every running board, so its size is memory per board), never a log record."""
    if rec.kind != PROPOSAL_KIND:
        return rec
    patch = _paths_only(rec.patch) if rec.accepted else None
    # Built directly (dataclasses.replace introspects the fields on every call: once per step,
    # for every running board). The window holds up to 64 summaries per board, most of them
    # alike: the paths text is interned (a board's workers repeat a handful of patch shapes)
    # and every summary shares one empty meta (nothing mutates a record's meta).
    return Record(
        rec.seq, rec.kind, rec.outcome, rec.worker, None, None, None,
        None if patch is None else sys.intern(patch), rec.stage, rec.reason,
        rec.version, rec.state_before, rec.state_after, _NO_USAGE, "", _NO_META, "",
    )  # fmt: skip


_NO_USAGE = Usage()
_NO_META: dict[str, JSON] = {}


def _paths_only(patch: str | None) -> str | None:
    """A patch's JSON with each op's ``op`` and ``path`` (values dropped; an unreadable patch
    becomes None, which ``_overwritten`` reads as no paths, as it reads the unreadable)."""
    try:
        ops = orjson.loads(patch) if patch else None
    except ValueError:
        return None
    if not isinstance(ops, list):
        return None
    return orjson.dumps([{"op": op.get("op"), "path": op.get("path")} for op in ops if isinstance(op, dict)]).decode()


def _overwritten(rec: Record) -> set[str]:
    """The paths a record's patch replaces, removes or adds at a fixed location (appends with a
    final ``-`` and ``test`` ops are left out: they never undo another worker's write)."""
    try:
        ops = orjson.loads(rec.patch) if rec.patch else []
    except ValueError:
        return set()
    out: set[str] = set()
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, dict):
            continue
        path = op.get("path")
        if (
            isinstance(path, str)
            and op.get("op") in ("add", "replace", "remove", "move", "copy")
            and not path.endswith("/-")
        ):
            out.add(path)
    return out


def _cap(text: str) -> str:
    return text if len(text) <= _REASON_CAP else text[: _REASON_CAP - 3] + "..."


def actions_in(records: Sequence[Record]) -> list[CircuitAction]:
    """Every circuit action logged in ``records``, in log order (for audits and tests)."""
    out: list[CircuitAction] = []
    for rec in records:
        act = CircuitAction.from_record(rec)
        if act is not None:
            out.append(act)
    return out


__all__ = [
    "ACTION_KINDS",
    "CONTINUE",
    "CONTINUE_ACTION",
    "HALT",
    "RETRY_WITH_FEEDBACK",
    "SWITCH_WORKER",
    "TIGHTEN_BUDGET",
    "CircuitAction",
    "CircuitPolicy",
    "actions_in",
]
