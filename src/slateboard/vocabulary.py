"""The words slateboard's layers exchange through the log, the store and the event stream: one
spelling each, typed so that mypy checks every use.

What it holds:

- ``RecordKind``: the ``kind`` of each record slateboard writes (``Kernel.action`` takes one);
- ``Outcome``: what became of a logged record (``Record.outcome``);
- meta keys: the members of a record's (or a board's, or an invocation's) ``meta`` that one
  module writes and another reads;
- ``EventKind``: the ``kind`` of each run event (what runners and teams emit, and what the
  ``meta["event"]`` of an action record names);
- ``EndStatus``: how a board ended, in the words a user reads (``status.end_status``);
- end reasons: what a run writes as its end (``status`` classifies them);
- ``BoardStatus``: a board's lifecycle in its store (``Store.set_status`` takes one);
- ``InvocationStatus``: where an invocation stands on the agenda (``Invocation.status``).

Guarantees: every Literal is paired with the tuple of its values in the same order
(``RECORD_KINDS``, ``OUTCOMES``, ``EVENT_KINDS``, ...: ``typing.get_args`` of the Literal, so
they cannot drift; a test holds each to it), and every constant's type is its Literal, so a
constant cannot name a word the Literal lacks. It imports nothing from slateboard: every layer,
the kernel included, may import it.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

__all__ = [
    "AGENDA_EMPTY",
    "APPROVAL_DECISION_META",
    "APPROVAL_KIND",
    "APPROVAL_PATCH_META",
    "APPROVAL_RECORD_META",
    "APPROVAL_WORKER_META",
    "APPROVED",
    "BOARD_DONE",
    "BOARD_FAILED",
    "BOARD_PAUSED",
    "BOARD_RUNNING",
    "BOARD_SPENT",
    "BOARD_STATUSES",
    "BUDGET_EXCEEDED",
    "BUDGET_EXHAUSTED",
    "BUDGET_PREFIX",
    "CIRCUIT_ACTION",
    "CIRCUIT_KIND",
    "CIRCUIT_PREFIX",
    "CONTROL_KIND",
    "CONTROL_META",
    "CONTROL_SPENT",
    "COORDINATOR_DECIDED",
    "CUSTOM_EVENT",
    "DECIDER_FAILED",
    "DONE_CONDITION",
    "END_EXHAUSTED",
    "END_FAILED",
    "END_INTERRUPTED",
    "END_PAUSED",
    "END_RUNNING",
    "END_SOLVED",
    "END_STATUSES",
    "EVENT_KINDS",
    "EVENT_META",
    "FAIL_PREFIX",
    "GATHER_META",
    "GENESIS_META",
    "INTERRUPTED",
    "INVOCATION_CANCELLED",
    "INVOCATION_CLAIMED",
    "INVOCATION_DONE",
    "INVOCATION_FAILED",
    "INVOCATION_KIND",
    "INVOCATION_PENDING",
    "INVOCATION_STARTED",
    "INVOCATION_STATUSES",
    "LAPSED_META",
    "LOST_WORK",
    "MAX_COST",
    "MAX_ROUNDS",
    "MAX_STEPS",
    "MAX_TOKENS",
    "META_KEYS",
    "MODEL_META",
    "MODEL_UNAVAILABLE",
    "ONCE_KEY",
    "OUTCOMES",
    "OUTCOME_ACCEPTED",
    "OUTCOME_ACTION",
    "OUTCOME_HELD",
    "OUTCOME_NOOP",
    "OUTCOME_REJECTED",
    "PAUSED_PREFIX",
    "PROPOSAL_DECIDED",
    "PROPOSAL_KIND",
    "QUARANTINE_KIND",
    "RAISED_PREFIX",
    "RECHECK_META",
    "RECORD_KINDS",
    "REFUSED",
    "RESUMED",
    "ROUNDS_PLAYED",
    "ROUND_META",
    "RUN_ENDED",
    "RUN_KIND",
    "RUN_STARTED",
    "SPEND_KIND",
    "STAGE_CHANGED",
    "STAGE_KIND",
    "STALE_KEY",
    "STUCK",
    "TEAM_APPROVAL",
    "TEAM_COMPLETED",
    "TEAM_CONTRIBUTION",
    "TEAM_HALTED",
    "TEAM_INVOKING",
    "TEAM_NO_CONTRIBUTOR",
    "TEAM_QUARANTINED",
    "TEAM_REJECTED",
    "TEAM_RELEASED",
    "TEAM_STARTED",
    "TEAM_UNKNOWN_AGENT",
    "TEAM_WITHHELD",
    "TERMINATE",
    "TERMINATED",
    "TIMER_FIRED",
    "TIMER_KIND",
    "TOKENS_EVENT",
    "TURN_DROPPED",
    "UPDATE_EVENT",
    "VALUES_EVENT",
    "BoardStatus",
    "EndStatus",
    "EventKind",
    "InvocationStatus",
    "MetaKey",
    "Outcome",
    "RecordKind",
]

# -- record kinds ------------------------------------------------------------------------------
RecordKind = Literal[
    "proposal", "circuit", "approval", "run", "stage", "invocation", "spend", "control", "quarantine", "timer",
]  # fmt: skip
"""Every kind of record slateboard itself writes (one constant each below, which the writers
use); replay rebuilds a logged record whatever its kind."""
RECORD_KINDS: Final[tuple[RecordKind, ...]] = get_args(RecordKind)

PROPOSAL_KIND: Final[RecordKind] = "proposal"
"""A worker's proposal as the kernel decided it (accepted, rejected, no-op or held)."""
CIRCUIT_KIND: Final[RecordKind] = "circuit"
"""An action of the circuit policy (``kernel.circuit``): retry, switch worker, tighten, halt."""
APPROVAL_KIND: Final[RecordKind] = "approval"
"""A human's decision on a held proposal (``runtime.approval``); ``meta`` names the record."""
RUN_KIND: Final[RecordKind] = "run"
"""The run's lifecycle: its end (``meta["event"]`` is ``run.ended``, the reason its end reason)."""
STAGE_KIND: Final[RecordKind] = "stage"
"""A stage entered, completed or terminated (with the queued work it cancelled)."""
INVOCATION_KIND: Final[RecordKind] = "invocation"
"""An invocation that failed and whose work is lost (``invocation.failed``)."""
SPEND_KIND: Final[RecordKind] = "spend"
"""Tokens spent outside a worker's proposal (a model-based control unit, the Architect)."""
CONTROL_KIND: Final[RecordKind] = "control"
"""A team coordinator's decision for a round (who speaks, or the end)."""
QUARANTINE_KIND: Final[RecordKind] = "quarantine"
"""A team sanitiser withholding a quarantined entry."""
TIMER_KIND: Final[RecordKind] = "timer"
"""A batch rule's timer firing (``scheduling.gather``): the partial batch it flushed is in its
``meta["gather"]``, so replay needs no clock."""

# -- record outcomes ---------------------------------------------------------------------------
Outcome = Literal["accepted", "rejected", "noop", "held", "action"]
"""What became of a logged record: a proposal is accepted (a new version), rejected (at a
stage), a no-op (valid but changes nothing) or held (awaiting human approval); kernel actions
(circuit actions, approvals, run ends) are ``action``."""
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)

OUTCOME_ACCEPTED: Final[Outcome] = "accepted"
"""The proposal was committed: the state moved to a new version."""
OUTCOME_REJECTED: Final[Outcome] = "rejected"
"""The proposal was refused at a kernel stage (``Record.stage`` names it)."""
OUTCOME_NOOP: Final[Outcome] = "noop"
"""The proposal was valid but changed nothing (or its worker declined)."""
OUTCOME_HELD: Final[Outcome] = "held"
"""The proposal waits for a human's approval (``runtime.approval``)."""
OUTCOME_ACTION: Final[Outcome] = "action"
"""Not a proposal: a kernel action (circuit action, approval, stage, run end, spend, ...)."""

# -- meta keys ---------------------------------------------------------------------------------
MetaKey = Literal[
    "genesis", "event", "model", "record", "decision", "worker", "patch", "control", "stale", "once", "round",
    "gather", "recheck", "lapsed",
]  # fmt: skip
"""The ``meta`` members one layer writes and another reads (one constant each below)."""
META_KEYS: Final[tuple[MetaKey, ...]] = get_args(MetaKey)

GENESIS_META: Final[MetaKey] = "genesis"
"""The ``meta`` member of a board's first record that binds the log to its blueprint and
initial state: ``{"blueprint": <blueprint digest>, "initial_state": <state hash>}``. The
record's hash covers it, and every later record chains to that hash, so changing the stored
blueprint or initial state fails verification at the genesis (record 0)."""
EVENT_META: Final[MetaKey] = "event"
"""The ``meta`` member naming the run event an action record logs (``run.ended``,
``stage.changed``, ...): what readers of the log branch on, with the record's ``kind``."""
MODEL_META: Final[MetaKey] = "model"
"""The ``meta`` member naming the model string (a board's meta: the one its LLM workers use;
a record's: the model that spent its tokens)."""
# An approval record's meta (``runtime.approval`` writes it; the kernel, the runtime and teams
# read it): which held record it decides, the decision, and the held worker and patch.
APPROVAL_RECORD_META: Final[MetaKey] = "record"
"""The seq of the held record an approval decides."""
APPROVAL_DECISION_META: Final[MetaKey] = "decision"
"""``APPROVED`` or ``REFUSED``."""
APPROVAL_WORKER_META: Final[MetaKey] = "worker"
"""The worker whose proposal was held."""
APPROVAL_PATCH_META: Final[MetaKey] = "patch"
"""The patch approved (committed by the board's next run) or refused (never committed)."""
CONTROL_META: Final[MetaKey] = "control"
"""Key of a proposal record's (and its invocation's) ``meta`` holding why a control unit chose its
invocation."""
STALE_KEY: Final[MetaKey] = "stale"
"""Key in an invocation's ``meta`` counting how often a stale proposal re-queued it."""
ONCE_KEY: Final[MetaKey] = "once"
"""Key in an invocation's ``meta``: when true, a rejected (not stale) proposal completes the
invocation instead of re-queuing it for a retry: its control unit decides what runs next
(``Team.blackboard``'s rounds)."""
RECHECK_META: Final[MetaKey] = "recheck"
"""Key in an invocation's ``meta``: the index of the ``recheck`` rule that created it, whose
condition is checked again when it comes up (``scheduling.rules.Scheduler.lapsed``)."""
LAPSED_META: Final[MetaKey] = "lapsed"
"""Key in a decline record's ``meta``, true when the runtime declined for the worker because its
invocation lapsed (its rule's condition no longer held): no worker or model was called."""
ROUND_META: Final[MetaKey] = "round"
"""Key in a team's records' (and invocations') ``meta``: the round they belong to."""
GATHER_META: Final[MetaKey] = "gather"
"""Key in a record's ``meta``: the notes its commit gave the board's joins and batches (arrivals,
key errors, a timer's firing; ``scheduling.gather``), from which their state is rebuilt."""

APPROVED: Final = "approved"
"""An approval's decision: commit the held patch."""
REFUSED: Final = "refused"
"""An approval's decision: never commit the held patch."""

# -- run events --------------------------------------------------------------------------------
EventKind = Literal[
    # a runner's events (``Runner.events``, ``on_event``)
    "run.started", "invocation.started", "proposal.decided", "circuit.action", "stage.changed",
    "invocation.failed", "control.spent", "board.spent", "run.ended", "timer.fired",
    # the stream modes beside ``events`` (``slateboard.streaming``)
    "state.update", "state.values", "model.tokens", "worker.custom",
    # a team's blackboard run (``Team.events``, ``Team.stream``)
    "blackboard.started", "blackboard.coordinator_decided", "blackboard.no_contributor",
    "blackboard.unknown_agent", "blackboard.invoking", "blackboard.contribution",
    "blackboard.rejected", "blackboard.decider_failed", "blackboard.approval", "blackboard.halted",
    "blackboard.completed", "blackboard.quarantined", "blackboard.released", "blackboard.withheld",
    "budget.exceeded",
    # logged only (``meta["event"]`` of a record), never emitted
    "blackboard.turn_dropped",
]  # fmt: skip
"""Every run event kind: what an emit function takes and a ``RunEvent`` carries; names are
dotted, ``<area>.<what>``."""
EVENT_KINDS: Final[tuple[EventKind, ...]] = get_args(EventKind)

RUN_STARTED: Final[EventKind] = "run.started"
"""A runner began driving a board (its version, seq and parallelism)."""
INVOCATION_STARTED: Final[EventKind] = "invocation.started"
"""A worker was called for one invocation."""
PROPOSAL_DECIDED: Final[EventKind] = "proposal.decided"
"""The kernel decided a proposal (its record's seq, outcome, stage and reason)."""
CIRCUIT_ACTION: Final[EventKind] = "circuit.action"
"""The circuit policy acted (retry, switch worker, tighten, halt)."""
STAGE_CHANGED: Final[EventKind] = "stage.changed"
"""A stage was entered, completed or terminated (also a stage record's ``meta["event"]``)."""
INVOCATION_FAILED: Final[EventKind] = "invocation.failed"
"""An invocation failed and its work is lost (also an invocation record's ``meta["event"]``)."""
CONTROL_SPENT: Final[EventKind] = "control.spent"
"""A model-based control unit spent tokens."""
BOARD_SPENT: Final[EventKind] = "board.spent"
"""The board's total spend after a step."""
TIMER_FIRED: Final[EventKind] = "timer.fired"
"""A batch rule's timer fired (also a timer record's ``meta["event"]``)."""
RUN_ENDED: Final[EventKind] = "run.ended"
"""The run ended (also the run record's ``meta["event"]``); ``reason`` is its end reason."""
UPDATE_EVENT: Final[EventKind] = "state.update"
"""Kind of the event carrying one committed patch (stream mode ``updates``)."""
VALUES_EVENT: Final[EventKind] = "state.values"
"""Kind of the event carrying the state after one commit (stream mode ``values``)."""
TOKENS_EVENT: Final[EventKind] = "model.tokens"
"""Kind of the event carrying one chunk of a model's reply (stream mode ``tokens``)."""
CUSTOM_EVENT: Final[EventKind] = "worker.custom"
"""Kind of the event carrying one progress report of a worker (stream mode ``custom``)."""
TEAM_STARTED: Final[EventKind] = "blackboard.started"
"""A team's blackboard run began."""
COORDINATOR_DECIDED: Final[EventKind] = "blackboard.coordinator_decided"
"""The ``meta.event`` of control records (and the event the run emits)."""
TEAM_NO_CONTRIBUTOR: Final[EventKind] = "blackboard.no_contributor"
"""The coordinator named nobody for a round."""
TEAM_UNKNOWN_AGENT: Final[EventKind] = "blackboard.unknown_agent"
"""The coordinator named an agent the team does not have."""
TEAM_INVOKING: Final[EventKind] = "blackboard.invoking"
"""An agent is called for its turn."""
TEAM_CONTRIBUTION: Final[EventKind] = "blackboard.contribution"
"""An agent's entry was committed to the board."""
TEAM_REJECTED: Final[EventKind] = "blackboard.rejected"
"""An agent's (or the decider's) proposal was rejected."""
DECIDER_FAILED: Final[EventKind] = "blackboard.decider_failed"
"""The decider gave no usable answer."""
TEAM_APPROVAL: Final[EventKind] = "blackboard.approval"
"""A held entry was approved or refused."""
TEAM_HALTED: Final[EventKind] = "blackboard.halted"
"""The circuit policy halted the team's run."""
TEAM_COMPLETED: Final[EventKind] = "blackboard.completed"
"""The team's run ended with its final answer."""
TEAM_QUARANTINED: Final[EventKind] = "blackboard.quarantined"
"""An entry went to quarantine."""
TEAM_RELEASED: Final[EventKind] = "blackboard.released"
"""A sanitiser released a quarantined entry."""
TEAM_WITHHELD: Final[EventKind] = "blackboard.withheld"
"""A sanitiser withheld a quarantined entry."""
BUDGET_EXCEEDED: Final[EventKind] = "budget.exceeded"
"""A team's budget policy stopped the run."""
TURN_DROPPED: Final[EventKind] = "blackboard.turn_dropped"
"""The ``meta.event`` of the record that logs a parallel turn dropped after the run halted."""

# -- end statuses ------------------------------------------------------------------------------
EndStatus = Literal["running", "solved", "exhausted", "failed", "paused", "interrupted"]
"""How a board ended, in the words a user reads (``status.end_status`` says which is which)."""
END_STATUSES: Final[tuple[EndStatus, ...]] = get_args(EndStatus)

END_RUNNING: Final[EndStatus] = "running"
END_SOLVED: Final[EndStatus] = "solved"
END_EXHAUSTED: Final[EndStatus] = "exhausted"
END_FAILED: Final[EndStatus] = "failed"
END_PAUSED: Final[EndStatus] = "paused"
END_INTERRUPTED: Final[EndStatus] = "interrupted"

# -- end reasons: what a run writes as its end (the runtime and teams write them, ``status``
# reads them; the constants are the one spelling both sides use).
DONE_CONDITION: Final = "done"
"""The blueprint's ``done`` condition held."""
AGENDA_EMPTY: Final = "agenda_empty"
"""No invocation was pending or claimed any more."""
MAX_STEPS: Final = "max_steps"
"""The blueprint's (or a run's) step limit was reached."""
MAX_TOKENS: Final = "max_tokens"
"""The blueprint's (or a run's) token limit was reached."""
MAX_COST: Final = "max_cost"
"""The blueprint's (or a run's) cost limit was reached."""
STUCK: Final = "stuck"
"""A circuit trigger: no proposal was accepted for a while (a limit, not a failure)."""
TERMINATED: Final = "terminated"
"""A team's coordinator ended the run."""
TERMINATE: Final = "terminate"
"""A classic board's coordinator ended the run (read as solved, like ``TERMINATED``)."""
MAX_ROUNDS: Final = "max_rounds"
"""A team's coordinator never ended the run: its ``max_rounds`` limit did."""
ROUNDS_PLAYED: Final = "rounds_played"
"""A team without a coordinator (round-robin) played all its rounds: its normal end, no limit
hit (the decider answers after them)."""
INTERRUPTED: Final = "interrupted"
"""The end reason of a board whose run was stopped mid-way (its store status stays ``running``,
so ``resume`` takes it up)."""
RESUMED: Final = "resumed"
"""The reason a team leaves on a board it takes up again (running once more)."""
FAIL_PREFIX: Final = "failed: "
"""The end reason a blueprint's ``fail`` condition leaves: ``failed: <the condition>``."""
CIRCUIT_PREFIX: Final = "circuit"
"""How the end reason of a board the circuit policy halted starts: ``circuit: <its reason>``."""
PAUSED_PREFIX: Final = "paused"
"""How the end reason of a board waiting for a human starts: ``paused: awaiting approval of
record N``."""
BUDGET_PREFIX: Final = "budget:"
"""The end reason of a run its spend guard stopped: ``budget:<what ran out>``."""
RAISED_PREFIX: Final = "the run raised"
"""How the end reason of a run that raised starts (the board fails)."""
MODEL_UNAVAILABLE: Final = "model unavailable"
"""What the end reason of a board halted because its model never answered holds (it fails)."""
BUDGET_EXHAUSTED: Final = "budget exhausted"
"""What the end reason of a board the circuit halted at its step or token budget holds (a
limit: the board is exhausted, not failed)."""
LOST_WORK: Final = "; lost work: "
"""What separates an end reason from the invocations the run lost (``status.with_lost_work``)."""

# -- board lifecycle ---------------------------------------------------------------------------
BoardStatus = Literal["running", "paused", "done", "failed"]
"""A board's lifecycle in its store: claims are only handed out for running boards."""
BOARD_STATUSES: Final[tuple[BoardStatus, ...]] = get_args(BoardStatus)

BOARD_RUNNING: Final[BoardStatus] = "running"
"""The board is being (or may be) driven: its invocations can be claimed."""
BOARD_PAUSED: Final[BoardStatus] = "paused"
"""The board waits for a human's approval."""
BOARD_DONE: Final[BoardStatus] = "done"
"""The run ended (solved or a limit reached)."""
BOARD_FAILED: Final[BoardStatus] = "failed"
"""The run ended in failure (circuit halt, ``fail`` condition, or it raised)."""

# -- invocation statuses -----------------------------------------------------------------------
InvocationStatus = Literal["pending", "claimed", "done", "cancelled"]
"""Where an invocation stands on a board's agenda (``Invocation.status``)."""
INVOCATION_STATUSES: Final[tuple[InvocationStatus, ...]] = get_args(InvocationStatus)

INVOCATION_PENDING: Final[InvocationStatus] = "pending"
"""Waiting to be claimed."""
INVOCATION_CLAIMED: Final[InvocationStatus] = "claimed"
"""Claimed by a runner (under a lease in a shared store) and being worked on."""
INVOCATION_DONE: Final[InvocationStatus] = "done"
"""Its proposal was decided (or it ran out of retries): it leaves the agenda."""
INVOCATION_CANCELLED: Final[InvocationStatus] = "cancelled"
"""Dropped before it ran (a duplicate of a pending one, or its stage terminated)."""
