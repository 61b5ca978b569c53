"""The guard stage: checks a blueprint adds after ``invariants``, decided from logged verdicts.

A guard is a Python function or a model judge (``slateboard.guards`` runs them). The kernel never
runs one: it is pure and synchronous, and a guard may take seconds or call a model. The step
engine runs a proposal's guards first and hands their verdicts to the kernel in the proposal's
meta (``GUARDS_META``); the kernel's last stage reads them, so they are part of the record, its
hash and the chain, and replay decides the same record again from the logged verdicts without
calling any function or model.

A verdict is a JSON object: ``name`` (the guard's), ``ok`` (true: the guard lets the patch
through), ``reason`` (why, in the guard's words), ``by`` (``function`` or ``model``) and, for a
model judge, ``model``, ``verdict`` (its typed reply) and ``usage`` (the call's tokens, which
the board's accounts count like any other model call). ``error`` says why a guard could not
decide (it raised, timed out, or a judge's reply did not fit its verdict type): that verdict is
a failure.

Every declared guard that applies to the proposing worker needs a verdict before a patch that
changes the state is accepted: a missing one rejects at ``guard:<name>`` (``Decision.unguarded``
then tells the engine to run the guards). A patch a human approved is not guarded again (the
person is its check).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..vocabulary import OUTCOME_ACCEPTED
from .canonical import JSON
from .record import PROPOSAL_KIND, Record, Usage

__all__ = [
    "APPROVED_META",
    "GUARDS_META",
    "GUARD_STAGE_PREFIX",
    "GuardTerms",
    "guard_problem",
    "guard_stage",
    "guard_usages",
    "verdicts_of",
]

GUARDS_META = "guards"
"""The proposal/record meta key holding the guards' verdicts (a list, in the order they ran)."""
GUARD_STAGE_PREFIX = "guard:"
"""A rejection by guard ``x`` is at stage ``guard:x``."""
APPROVED_META = "approved"
"""The meta key of a proposal committing a patch a human approved (its held record's seq)."""


def guard_stage(name: str) -> str:
    """The stage name of guard ``name``'s rejections."""
    return f"{GUARD_STAGE_PREFIX}{name}"


@dataclass(frozen=True, slots=True)
class GuardTerms:
    """What the kernel reads of one declared guard: its ``name``, the ``workers`` whose proposals
    it checks (empty: every worker's), and whether its reason may reach a worker that cannot read
    the whole state (``shares_reason``; else the reason is withheld from such a worker, as an
    invariant's details are, and kept in the record's meta)."""

    name: str
    workers: frozenset[str] = frozenset()
    shares_reason: bool = False

    def applies(self, worker: str) -> bool:
        """True when this guard checks ``worker``'s proposals."""
        return not self.workers or worker in self.workers


def verdicts_of(meta: Mapping[str, JSON]) -> dict[str, dict[str, JSON]] | None:
    """The logged verdicts by guard name (the first one of a name counts); None when the meta
    holds none at all (the guards did not run)."""
    found = meta.get(GUARDS_META)
    if found is None:
        return None
    out: dict[str, dict[str, JSON]] = {}
    if isinstance(found, list):
        for v in found:
            if isinstance(v, dict) and isinstance(v.get("name"), str):
                out.setdefault(str(v["name"]), v)
    return out


def first_failure(
    terms: Sequence[GuardTerms], worker: str, meta: Mapping[str, JSON]
) -> tuple[GuardTerms, str, bool] | None:
    """The first applicable guard (declared order) whose verdict is missing or not ``ok``: the
    guard, its reason (the verdict's, or why there is none) and whether the verdict was missing;
    None when every applicable guard let the patch through."""
    verdicts = verdicts_of(meta) or {}
    for t in terms:
        if not t.applies(worker):
            continue
        v = verdicts.get(t.name)
        if v is None:
            return t, f"no verdict of guard {t.name!r} was logged (guards run in the step engine)", True
        if v.get("ok") is not True:
            reason = v.get("reason")
            return t, (reason if isinstance(reason, str) and reason else f"guard {t.name!r} refused the patch"), False
    return None


def guard_problem(rec: Record, terms: Sequence[GuardTerms]) -> str | None:
    """Why ``rec``'s outcome does not follow from its logged verdicts, or None (plain replay's
    check: a verdict edited in a re-sealed log cannot make a refused patch look accepted, or an
    accepted one refused). Records other than proposals, and proposals rejected before the guard
    stage, pass."""
    if rec.kind != PROPOSAL_KIND or rec.worker is None:
        return None
    stage = rec.stage or ""
    guarded = stage.startswith(GUARD_STAGE_PREFIX)
    if rec.outcome == OUTCOME_ACCEPTED and APPROVED_META not in rec.meta:
        failed = first_failure(terms, rec.worker, rec.meta)
        if failed is not None:
            t, reason, missing = failed
            why = "has no verdict" if missing else f"logs a refusal ({reason})"
            return f"accepted record, but guard {t.name!r} {why}"
    elif guarded:
        name = stage[len(GUARD_STAGE_PREFIX) :]
        v = (verdicts_of(rec.meta) or {}).get(name)
        if v is not None and v.get("ok") is True:
            return f"rejected at {stage}, but the logged verdict of guard {name!r} lets the patch through"
    return None


def guard_usages(meta: Mapping[str, JSON]) -> list[tuple[str | None, Usage]]:
    """(model, usage) of every model judge's call logged in a record's meta (empty when none):
    what the accounts add to the record's own usage."""
    found = meta.get(GUARDS_META)
    if not isinstance(found, list):
        return []
    out: list[tuple[str | None, Usage]] = []
    for v in found:
        if isinstance(v, dict) and isinstance(v.get("usage"), dict):
            model = v.get("model")
            try:
                usage = Usage.from_json(v["usage"])
            except (TypeError, ValueError):
                continue  # a malformed usage counts nothing (replay names the record)
            out.append((model if isinstance(model, str) else None, usage))
    return out
