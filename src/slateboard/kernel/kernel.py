"""The kernel: the only code path that changes a board's committed state.

Long by design: the eight stages are methods of one ``Kernel`` because each reads the same
committed state, the proposal's read scope and the effects the earlier stages computed, and
``abort`` must undo exactly what ``prepare`` did; this module is the only code that changes
committed state, so an auditor reads it in one place. The value types (``Proposal``,
``Decision``, ``Event``) and the message helpers at the end serve only these stages.

A proposal goes through the stages parse -> ops -> authorise -> stale -> preconditions ->
apply -> schema -> invariants -> guards (``guard:<name>``, decided from the verdicts the step
engine logged in the proposal's meta: see slateboard.kernel.guardstage). ``prepare`` runs them and returns a Decision holding the
record to append; the caller appends it durably and then calls ``commit`` (or ``abort`` if
the append failed, which restores the state exactly). ``submit`` does both for in-memory use.
The kernel does no I/O, reads no clock and calls no model; it never raises on bad input:
every fault becomes a rejection naming its stage and the path involved.
"""

from __future__ import annotations

import copy
import itertools
import reprlib
from collections import deque
from dataclasses import dataclass, field
from typing import Any, cast

import orjson
from mypy_extensions import mypyc_attr

from ..errors import InvalidInput, SlateboardError, detached
from ..vocabulary import OUTCOME_ACCEPTED, OUTCOME_ACTION, OUTCOME_HELD, OUTCOME_NOOP, OUTCOME_REJECTED, RecordKind
from ._busy import KernelBusy as KernelBusy
from .canonical import JSON, CanonicalError, JSONValue, canonical_str
from .cel import BUDGET_EXCEEDED
from .contract import WorkerContract
from .guardstage import GUARDS_META, GuardTerms, first_failure, guard_stage
from .invariants import CompiledInvariant, InvariantFailure, evaluate_targets, pre_patch_path, touched_targets
from .jsonvalue import JsonLimits, JsonValueError, check_json_value, parse_json_text
from .patch import Applied, ApplyError, Effect, Op, OpError, apply_ops, check_ops, rebase
from .pointer import (
    MISSING,
    Pattern,
    Tokens,
    format_pointer,
    is_array_index,
    parse_pointer,
    region_contains,
    resolve,
)  # fmt: skip
from .protocol import KernelBlueprint
from .readscope import ReadScope
from .record import (
    APPROVAL_DECISION_META,
    APPROVAL_KIND,
    APPROVAL_PATCH_META,
    APPROVAL_RECORD_META,
    APPROVAL_WORKER_META,
    APPROVED,
    GENESIS,
    GENESIS_META,
    PROPOSAL_KIND,
    REFUSED,
    Outcome,
    Record,
    Stage,
    Usage,
    genesis_binding,
)
from .statehash import StateHasher
from .visibility import Visibility, absent_answer, names_collection, widening

STALE_WINDOW = 4096
"""How many recent versions keep their changed paths for staleness checks."""


@dataclass(frozen=True, slots=True)
class Event:
    """A committed change: the op that made it, the concrete path, and whether it appended."""

    op: str
    path: str
    tokens: Tokens
    kind: str
    appended: bool = False
    version: int = 0

    def to_json(self) -> dict[str, JSONValue]:
        """Plain JSON form (what invocations and records keep)."""
        return {"op": self.op, "path": self.path, "kind": self.kind, "appended": self.appended, "version": self.version}


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it; compiled too (hatch_build.py)
@dataclass(frozen=True, slots=True)
class Proposal:
    """A worker's candidate patch and where it came from.

    ``patch`` is raw model text (str/bytes) or a Python list of operations. ``viewed_version``
    is the state version the worker's view was built at (None: not checked for staleness).
    """

    worker: str
    patch: Any
    viewed_version: int | None = None
    invocation: str | None = None
    event: JSON = None
    view_hash: str | None = None
    usage: Usage = field(default_factory=Usage)
    meta: dict[str, JSON] = field(default_factory=dict)


DECLINE_KEY = "decline"
"""A reply ``{"decline": "why"}`` (this one member, a string) is a worker declining: it has nothing
to add. The kernel logs it as a no-op at stage ``decline``; the invocation ends and the board
goes on."""


def declined_reason(value: JSON) -> str | None:
    """The reason of a declining reply (``{"decline": reason}``), else None."""
    if isinstance(value, dict) and len(value) == 1:
        reason = value.get(DECLINE_KEY)
        if isinstance(reason, str):
            return reason
    return None


@dataclass(slots=True)
class Decision:
    """The kernel's verdict on one proposal, with the record that will log it."""

    record: Record
    events: list[Event] = field(default_factory=list)
    _applied: Applied | None = None
    _changed: list[tuple[Tokens, int | None]] = field(default_factory=list)
    _root: JSON = None
    unguarded: bool = False
    """True when the proposal passed every stage but the guard stage, for want of verdicts: the
    step engine then runs the guards and decides again with their verdicts (never appended)."""

    @property
    def ops(self) -> list[Op]:
        """The checked operations, parsed afresh from the logged patch (never shared with the
        state); empty when the patch did not parse."""
        if self.record.patch is None or self.record.stage in ("parse", "ops"):
            return []
        try:
            return check_ops(orjson.loads(self.record.patch))
        except (orjson.JSONDecodeError, OpError):
            return []

    @property
    def accepted(self) -> bool:
        """True when the proposal becomes a new state version."""
        return self.record.outcome == OUTCOME_ACCEPTED

    @property
    def stage(self) -> str | None:
        """The stage that rejected it (None when accepted)."""
        return self.record.stage

    @property
    def reason(self) -> str | None:
        """Why it was rejected (names the path and what was expected/got)."""
        return self.record.reason


class Reject(SlateboardError):
    """Internal: a stage failed (``stage``: a ``Stage``, or ``guard:<name>``)."""

    def __init__(self, stage: Stage | str, reason: str) -> None:
        super().__init__(reason)
        self.stage = stage
        self.reason = reason


@mypyc_attr(allow_interpreted_subclasses=True)  # users subclass it; compiled too (hatch_build.py)
class Kernel:
    """Owns one board's committed state, version, state hash and log position."""

    def __init__(
        self,
        blueprint: KernelBlueprint,
        state: JSON | None = None,
        *,
        version: int = 0,
        seq: int = 0,
        last_hash: str = GENESIS,
    ) -> None:
        self.blueprint = blueprint
        self.state: JSON = blueprint.initial_state() if state is None else state
        self.version = version
        self.seq = seq
        self.last_hash = last_hash
        self.hasher = StateHasher(self.state)
        # Record 1 binds the log to the blueprint and the initial state (see GENESIS_META).
        self.genesis = genesis_binding(blueprint.digest, self.hasher.hexdigest) if seq == 0 else None
        lim = blueprint.spec.limits
        self.limits = JsonLimits(max_bytes=lim.max_patch_bytes, max_depth=lim.max_depth)
        # One flat tuple per version: (version, path, shift, path, shift, ...). Tuples of
        # strings, ints and None leave the garbage collector's tracking, and a long board keeps
        # up to STALE_WINDOW of these entries (a list each was two tracked objects per step,
        # walked by every full collection, for every board); flat, an entry is one tuple
        # instead of one per change and one around them (about 170 bytes a step less).
        self._changes: deque[tuple[int | Tokens | None, ...]] = deque(maxlen=STALE_WINDOW)
        # Patches a human approved (worker, canonical patch text), each usable once.
        self._approved: dict[tuple[str, str], int] = {}
        # Patches a human refused (worker, canonical patch text) -> seq of the held record: never
        # held again (a person is not asked twice about the same change), rejected instead.
        self._refused: dict[tuple[str, str], int] = {}
        self._pending: Decision | None = None
        region = getattr(blueprint, "quarantine", None)
        self._quarantine: Pattern | None = region if isinstance(region, Pattern) else None
        self._scopes: dict[str, ReadScope] = {}
        # Visibility on entries (issue 44; slateboard.kernel.visibility), None when not declared.
        vis = getattr(blueprint, "visibility", None)
        self._visibility: Visibility | None = vis if isinstance(vis, Visibility) else None
        terms = getattr(blueprint, "guard_terms", ())
        self._guards: tuple[GuardTerms, ...] = tuple(t for t in terms if isinstance(t, GuardTerms))

    # -- public API -------------------------------------------------------------------------
    def read_scope(self, contract: WorkerContract) -> ReadScope:
        """What the worker of ``contract`` may read and name (see slateboard.kernel.readscope)."""
        scope = self._scopes.get(contract.name)
        if scope is None or scope.contract is not contract:
            scope = self._scopes[contract.name] = ReadScope(contract, self._quarantine)
            if self._visibility is not None:
                scope.reads_everything = False  # entries hidden from it: reasons are worded with care
        return scope

    @property
    def state_hash(self) -> str:
        """Hash of the committed state (see slateboard.kernel.statehash)."""
        return self.hasher.hexdigest

    def prepare(self, proposal: Proposal) -> Decision:
        """Run every stage; return the Decision. The state is changed only if accepted, and
        must then be committed or aborted before the next ``prepare``."""
        if self._pending is not None:
            raise KernelBusy("a decision is awaiting commit or abort")
        before = self.hasher.hexdigest
        patch_text: str | None = None
        ops: list[Op] = []
        applied: Applied | None = None
        try:
            failed = proposal.meta.get("model_error")
            if isinstance(failed, str):
                # The model never answered: say so (stage "model"), not "not valid JSON".
                raise Reject("model", failed)
            value, patch_text = self._parse(proposal.patch)
            declined = declined_reason(value)
            if declined is not None:
                # The worker answered that it has nothing to add: logged, nothing changes, and it
                # is neither a rejection to retry nor a no-op streak for the circuit.
                why = f"declined: {declined}" if declined else "declined"
                rec = self._record(proposal, OUTCOME_NOOP, patch_text, "decline", why, before, before)
                return self._hold(Decision(rec))
            ops = self._ops(value, proposal.worker)
            contract = self.blueprint.workers[proposal.worker]
            scope = self.read_scope(contract)
            self._authorise(ops, contract, scope)
            vis = self._visibility
            if vis is not None and (whole := names_collection(vis, ops)) is not None:
                raise Reject(whole[0], whole[1])
            self._stale(ops, contract, proposal.viewed_version, scope)
            if vis is not None and (absent := absent_answer(vis, self.state, ops, contract.name, self.hasher.observe)):
                raise Reject(absent[0], absent[1])  # as if the hidden entry did not exist
            try:
                applied = apply_ops(self.state, ops, self.hasher.observe)
            except ApplyError as exc:
                raise detached(Reject(exc.stage, str(exc))) from None
            self.state = applied.root
            effects = rebase(applied.effects)
            if vis is not None and (wide := widening(vis, self.state, effects, contract.name)) is not None:
                raise Reject(wide[0], wide[1])
            self._schema(effects, scope)
            applied = self._invariants(ops, applied, effects, scope)
        except Reject as rej:
            if applied is not None:
                applied.undo()
                self.state = applied.root
            rec = self._record(proposal, OUTCOME_REJECTED, patch_text, rej.stage, rej.reason, before, before)
            return self._hold(Decision(rec))
        except Exception as bug:  # a kernel bug must not corrupt state or escape as a crash
            # (not "exc": compiled, a name has one type, and "exc" is an ApplyError above)
            if applied is not None:
                applied.undo()
                self.state = applied.root
            reason = f"internal error: {type(bug).__name__}: {bug}"
            worker = self.blueprint.workers.get(proposal.worker)
            if worker is None or not self.read_scope(worker).reads_everything:
                # The message may quote any value; the worker may not read them all.
                reason = f"internal error: {type(bug).__name__} (details withheld from {proposal.worker!r})"
            rec = self._record(proposal, OUTCOME_REJECTED, patch_text, "internal", reason, before, before)
            return self._hold(Decision(rec))
        after = self.hasher.hexdigest
        # A blind write (issue 29): a patch that writes a node its worker may not read is
        # decided as a change even when it leaves the state as it was. Reported as a no-op, a
        # write of the very value hidden there would tell the worker that value (an equality
        # oracle); so it is accepted, held or refused exactly as a write of any other value.
        changes = after != before or self._blind(ops, scope)
        held = self._needs_approval(proposal.worker, patch_text, effects) if changes else None
        if held is not None:
            applied.undo()
            self.state = applied.root
            refused = self._refused.get((proposal.worker, patch_text)) if patch_text is not None else None
            if refused is not None:
                # Nothing changes and no one is asked: a no-op (not a rejection to retry), so a
                # worker that has nothing but the refused patch ends its invocation here.
                why = f"this exact patch was refused by a human (held record {refused}); nothing changed"
                rec = self._record(proposal, OUTCOME_NOOP, patch_text, "approval", why, before, before)
            else:
                rec = self._record(proposal, OUTCOME_HELD, patch_text, "approval", held, before, before)
            return self._hold(Decision(rec))
        if not changes:
            applied.undo()
            self.state = applied.root
            rec = self._record(
                proposal,
                OUTCOME_NOOP,
                patch_text,
                None,
                "patch leaves the state unchanged",
                before,
                before,
            )
            return self._hold(Decision(rec))
        if self._guards and (proposal.worker, patch_text) not in self._approved:
            guarded = self._guard_stage(proposal, scope)
            if guarded is not None:
                applied.undo()
                self.state = applied.root
                stage, reason, missing = guarded
                rec = self._record(proposal, OUTCOME_REJECTED, patch_text, stage, reason, before, before)
                return self._hold(Decision(rec, unguarded=missing))
        rec = self._record(proposal, OUTCOME_ACCEPTED, patch_text, None, None, before, after, version=self.version + 1)
        events = [self._event(e, self.version + 1) for e in effects]
        # An array insert or delete also moves every later item: keep where the shift starts.
        changed: list[tuple[Tokens, int | None]] = [(e.path, None) for e in effects]
        changed += [
            (e.parent, int(e.key)) for e in effects if e.kind in ("insert", "delete") and isinstance(e.key, int)
        ]
        return self._hold(Decision(rec, events, applied, changed, self.state))

    def commit(self, decision: Decision) -> Record:
        """Make a prepared decision final (after its record was durably appended)."""
        if decision is not self._pending:
            raise KernelBusy("commit of a decision that is not the pending one")
        self._pending = None
        rec = decision.record
        self.seq = rec.seq
        self.last_hash = rec.hash
        self.note_approval(rec)
        if rec.outcome == OUTCOME_ACCEPTED:
            self.version = rec.version
            self._changes.append((rec.version, *itertools.chain.from_iterable(decision._changed)))
            decision._applied = None
        return rec

    def abort(self, decision: Decision) -> None:
        """Undo a prepared decision whose record could not be appended; no trace remains."""
        if decision is not self._pending:
            raise KernelBusy("abort of a decision that is not the pending one")
        self._pending = None
        if decision._applied is not None:
            decision._applied.undo()
            self.state = decision._applied.root
            decision._applied = None

    def submit(self, proposal: Proposal) -> Decision:
        """prepare + commit, for in-memory boards and tests."""
        decision = self.prepare(proposal)
        self.commit(decision)
        return decision

    def action(
        self,
        kind: RecordKind,
        reason: str,
        *,
        worker: str | None = None,
        invocation: str | None = None,
        meta: dict[str, JSON] | None = None,
        usage: Usage | None = None,
    ) -> Decision:
        """Prepare a non-state record (circuit action, approval, run end) for the log."""
        if self._pending is not None:
            raise KernelBusy("a decision is awaiting commit or abort")
        h = self.hasher.hexdigest
        rec = Record(
            seq=self.seq + 1,
            kind=kind,
            outcome=OUTCOME_ACTION,
            worker=worker,
            invocation=invocation,
            event=None,
            view_hash=None,
            patch=None,
            stage=None,
            reason=reason,
            version=self.version,
            state_before=h,
            state_after=h,
            usage=usage or Usage(component="kernel"),
            prev=self.last_hash,
            meta=self._genesis_meta(dict(meta or {})),
        ).sealed()
        return self._hold(Decision(rec))

    def note_approval(self, record: Record) -> None:
        """Track approvals from the log: an ``approval`` action that approves a held record makes
        that exact patch (same worker, same canonical text) acceptable once; the accepted record
        that uses it consumes it. One that refuses it makes that exact patch a no-op (stage
        ``approval``) whenever the worker proposes it again, instead of held for a person again.
        Rebuilding a kernel from a log calls this for every record."""
        meta = record.meta
        if record.kind == APPROVAL_KIND and meta.get(APPROVAL_DECISION_META) in (APPROVED, REFUSED):
            worker, patch = meta.get(APPROVAL_WORKER_META), meta.get(APPROVAL_PATCH_META)
            held = meta.get(APPROVAL_RECORD_META)
            if isinstance(worker, str) and isinstance(patch, str) and isinstance(held, int):
                kept = self._approved if meta.get(APPROVAL_DECISION_META) == APPROVED else self._refused
                kept[(worker, patch)] = held
        elif record.outcome == OUTCOME_ACCEPTED and record.worker is not None and record.patch is not None:
            self._approved.pop((record.worker, record.patch), None)

    def approvals(self) -> dict[tuple[str, str], int]:
        """Approved patches not yet committed: (worker, patch text) -> seq of the held record."""
        return dict(self._approved)

    @staticmethod
    def _blind(ops: list[Op], scope: ReadScope) -> bool:
        """True when an op writes a node its worker may not read (``test`` ops read, they are
        authorised only on readable nodes)."""
        if scope.reads_everything:
            return False
        return any(op.op != "test" and not scope.may_read(op.tokens) for op in ops)

    def _needs_approval(self, worker: str, patch_text: str | None, effects: list[Effect]) -> str | None:
        patterns = self.blueprint.approval
        if not patterns:
            return None
        touched = sorted(
            {
                format_pointer(e.path) or "/"
                for e in effects
                for p in patterns
                if region_contains(p, e.path) or _pattern_below(p.tokens, e.path)
            }
        )
        if not touched:
            return None
        if patch_text is not None and (worker, patch_text) in self._approved:
            return None
        return f"needs human approval: changes {', '.join(touched)}"

    def adopt(self, record: Record) -> None:
        """Advance the log position past a logged record that left the state unchanged
        (a rejection, no-op or action), e.g. when replaying a log. Raises ValueError if the
        record does not fit here (wrong seq/prev/version, or it claims a state change)."""
        if self._pending is not None:
            raise KernelBusy("a decision is awaiting commit or abort")
        h = self.hasher.hexdigest
        if record.seq != self.seq + 1 or record.prev != self.last_hash:
            raise InvalidInput(f"record {record.seq} does not follow record {self.seq}")
        if (
            record.outcome == OUTCOME_ACCEPTED
            or record.version != self.version
            or not record.state_before == record.state_after == h
        ):
            raise InvalidInput(f"record {record.seq} changes the state; it cannot be adopted")
        self.seq = record.seq
        self.last_hash = record.hash

    def changed_since(self, version: int) -> list[tuple[Tokens, int | None]] | None:
        """Changes committed after ``version``: (path, index from which the items of that array
        shifted, or None); None when ``version`` is older than the window."""
        if version >= self.version:
            return []
        if not self._changes or cast(int, self._changes[0][0]) > version + 1:
            return None
        out: list[tuple[Tokens, int | None]] = []
        for entry in self._changes:
            if cast(int, entry[0]) > version:
                for k in range(1, len(entry), 2):
                    out.append((cast(Tokens, entry[k]), cast("int | None", entry[k + 1])))
        return out

    def value_at(self, pointer: str) -> JSON:
        """The committed value at a pointer (raises KeyError when absent)."""
        node = resolve(self.state, parse_pointer(pointer))
        if node is MISSING:
            raise KeyError(pointer)
        return node

    # -- stages -----------------------------------------------------------------------------
    def _parse(self, patch: Any) -> tuple[JSON, str | None]:
        if isinstance(patch, list) and len(patch) > self.blueprint.spec.limits.max_ops:
            # Before any walk or repr of it (issue 29, R9): a million-op list is refused in O(1).
            limit = self.blueprint.spec.limits.max_ops
            raise Reject("ops", f"the patch has {len(patch)} operations, over the limit of {limit} (limits.max_ops)")
        try:
            if isinstance(patch, (str, bytes, bytearray)):
                value = parse_json_text(bytes(patch) if isinstance(patch, bytearray) else patch, self.limits)
            else:
                check_json_value(patch, self.limits)
                value = patch
            text = canonical_str(value)
        except JsonValueError as exc:
            raise detached(Reject("parse", str(exc))) from None
        except CanonicalError as unrepresentable:  # one name per exception type (compiled)
            raise detached(Reject("parse", f"not representable as JSON: {unrepresentable}")) from None
        if not isinstance(patch, (str, bytes, bytearray)):
            # Detach from the caller's objects: the state must not alias anything outside it.
            value = orjson.loads(text)
        size = len(text.encode("utf-8"))
        if size > self.limits.max_bytes:
            raise Reject("parse", f"proposal is {size} bytes, over the limit of {self.limits.max_bytes}")
        return value, text

    def _ops(self, value: JSON, worker: str) -> list[Op]:
        try:
            ops = check_ops(value)
        except OpError as exc:
            raise detached(Reject("parse" if exc.index < 0 else "ops", str(exc))) from None
        if not ops:
            raise Reject("ops", "the patch has no operations")
        limit = self.blueprint.spec.limits.max_ops
        if len(ops) > limit:
            raise Reject("ops", f"the patch has {len(ops)} operations, over the limit of {limit}")
        contract = self.blueprint.workers.get(worker)
        if contract is None:
            raise Reject("authorise", f"unknown worker {worker!r}")
        for op in ops:
            if op.op not in contract.ops:
                allowed = ", ".join(sorted(contract.ops))
                raise Reject(
                    "ops",
                    f"op {op.index} ({op.op} {op.path!r}): op {op.op!r} is not allowed for worker {worker!r} (allowed: {allowed})",
                )
        return ops

    def _authorise(self, ops: list[Op], contract: WorkerContract, scope: ReadScope) -> None:
        # Read isolation (issue 29, Q1): an op that reads a node (``test``, the ``from`` of
        # ``move``/``copy``) needs the whole node readable, or a rejection quoting it (or an
        # acceptance, for a right guess) would show what the worker may not read. No op names
        # the quarantine region unless the contract does: the reason then names only the path.
        name = contract.name
        for op in ops:
            if op.op == "test":
                if not scope.may_read(op.tokens):
                    raise Reject("authorise", f"op {op.index} (test {op.path!r}): {name!r} may not read {op.path!r}")
                continue
            if not contract.may_write(op.tokens):
                raise Reject(
                    "authorise",
                    f"op {op.index} ({op.op} {op.path!r}): {name!r} may not write {op.path!r} (write contract: {', '.join(p.text for p in contract.writes) or 'none'})",
                )
            if not scope.may_name(op.tokens):
                raise Reject(
                    "authorise",
                    f"op {op.index} ({op.op} {op.path!r}): {name!r} may not write {op.path!r} (the quarantine region)",
                )
            if op.from_tokens is not None:
                needs_write = op.op == "move"
                if needs_write and not (contract.may_write(op.from_tokens) and scope.may_name(op.from_tokens)):
                    raise Reject(
                        "authorise",
                        f"op {op.index} ({op.op} from {op.from_path!r}): {name!r} may not write {op.from_path!r}",
                    )
                if not scope.may_read(op.from_tokens):
                    raise Reject(
                        "authorise",
                        f"op {op.index} ({op.op} from {op.from_path!r}): {name!r} may not read {op.from_path!r}",
                    )

    def _stale(self, ops: list[Op], contract: WorkerContract, viewed: int | None, scope: ReadScope) -> None:
        if viewed is None or viewed >= self.version:
            return
        changed = self.changed_since(viewed)
        if changed is None:
            raise Reject("stale", f"viewed at version {viewed}, now {self.version}: too old to compare")
        now = f"viewed at version {viewed}, now {self.version}"
        for c, shifted_from in changed:
            if self._visibility is not None and not self._visibility.shown(self.state, contract.name, c):
                continue  # a change to an entry it may not see (or a removed one) says nothing to it
            where = format_pointer(c) or "/"
            for op in ops:
                for tokens, label in ((op.tokens, op.path), (op.from_tokens, op.from_path)):
                    if tokens is None:
                        continue
                    target = tokens[:-1] if tokens and tokens[-1] == "-" else tokens
                    appended = len(target) != len(tokens)
                    if shifted_from is None and (_prefix(c, target) or (not appended and _prefix(target, c))):
                        raise Reject("stale", f"{now}: {where} changed since, and op {op.index} touches {label!r}")
                    if shifted_from is not None and _shifts(c, shifted_from, target):
                        raise Reject(
                            "stale",
                            f"{now}: items of {where} from index {shifted_from} moved, and op {op.index} addresses {label!r}",
                        )
            if scope.touches_hidden(c) and len(c) >= len(scope.hidden or ()):
                continue  # a change the worker cannot see does not make its view stale
            for p in contract.reads if shifted_from is None else ():
                if region_contains(p, c) or _pattern_below(p.tokens, c):
                    raise Reject("stale", f"{now}: {where} changed since, inside the read contract {p.text!r}")

    def _schema(self, effects: list[Effect], scope: ReadScope) -> None:
        schema = self.blueprint.schema
        checked: set[Tokens] = set()
        containers: dict[Tokens, set[str]] = {}
        for eff in effects:
            path = eff.path
            if eff.kind == "root":
                violations = schema.validate_state(self.state)
                if violations:
                    raise Reject("schema", "; ".join(str(v) for v in violations[:3]))
                checked.add(())
                continue
            if eff.kind != "delete":
                node = resolve(self.state, path)
                if node is not MISSING and len(path) + _depth(node, self.limits.max_depth) > self.limits.max_depth:
                    raise Reject(
                        "schema",
                        f"{format_pointer(path)}: the state would nest deeper than {self.limits.max_depth} levels",
                    )
                _, loc = schema.locate(path)
                if loc is None:
                    raise Reject(
                        "schema",
                        f"{format_pointer(path)}: the schema allows no member {path[-1]!r} here",
                    )
                node = resolve(self.state, path)
                if node is MISSING:
                    continue  # overwritten by a later op in the same patch
                violations = schema.validate_value(loc, node, format_pointer(path))
                if violations:
                    raise Reject("schema", "; ".join(str(v) for v in violations[:3]))
            for depth in range(len(eff.parent), -1, -1):
                containers.setdefault(path[:depth], set()).add(path[depth] if depth < len(path) else "")
        for cpath, keys in sorted(containers.items(), key=lambda kv: -len(kv[0])):
            node = resolve(self.state, cpath)
            if node is MISSING:
                continue
            _ancestors, loc = schema.locate(cpath)
            if loc is None:
                continue
            violations = schema.shallow_check(loc, node, format_pointer(cpath), keys)
            if violations:
                if not scope.may_read(cpath):
                    # A container check may quote members the worker may not read: keywords only.
                    raise Reject("schema", "; ".join(_unquoted(v) for v in violations[:3]))
                raise Reject("schema", "; ".join(str(v) for v in violations[:3]))

    def _invariants(self, ops: list[Op], applied: Applied, effects: list[Effect], scope: ReadScope) -> Applied:
        targets = touched_targets(self.blueprint, self.state, effects)
        old: dict[Tokens, JSON] = {}
        wanted = {path: pre_patch_path(path, applied.effects) for inv, path in targets if inv.uses_old}
        if any(pre is not None for pre in wanted.values()):
            # oldSelf needs pre-patch values: step back (undo is exact), copy them, re-apply.
            applied.undo()
            self.state = applied.root
            for path, pre in wanted.items():
                if pre is not None:
                    node = resolve(self.state, pre)
                    if node is not MISSING:
                        old[path] = copy.deepcopy(node)
            applied = apply_ops(self.state, ops, self.hasher.observe)
            self.state = applied.root
        failures = evaluate_targets(targets, self.state, old)
        if failures:
            f = failures[0]
            applied.undo()
            self.state = applied.root
            where, why = f.path or "/", _worded(f, targets, scope)
            if self._visibility is not None and self._visibility.hidden(
                self.state, scope.contract.name, parse_pointer(f.path)
            ):
                where, why = "an entry it may not see", "the rule does not hold (details withheld)"
            raise Reject("invariants", f"invariant {f.name!r} at {where}: {why}")
        return applied

    def _guard_stage(self, proposal: Proposal, scope: ReadScope) -> tuple[str, str, bool] | None:
        """(stage, reason, verdict missing) of the first applicable guard that did not let the
        patch through, or None. A guard's reason may quote anything it saw: a worker that may not
        read the whole state gets it only from a guard that ``shares_reason``."""
        failed = first_failure(self._guards, proposal.worker, proposal.meta)
        if failed is None:
            return None
        terms, reason, missing = failed
        if not (missing or terms.shares_reason or scope.reads_everything):
            reason = f"guard {terms.name!r} refused the patch (its reason is withheld: the guard sees state this worker may not read)"
        return guard_stage(terms.name), reason, missing and proposal.meta.get(GUARDS_META) is None

    # -- helpers ----------------------------------------------------------------------------
    def _hold(self, decision: Decision) -> Decision:
        self._pending = decision
        return decision

    def _record(
        self,
        p: Proposal,
        outcome: Outcome,
        patch_text: str | None,
        stage: Stage | str | None,
        reason: str | None,
        before: str,
        after: str,
        *,
        version: int | None = None,
    ) -> Record:
        meta = dict(p.meta)
        if patch_text is None:
            patch_text = _raw_text(p.patch, self.limits.max_bytes)
            if not _lossless(p.patch, patch_text):
                meta["patch_lossy"] = True  # replay adopts this rejection instead of re-deciding it
        return Record(
            seq=self.seq + 1,
            kind=PROPOSAL_KIND,
            outcome=outcome,
            worker=p.worker,
            invocation=p.invocation,
            event=_detach(p.event),
            view_hash=p.view_hash,
            patch=patch_text,
            stage=stage,
            reason=reason,
            version=self.version if version is None else version,
            state_before=before,
            state_after=after,
            usage=p.usage,
            prev=self.last_hash,
            meta=self._genesis_meta(
                _detach(meta | ({"viewed_version": p.viewed_version} if p.viewed_version is not None else {}))
            ),
        ).sealed()

    def _genesis_meta(self, meta: dict[str, JSON]) -> dict[str, JSON]:
        if self.seq == 0 and self.genesis is not None:
            meta[GENESIS_META] = dict(self.genesis)
        return meta

    @staticmethod
    def _event(e: Effect, version: int) -> Event:
        op = e.op.op if e.kind != "delete" else ("remove" if e.op.op != "move" else "move")
        return Event(op, format_pointer(e.path), e.path, e.kind, e.appended, version)


def _unquoted(v: Any) -> str:
    """A schema violation without its message (which may quote the instance): path and keyword."""
    keyword = str(v.schema_path).rsplit("/", 1)[-1]
    return f"{v.path or '/'}: fails {keyword!r} (schema {v.schema_path}; details withheld)"


def _worded(f: InvariantFailure, targets: list[tuple[CompiledInvariant, Tokens]], scope: ReadScope) -> str:
    """The reason of an invariant failure as the proposing worker may see it: the blueprint's
    own words (its message, or the rule's source) always; an evaluation error or a Python
    invariant's text (which may quote any value it saw) only when the worker may read all of
    what the invariant read."""
    inv = next((i for i, _ in targets if i.index == f.index), None)
    if inv is None or scope.reads_everything:
        return f.reason
    static = {inv.message, f"rule {inv.expr.source!r} is false" if inv.expr is not None else None}
    if f.reason in static:
        return f.reason
    sees_root = inv.func is not None or (inv.expr is not None and inv.expr.uses("root"))
    if not sees_root and scope.may_read(parse_pointer(f.path)):
        return f.reason
    if f.reason.startswith(BUDGET_EXCEEDED):
        return f"{BUDGET_EXCEEDED} (details withheld: they may show sizes this worker may not read)"
    return "the rule does not hold (details withheld: they may show values this worker may not read)"


def _detach(value: Any) -> Any:
    """A JSON copy of caller-supplied metadata, so the record shares nothing with the caller and
    always hashes (a value JSON cannot carry is replaced by its repr, never raised)."""
    try:
        return orjson.loads(orjson.dumps(value, default=repr))
    except (TypeError, orjson.JSONEncodeError):
        return {"unserialisable": repr(value)[:1000]}


def _prefix(a: Tokens, b: Tokens) -> bool:
    return len(a) <= len(b) and b[: len(a)] == a


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of ``value`` (a scalar is 0), counting no further than ``limit + 1``."""
    best = 0
    stack = [(value, 0)]
    while stack:
        node, d = stack.pop()
        if d > best:
            best = d
            if best > limit:
                return best
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return best


def _shifts(parent: Tokens, start: int, target: Tokens) -> bool:
    """True when ``target`` addresses an item of array ``parent`` at index >= ``start``."""
    n = len(parent)
    if len(target) <= n or target[:n] != parent or not is_array_index(target[n]):
        return False
    # A huge index (int() refuses 4,300+ digits) is past any start: compare lengths first.
    return len(target[n]) > 18 or int(target[n]) >= start


def _pattern_below(pattern: Tokens, c: Tokens) -> bool:
    """True when concrete path ``c`` is an ancestor of nodes the pattern names."""
    pt = pattern[:-1] if pattern and pattern[-1] == "**" else pattern
    return len(c) < len(pt) and all(a == "*" or a == b for a, b in zip(pt, c, strict=False))


def _raw_text(patch: Any, limit: int) -> str:
    """The proposal as loggable text (always valid UTF-8, at most ``limit`` bytes of input)."""
    if isinstance(patch, (bytes, bytearray)):
        text = bytes(patch[:limit]).decode("utf-8", "replace")
    elif isinstance(patch, str):
        text = patch[:limit]
    else:
        try:
            # reprlib looks at a bounded prefix of each container: never the whole of a huge patch.
            head: Any = patch
            if isinstance(patch, list):
                head = list(patch[: _SHORT_REPR.maxlist + 1])  # a slice: no walk of the rest
            elif isinstance(patch, dict):
                head = dict(itertools.islice(patch.items(), _SHORT_REPR.maxdict + 1))
            text = _SHORT_REPR.repr(head)[:4096]
        except Exception:
            text = f"<unprintable {type(patch).__name__}>"
    return text.encode("utf-8", "replace").decode("utf-8")


def _short_repr() -> reprlib.Repr:
    short = reprlib.Repr()
    short.maxlevel, short.maxlist, short.maxdict, short.maxstring, short.maxother = 6, 32, 32, 512, 128
    return short


_SHORT_REPR = _short_repr()


def _lossless(patch: Any, text: str) -> bool:
    """True when re-submitting the logged ``text`` is the same proposal as ``patch``."""
    return isinstance(patch, str) and patch == text
