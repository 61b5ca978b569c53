"""Replay: rebuild every state of a board from its blueprint, initial state and log.

Replay calls no worker and no model. It checks the hash chain (each record's ``prev`` and its
own ``hash``), the sequence numbers, and that applying each accepted patch reproduces the
recorded state hash; the first record that does not match is reported, never an exception.
With ``revalidate=True`` every proposal is re-run through the full kernel and its outcome
and stage must match the log as well.

Guard verdicts (``kernel.guardstage``) are never re-computed here: revalidation decides again
from the logged verdicts, and plain replay checks that each proposal's outcome follows from them
(an accepted record with a refusing or missing verdict, or a guard rejection whose verdict lets
the patch through, fails at that record).

A replay from the start also checks the genesis: record 1 binds the blueprint's digest and
the initial state's hash (``record.GENESIS_META``), so a stored blueprint or initial state
edited after the fact fails at record 0. Logs written before that binding replay as before
and are reported with ``legacy_genesis`` set.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import cast

import orjson

from ..vocabulary import OUTCOME_ACCEPTED, OUTCOME_REJECTED, RecordKind
from .canonical import JSON
from .guardstage import GuardTerms, guard_problem
from .kernel import Kernel, Proposal
from .patch import ApplyError, OpError, apply_ops, check_ops
from .protocol import KernelBlueprint
from .record import GENESIS, PROPOSAL_KIND, Record, genesis_problem, is_legacy_genesis
from .statehash import StateHasher


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """Outcome of a replay: where it stopped, why, and the state it reached."""

    ok: bool
    checked: int
    version: int
    state: JSON
    state_hash: str
    bad_seq: int | None = None
    problem: str | None = None
    legacy_genesis: bool = False

    def __str__(self) -> str:
        if self.ok:
            legacy = " (legacy log: the blueprint and initial state are not bound to it)" if self.legacy_genesis else ""
            return f"replay ok: {self.checked} records, version {self.version}, state {self.state_hash[:12]}{legacy}"
        return f"replay failed at record {self.bad_seq}: {self.problem}"


def replay(
    blueprint: KernelBlueprint,
    initial_state: JSON,
    records: Iterable[Record],
    *,
    revalidate: bool = False,
    start_version: int = 0,
    start_seq: int = 0,
    start_hash: str = GENESIS,
    on_state: Callable[[Record, JSON], None] | None = None,
) -> ReplayReport:
    """Replay ``records`` over a copy of ``initial_state`` (see module docstring).

    ``start_*`` let a replay begin from a snapshot instead of the initial state. ``on_state``
    is called after every record with the record and the (live, do not mutate) state.
    A replay from the start fails at record 0 (``genesis``) unless ``blueprint`` and
    ``initial_state`` are the ones the board was created with (a board created with inputs has
    an initial state of its own): to check a stored board, ``slateboard.runtime.verify_board``
    takes both from the store.
    """
    try:
        state = orjson.loads(orjson.dumps(initial_state))
        hasher = StateHasher(state)
    except (TypeError, ValueError, RecursionError) as exc:
        return ReplayReport(
            False, 0, start_version, None, "", start_seq + 1, f"the starting state is not usable: {exc}"
        )
    legacy = False
    if start_seq == 0:
        records = iter(records)
        first = next(records, None)
        if first is not None:
            # Only an intact record 1 speaks for the genesis; a damaged one is named at its own
            # position by the chain checks below.
            try:
                intact = _check_link(first, start_seq, start_hash) is None
                problem = genesis_problem(first, blueprint.digest, hasher.hexdigest) if intact else None
                legacy = intact and is_legacy_genesis(first)
            except Exception:  # a record with fields of the wrong type: the chain checks name it
                problem, legacy = None, False
            if problem is not None:
                return ReplayReport(False, 0, start_version, state, hasher.hexdigest, 0, f"genesis: {problem}")
            records = itertools.chain([first], records)
    if revalidate:
        report = _revalidate(blueprint, state, records, start_version, start_seq, start_hash, on_state)
        return replace(report, legacy_genesis=legacy) if report.ok else report
    version, seq, prev = start_version, start_seq, start_hash
    checked = 0
    terms = tuple(t for t in getattr(blueprint, "guard_terms", ()) if isinstance(t, GuardTerms))

    def fail(rec: Record, problem: str) -> ReplayReport:
        # Name the position in the log: a damaged record may carry a damaged seq of its own.
        return ReplayReport(False, checked, version, state, hasher.hexdigest, seq + 1, problem)

    for rec in records:
        try:
            problem = _check_link(rec, seq, prev)
        except Exception as exc:  # a re-sealed record with fields of the wrong type
            return fail(rec, f"malformed record: {type(exc).__name__}: {exc}")
        if problem:
            return fail(rec, problem)
        guarded = guard_problem(rec, terms)
        if guarded is not None:
            return fail(rec, f"guard verdicts: {guarded}")
        current = hasher.hexdigest
        if rec.state_before != current:
            return fail(
                rec,
                f"state_before {rec.state_before[:12]} does not match replayed state {current[:12]}",
            )
        if rec.outcome == OUTCOME_ACCEPTED:
            if rec.version != version + 1:
                return fail(rec, f"accepted record has version {rec.version}, expected {version + 1}")
            try:
                ops = check_ops(orjson.loads(rec.patch or "null"))
                applied = apply_ops(state, ops, hasher.observe)
            except (orjson.JSONDecodeError, OpError, ApplyError, TypeError, ValueError) as exc:
                return fail(rec, f"accepted patch does not apply: {exc}")
            state = applied.root
            version = rec.version
            if hasher.hexdigest != rec.state_after:
                return fail(
                    rec,
                    f"state hash after {rec.state_after[:12]} does not match replayed {hasher.hexdigest[:12]}",
                )
        else:
            if rec.version != version:
                return fail(
                    rec,
                    f"{rec.outcome} record changes version to {rec.version} (expected {version})",
                )
            if rec.state_after != current:
                return fail(rec, f"{rec.outcome} record claims the state changed")
        seq, prev = rec.seq, rec.hash
        checked += 1
        if on_state is not None:
            on_state(rec, state)
    return ReplayReport(True, checked, version, state, hasher.hexdigest, legacy_genesis=legacy)


def _check_link(rec: Record, seq: int, prev: str) -> str | None:
    if not (
        type(rec.seq) is int
        and type(rec.version) is int
        and isinstance(rec.state_before, str)
        and isinstance(rec.state_after, str)
        and isinstance(rec.prev, str)
        and isinstance(rec.hash, str)
        and isinstance(rec.outcome, str)
        and isinstance(rec.meta, dict)
        and (rec.patch is None or isinstance(rec.patch, str))
    ):
        return "malformed record: a field has the wrong type"
    if rec.seq != seq + 1:
        return f"sequence number {rec.seq}, expected {seq + 1}"
    if rec.prev != prev:
        return f"prev hash {rec.prev[:12]} does not chain to the previous record {prev[:12]}"
    actual = rec.compute_hash()
    if actual != rec.hash:
        return f"record hash {rec.hash[:12]} does not match its content ({actual[:12]}): the record was altered"
    return None


def _revalidate(
    blueprint: KernelBlueprint,
    state: JSON,
    records: Iterable[Record],
    version: int,
    seq: int,
    prev: str,
    on_state: Callable[[Record, JSON], None] | None,
) -> ReplayReport:
    kernel = Kernel(blueprint, state, version=version, seq=seq, last_hash=prev)
    checked = 0
    for rec in records:
        position = kernel.seq + 1
        try:
            problem = redecide(kernel, rec)
        except Exception as exc:  # malformed but re-sealed records must be reported, not raised
            problem = f"malformed record: {type(exc).__name__}: {exc}"
        if problem:
            return ReplayReport(False, checked, kernel.version, kernel.state, kernel.state_hash, position, problem)
        checked += 1
        if on_state is not None:
            on_state(rec, kernel.state)
    return ReplayReport(True, checked, kernel.version, kernel.state, kernel.state_hash)


def redecide(kernel: Kernel, rec: Record) -> str | None:
    """Re-run one logged record through the kernel; the problem, or None when it matches."""
    problem = _check_link(rec, kernel.seq, kernel.last_hash)
    if problem is not None:
        return problem
    if rec.kind == PROPOSAL_KIND and rec.meta.get("patch_lossy") and rec.outcome == OUTCOME_REJECTED:
        # The log keeps only a lossy copy of what was proposed: adopt its verdict as logged.
        return _adopt(kernel, rec)
    if rec.kind == PROPOSAL_KIND:
        if not isinstance(rec.worker, str):
            return "malformed record: a proposal without a worker"
        viewed = rec.meta.get("viewed_version")
        proposal = Proposal(
            rec.worker,
            rec.patch if rec.patch is not None else "",
            viewed if isinstance(viewed, int) and not isinstance(viewed, bool) else None,
            rec.invocation,
            rec.event,
            rec.view_hash,
            rec.usage,
            {k: v for k, v in rec.meta.items() if k != "viewed_version"},
        )
        decision = kernel.prepare(proposal)
        mine = decision.record
        if (mine.outcome, mine.stage, mine.state_after) != (rec.outcome, rec.stage, rec.state_after):
            kernel.abort(decision)
            return (
                f"kernel now decides {mine.outcome}/{mine.stage or '-'} "
                f"({mine.reason or 'ok'}), log says {rec.outcome}/{rec.stage or '-'}"
            )
        if mine.hash == rec.hash:
            kernel.commit(decision)
            return None
        kernel.abort(decision)
        if mine.outcome != OUTCOME_ACCEPTED:
            # Same verdict at the same stage; the reason text may quote a Python object that
            # the log only keeps as its repr, so adopt the logged record as it is.
            return _adopt(kernel, rec)
        return "re-decided record differs from the logged one"
    # The logged kind as it is, whatever it names: replay rebuilds the record, it does not judge it.
    decision = kernel.action(
        cast(RecordKind, rec.kind),
        rec.reason or "",
        worker=rec.worker,
        invocation=rec.invocation,
        meta=rec.meta,
        usage=rec.usage,
    )
    if decision.record.hash != rec.hash:
        kernel.abort(decision)
        return "action record differs when rebuilt"
    kernel.commit(decision)
    return None


def _adopt(kernel: Kernel, rec: Record) -> str | None:
    try:
        kernel.adopt(rec)
    except ValueError as exc:
        return str(exc)
    return None
