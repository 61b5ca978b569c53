"""The blueprint: a task's state schema, workers and their contracts, rules, invariants, limits.

These pydantic models are the typed, serialisable form. ``Blueprint.model_json_schema()`` is
the published meta-schema (``slateboard/blueprint/blueprint.schema.json``). A Blueprint is only
*accepted* once ``compile_blueprint`` has checked everything the models cannot (unknown
workers, contract patterns without a schema location, CEL that does not compile).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ..errors import InvalidInput

OpName = Literal["add", "remove", "replace", "move", "copy", "test"]
TriggerOp = Literal["add", "remove", "replace", "move", "copy", "any", "start"]


_DEFAULT_OPS: tuple[OpName, ...] = ("add", "replace", "test")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


MAX_FAN_OUT = 100_000
"""The most children one sub-board worker may run for one invocation (``SubBoardSpec.max_items``
is at most this): a fan-out over more items is refused, never started."""


class SubBoardSpec(_Strict):
    """What a sub-board worker runs: a child board of ``blueprint`` per invocation (or, with
    ``each``, one per item of a collection), its initial state members taken from ``inputs``;
    the worker proposes the child's ``answer`` (a list of them, in item order, with ``each``) at
    its ``output`` pointer. See docs/composing.md."""

    blueprint: str | dict[str, Any] = Field(
        description="The child's blueprint: inline, a file path (relative to the parent blueprint's file) or "
        "'template:NAME'. Accepted blueprints hold it inline, so a stored board needs no file.",
    )
    inputs: dict[str, str] = Field(
        default_factory=dict,
        description="Child state member -> a pointer into the parent's state ('/...') or a CEL expression over "
        "state (the parent's, as the worker may read it), item and index (with 'each').",
    )
    each: str | None = Field(
        None, description="A pointer or CEL expression giving a list: one child per item (fan-out)."
    )
    max_parallel: int = Field(4, ge=1, le=256, description="Children run at once, at most.")
    max_items: int = Field(
        1000, ge=1, le=MAX_FAN_OUT, description="Most items a fan-out takes; more is a rejection naming the worker."
    )


class WorkerSpec(_Strict):
    """One worker: its role instruction, what it runs, and its read/write contract."""

    instruction: str = Field("", description="The role instruction given to the worker.")
    model: str | None = Field(
        None,
        description="Model string, e.g. 'local', 'openai:gpt-4o-mini', 'anthropic:claude-...'.",
    )
    function: str | None = Field(
        None,
        description="A Python callable reference 'package.module:function' for function workers.",
    )
    reads: list[str] = Field(
        default_factory=list,
        description="JSON Pointer patterns the worker may see ('*' = one segment).",
    )
    writes: list[str] = Field(
        default_factory=list,
        description="JSON Pointer patterns the worker may write ('-' = append).",
    )
    ops: list[OpName] = Field(
        default_factory=lambda: list(_DEFAULT_OPS),
        description="Allowed RFC 6902 operations; remove/move/copy only when granted.",
    )
    view_budget: int = Field(
        4000, ge=64, le=10_000_000, description="Maximum size of the worker's view, in characters."
    )
    max_invocations: int | None = Field(None, ge=1, description="Invocation limit for this worker.")
    untrusted: bool = Field(False, description="Reads untrusted input: may only write to the quarantine region.")
    pinned: list[str] = Field(
        default_factory=list,
        description=(
            "Read patterns (concrete pointers) shown whole in every view, never cut by view_budget; a "
            "constrained prompt shows them first, in this order (least changing first: a longer cached prefix)."
        ),
    )
    windows: dict[str, int] = Field(
        default_factory=dict,
        description="Array read patterns (concrete pointers) shown as their newest N items, whole, outside "
        "view_budget; earlier items as one range handle.",
    )
    output: str | None = Field(
        None,
        description="Typed output of an LLM worker: a concrete pointer (ending in '-' to append) that one of its "
        "write patterns covers. The model replies with one JSON value (decoded against the state schema there "
        "where the provider can) and the worker proposes adding it at that pointer.",
    )
    board: SubBoardSpec | None = Field(
        None,
        description="A sub-board worker: runs a child board and proposes its answer at 'output' (docs/composing.md).",
    )
    addresses: list[str] | None = Field(
        None,
        description="Visibility (docs/visibility.md): the worker names and labels ('*': every worker) this worker "
        "may put in an entry's visibility field; itself always. Unset: any.",
    )

    @model_validator(mode="after")
    def _pins_are_reads(self) -> WorkerSpec:
        # A pinned or windowed path must be one of the worker's own read patterns, concrete (no
        # '*'): it is shown whole, so it must be a node the read contract already grants.
        # Plain ValueError on purpose: pydantic turns it into one issue of the ValidationError
        # that compile_blueprint reports as a BlueprintError naming the path (its protocol).
        for path in [*self.pinned, *self.windows]:
            if path not in self.reads:
                raise InvalidInput(f"pinned/windowed path {path!r} is not one of the worker's reads")
            if "*" in path.split("/") or path.endswith("/**"):
                raise InvalidInput(f"pinned/windowed path {path!r} must be a concrete pointer (no '*')")
        for path, size in self.windows.items():
            if size < 1:
                raise InvalidInput(f"window {path!r} must show at least one item, got {size}")
        overlap = set(self.pinned) & set(self.windows)
        if overlap:
            raise InvalidInput(f"paths both pinned and windowed: {sorted(overlap)}")
        return self


class VisibleCollectionSpec(_Strict):
    """A collection whose entries say who sees them: an object keyed by entry id, at a concrete
    pointer reached through object members only, present in the initial state (docs/visibility.md)."""

    path: str = Field(description="Pointer of the collection (no wildcards), e.g. '/notes'.")
    field: str = Field("visible_to", description="The entry member that lists who sees the entry.")
    required: bool = Field(False, description="Every entry must carry the field (left off: every worker sees it).")


class VisibilitySpec(_Strict):
    """Visibility on entries: the collections whose entries carry a visibility field, and the labels
    such a field may name (each a set of workers). See docs/visibility.md."""

    collections: list[VisibleCollectionSpec] = Field(
        min_length=1, description="The collections with visibility (objects keyed by entry id)."
    )
    labels: dict[str, list[str]] = Field(
        default_factory=dict, description="Label -> the workers it stands for (labels and worker names never clash)."
    )


class Trigger(_Strict):
    """What committed change wakes a rule: an op kind and a path pattern."""

    op: TriggerOp = "any"
    path: str = ""


class JoinPart(_Strict):
    """One event a join waits for: its trigger, an optional condition, and the correlation key
    (CEL over ``value``, ``event``, ``bindings``, ``state``, like a rule's ``when``)."""

    on: Trigger
    key: str = Field(description="CEL: the correlation key of the event (e.g. value.order_id).")
    when: str | None = Field(None, description="CEL condition: the event counts only when it holds.")


class JoinSpec(_Strict):
    """A correlated join: the rule fires once per key, when every part has happened for that key,
    all within the window (versions and/or seconds since the key's first part)."""

    parts: dict[str, JoinPart] = Field(description="The events to correlate, by name (2 to 16).")
    within_versions: int | None = Field(None, description="All parts within this many state versions.")
    within_seconds: float | None = Field(None, description="All parts within this many seconds.")
    max_keys: int | None = Field(None, description="Keys remembered, open and fired (default 1000, at most 100000).")


class BatchSpec(_Strict):
    """A timed batch: the rule fires with the events it collected once ``size`` have arrived, or
    ``seconds`` after the first of them (a logged timer record), whichever comes first."""

    size: int = Field(description="Events per batch (1 to 1000).")
    seconds: float | None = Field(None, description="Fire a partial batch this long after its first event.")


class RuleSpec(_Strict):
    """When a committed event matches ``on`` and ``when`` holds, invoke ``invoke``. With
    ``recheck``, ``when`` must still hold when the invocation comes up (``Scheduler.lapsed``)."""

    name: str | None = None
    on: Trigger = Field(default_factory=Trigger)
    when: str | None = Field(None, description="CEL condition over event, value, bindings, state.")
    invoke: str
    priority: int = 0
    stage: str | None = Field(None, description="The rule fires only while this stage is active.")
    join: JoinSpec | None = Field(
        None, description="Fire once per correlation key, when every part has happened for it (no 'on'/'when')."
    )
    batch: BatchSpec | None = Field(
        None, description="Collect the events 'on' matches; fire with them once 'size' arrived or 'seconds' passed."
    )
    recheck: bool = Field(
        False,
        description="Evaluate 'when' again when the invocation comes up, on the state committed then; if it no "
        "longer holds, the worker is not called and the invocation ends as a logged decline.",
    )

    @model_validator(mode="after")
    def _recheck_has_a_condition(self) -> RuleSpec:
        # A queued invocation is dropped only by its own rule's condition: without 'when' there
        # is nothing to check again, and a join or batch fires on gathered events, not one state.
        if self.recheck and self.when is None:
            raise InvalidInput("recheck needs a 'when' condition to check again")
        if self.recheck and (self.join is not None or self.batch is not None):
            raise InvalidInput("recheck applies to a plain rule, not a join or a batch")
        return self


class RetentionSpec(_Strict):
    """A bound on an array of the state, against board pollution: once it holds more than
    ``keep_last`` items, a system worker removes the oldest (the first) ones. The removal is a
    proposal like any other: checked by the kernel against the system worker's contract, logged,
    replayed; never a silent edit."""

    path: str = Field(description="Pointer of the array (no wildcards), e.g. '/notes'.")
    keep_last: int = Field(ge=1, description="Items kept: the newest (last) ones.")
    name: str | None = Field(None, description="The system worker's name (default: retention:<path>).")


class InvariantSpec(_Strict):
    """A CEL rule that every committed state must satisfy at schema location ``at``.

    The expression sees ``self`` (the node), ``oldSelf`` (its previous value; a rule that uses
    it is only checked when the node existed before, like Kubernetes transition rules) and
    ``root`` (the whole state: checking it costs O(size of state)).

    ``check`` says which matching nodes a commit re-checks. ``touched``: only the nodes the patch
    changed or put in place. ``every``: every matching node on every commit. The default is
    ``every`` for a rule that reads ``root`` (a change anywhere may falsify it) and ``touched``
    otherwise. ``touched`` on a root-reading rule is the author's promise that nothing a patch
    can change elsewhere makes an unchanged node wrong (for example: entries of an append-only
    list whose references may only name entries that can never be removed); it turns an
    O(nodes x state) check per commit into O(state).
    """

    name: str | None = None
    at: str = Field("", description="Schema location pattern, '' for the whole state.")
    rule: str
    message: str | None = None
    check: Literal["touched", "every"] | None = Field(
        None,
        description="Which matching nodes a commit re-checks (default: every if the rule reads root, else touched).",
    )


VerdictType = Literal["bool", "str", "int", "float"]
"""The field types a model judge's verdict may declare."""

DEFAULT_VERDICT: dict[str, VerdictType] = {"ok": "bool", "reason": "str"}


class GuardSpec(_Strict):
    """A named check after ``invariants``: a Python function or a model judge, whose verdict is
    logged in the proposal's record (replay re-uses it; see ``slateboard.guards``)."""

    name: str = Field(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="The guard's name: its rejections are at stage 'guard:<name>'.",
    )
    function: str | None = Field(
        None,
        description="'package.module:function', called with (state before, state after, patch); it returns a bool, "
        "(bool, reason) or {ok, reason}.",
    )
    model: str | None = Field(None, description="Model string of a model judge (instead of a function).")
    instruction: str = Field("", description="What a model judge checks (its system prompt); required for a judge.")
    verdict: dict[str, VerdictType] = Field(
        default_factory=lambda: dict(DEFAULT_VERDICT),
        description="A judge's typed reply: field -> bool/str/int/float; 'ok: bool' is required, 'reason: str' "
        "is the rejection's reason. A reply that does not fit is a rejection.",
    )
    context: list[str] = Field(
        default_factory=list,
        description="Concrete pointers of the state after the patch shown to a judge with the patch "
        "(default: the patch alone).",
    )
    workers: list[str] = Field(
        default_factory=list, description="The workers whose proposals it checks (default: every worker's)."
    )
    timeout: float = Field(30.0, gt=0, le=3600, description="Seconds a guard may take; past it, a rejection.")
    max_tokens: int = Field(256, ge=16, le=32_000, description="A judge's reply budget, in tokens.")
    shares_reason: bool = Field(
        False,
        description="Show its reason to workers that cannot read the whole state (else withheld from them, "
        "kept in the record's meta).",
    )


class StageSpec(_Strict):
    """A named group of rules, active between its ``enter`` and ``exit`` conditions."""

    name: str
    enter: str | None = Field(None, description="CEL over state; None means active from the start.")
    exit: str | None = Field(None, description="CEL over state; once true the stage is done.")


class CircuitSpec(_Strict):
    """Thresholds of the circuit policy (all deterministic functions of the log)."""

    max_consecutive_invalid: int = Field(3, ge=1)
    max_noops: int = Field(3, ge=1)
    cycle_window: int = Field(8, ge=2)
    stuck_after: int = Field(12, ge=1)
    on_invalid: Literal["retry", "switch", "tighten", "halt"] = "retry"
    retries: int = Field(1, ge=0)
    max_alternations: int = Field(
        6,
        ge=0,
        description="Accepted proposals in a row alternating between two workers that overwrite the same paths "
        "(A-B-A-B...) before the circuit policy switches away from the latest one (0: off). Appends ('/-') "
        "never count: they do not undo each other.",
    )
    max_stale_requeues: int = Field(
        5,
        ge=0,
        description="Times a stale proposal's invocation is re-queued with a fresh view before it fails "
        "(logged as an invocation.failed record, named in the run's end reason).",
    )


class Price(_Strict):
    """What a model's tokens cost, in the user's currency per million tokens: finite, from 0 to
    ``slateboard.models.pricing.MAX_PRICE`` (1e9; past it a price only overflows a sum)."""

    input: float = Field(ge=0, le=1e9, allow_inf_nan=False)
    output: float = Field(ge=0, le=1e9, allow_inf_nan=False)


class Limits(_Strict):
    """Hard bounds for a board run and for untrusted proposals."""

    max_steps: int = Field(200, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    max_cost: float | None = Field(
        None, gt=0, description="Money budget: the run ends 'max_cost' once the priced tokens in its log reach it."
    )
    prices: dict[str, Price] = Field(
        default_factory=dict,
        description="Prices per model name (a record's meta.model); '*' prices records of any other model.",
    )
    max_refusals: int = Field(
        2,
        ge=0,
        description="Times a worker whose held proposal a human refused is asked again, with the refusal as "
        "feedback, before its invocation fails (logged as an invocation.failed record).",
    )
    max_patch_bytes: int = Field(1 << 20, ge=64)
    max_ops: int = Field(256, ge=1)
    max_depth: int = Field(64, ge=2, le=512)
    # None (not a number) as the default keeps these out of a blueprint's JSON unless set, so
    # the canonical digest of every blueprint written before they existed is unchanged.
    cel_budget: int | None = Field(
        None,
        ge=1,
        le=1_000_000_000,
        description="Most estimated steps one CEL evaluation (an invariant, rule, stage, done or fail "
        "condition) may take; over it the expression is not run (an invariant rejects the proposal). "
        "Default 2,000,000 (about 0.1-0.2 s).",
    )
    cel_nesting: int | None = Field(
        None,
        ge=1,
        le=8,
        description="Deepest nesting of CEL comprehensions (all/exists/exists_one/map/filter). Default 3.",
    )


class Blueprint(_Strict):
    """The runtime contract of one task (see module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = "board"
    description: str = ""
    state_schema: dict[str, Any] = Field(alias="schema", description="JSON Schema 2020-12 of the state.")
    initial_state: Any = Field(default_factory=dict)
    workers: dict[str, WorkerSpec]
    rules: list[RuleSpec] = Field(default_factory=list)
    invariants: list[InvariantSpec] = Field(default_factory=list)
    stages: list[StageSpec] = Field(default_factory=list)
    done: str | None = Field(None, description="CEL over state: the board is done when true.")
    fail: str | None = Field(
        None, description="CEL over state: the board has failed when true (checked after done; ends the run 'failed')."
    )
    answer: str | None = Field(None, description="Pointer of the answer in the state, for the decider.")
    task: str = Field("/task", description="Pointer of the top-level state member that receives a run's task text.")
    approval: list[str] = Field(default_factory=list, description="Patterns whose changes need human approval.")
    quarantine: str | None = Field(None, description="Pattern of the region untrusted workers write.")
    visibility: VisibilitySpec | None = Field(
        None, description="Collections whose entries say which workers see them (docs/visibility.md)."
    )
    retention: list[RetentionSpec] = Field(
        default_factory=list,
        description="Bounds on arrays (keep the last N items), applied by system workers as logged proposals.",
    )
    guards: list[GuardSpec] = Field(
        default_factory=list,
        description="Checks after the invariants (a function or a model judge), in order; verdicts are logged.",
    )
    limits: Limits = Field(default_factory=Limits)
    circuit: CircuitSpec = Field(default_factory=CircuitSpec)

    def to_json(self) -> dict[str, Any]:
        """The blueprint as plain JSON (with ``schema`` as the key for the state schema)."""
        out = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        # Terms added after boards were first stored are left out at their defaults, so a
        # blueprint that does not use them keeps the digest its stored logs were started with.
        for key, default in _LATE_DEFAULTS:
            if out.get(key) == default:
                del out[key]
        limits = out.get("limits")
        if isinstance(limits, dict):
            for key, default in _LATE_LIMIT_DEFAULTS:
                if limits.get(key) == default:
                    del limits[key]
        return out

    def to_yaml(self) -> str:
        """The blueprint as YAML text; ``Blueprint.from_yaml(bp.to_yaml())`` compiles to the same digest
        (the text is ``to_json()`` written as block YAML, keys in their model order)."""
        import yaml  # a lazy import: YAML is only needed by this serialisation

        text: str = yaml.safe_dump(self.to_json(), sort_keys=False, allow_unicode=True, width=100)
        return text

    @classmethod
    def from_yaml(cls, text: str) -> Blueprint:
        """The blueprint in YAML ``text`` (parsed with the same bounded safe loader as blueprint files).
        Raises pydantic's ValidationError on a malformed blueprint; ``load_blueprint`` gives the
        one-report BlueprintError instead."""
        from .loading import parse_blueprint_text

        return cls.model_validate(parse_blueprint_text(text))


_LATE_DEFAULTS: tuple[tuple[str, Any], ...] = (("retention", []), ("guards", []))
_LATE_LIMIT_DEFAULTS: tuple[tuple[str, Any], ...] = (("max_refusals", 2),)
