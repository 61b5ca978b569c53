"""How a board ended, in the words a user needs: the one mapping the CLI, the result API and the
dashboard's badges share.

The store keeps a lifecycle status (running, paused, done, failed) and the end reason the run
wrote; ``end_status`` turns the two into one of:

- ``solved``: the blueprint's ``done`` condition was met (or the coordinator ended the classic
  board, or the agenda ran dry with an answer on the board);
- ``solved`` also when a team played its ``max_rounds`` (its normal end in round-robin: the
  decider answers after the rounds), unless the run is known to have no answer;
- ``exhausted``: a limit was reached (max_steps, max_tokens, a circuit budget, stuck)
  or the agenda ran dry, without ``done``;
- ``failed``: the circuit policy halted the board, the blueprint's ``fail`` condition held
  (``failed: <condition>``), the model was unavailable, or the run raised;
- ``paused``: waiting for a human approval;
- ``interrupted``: the run was stopped (Ctrl-C) mid-way; the log is intact and
  ``slateboard resume BOARD`` goes on from the last committed record;
- ``running``: not ended yet.
"""

from __future__ import annotations

from typing import Literal

__all__ = [
    "AGENDA_EMPTY",
    "BUDGET_PREFIX",
    "CIRCUIT_PREFIX",
    "DONE_CONDITION",
    "END_STATUSES",
    "FAIL_PREFIX",
    "INTERRUPTED",
    "LOST_WORK",
    "MAX_COST",
    "MAX_ROUNDS",
    "MAX_STEPS",
    "MAX_TOKENS",
    "PAUSED_PREFIX",
    "TERMINATED",
    "EndStatus",
    "base_reason",
    "end_status",
    "failure_kind",
    "with_lost_work",
]

EndStatus = Literal["running", "solved", "exhausted", "failed", "paused", "interrupted"]
END_STATUSES: tuple[EndStatus, ...] = ("running", "solved", "exhausted", "failed", "paused", "interrupted")

INTERRUPTED = "interrupted"
"""The end reason of a board whose run was stopped mid-way (its store status stays ``running``,
so ``resume`` takes it up)."""

# -- end reasons: what a run writes as its end (the runtime and team write them, this module
# reads them; the constants are the one spelling both sides use).
DONE_CONDITION = "done"
"""The blueprint's ``done`` condition held."""
AGENDA_EMPTY = "agenda_empty"
"""No invocation was pending or claimed any more."""
MAX_STEPS, MAX_TOKENS, MAX_COST = "max_steps", "max_tokens", "max_cost"
"""A limit of the blueprint (or a run's override) was reached."""
TERMINATED = "terminated"
"""A team's coordinator ended the run."""
MAX_ROUNDS = "max_rounds"
"""A team played all its rounds."""
FAIL_PREFIX = "failed: "
"""The end reason a blueprint's ``fail`` condition leaves: ``failed: <the condition>``."""
CIRCUIT_PREFIX = "circuit"
"""How the end reason of a board the circuit policy halted starts: ``circuit: <its reason>``."""
PAUSED_PREFIX = "paused"
"""How the end reason of a board waiting for a human starts: ``paused: awaiting approval of
record N``."""
BUDGET_PREFIX = "budget:"
"""The end reason of a run its spend guard stopped: ``budget:<what ran out>``."""
LOST_WORK = "; lost work: "
"""What separates an end reason from the invocations the run lost (``with_lost_work``)."""


def with_lost_work(reason: str, lost: list[str]) -> str:
    """``reason`` naming the invocations that failed during the run (none: unchanged)."""
    if not lost or LOST_WORK in reason:
        return reason
    shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
    return f"{reason}{LOST_WORK}{len(lost)} invocation(s) failed ({shown})"


def base_reason(reason: str | None) -> str:
    """The end reason without the lost-work note ``with_lost_work`` adds."""
    return (reason or "").split(LOST_WORK, 1)[0].strip()


_SOLVED = (DONE_CONDITION, TERMINATED, "terminate")
_EXHAUSTED = (MAX_STEPS, MAX_TOKENS, MAX_COST, "stuck")


def failure_kind(reason: str | None) -> str | None:
    """``model`` when the board failed because the model was unavailable, ``circuit`` for any
    other circuit halt, ``error`` for a run that raised, ``condition`` when the blueprint's
    ``fail`` condition held; None when ``reason`` is no failure."""
    text = base_reason(reason)
    if text.startswith(FAIL_PREFIX):
        return "condition"
    if "model unavailable" in text:
        return "model"
    if text.startswith(CIRCUIT_PREFIX) and "budget exhausted" not in text:
        return "circuit"
    if text.startswith("the run raised"):
        return "error"
    return None


def end_status(board_status: str | None, reason: str | None, *, answered: bool | None = None) -> EndStatus:
    """The user-facing status of a board from its stored ``board_status`` (None when only the
    end reason is known) and end ``reason``; ``answered`` says whether the board holds an answer
    (decides an ``agenda_empty`` end: solved with one, exhausted without).

    Guarantees: total (every input maps to one of END_STATUSES) and pure.
    """
    text = base_reason(reason)
    if text == INTERRUPTED and board_status in ("running", None):
        return "interrupted"
    if board_status == "running" or (board_status is None and not text):
        return "running"
    if board_status == "paused" or text.startswith(PAUSED_PREFIX):
        return "paused"
    if failure_kind(text) is not None:
        return "failed"
    if "budget exhausted" in text:  # a circuit budget halt is a limit, whatever the store says
        return "exhausted"
    if board_status == "failed":
        return "failed"
    if text in _SOLVED:
        return "solved"
    if text == MAX_ROUNDS:
        # A team's rounds ran out: the decider answers after them (answered=None: not known here).
        return "exhausted" if answered is False else "solved"
    if text in _EXHAUSTED or text.startswith((CIRCUIT_PREFIX, "max_", BUDGET_PREFIX)):
        return "exhausted"
    # agenda_empty, control, or a reason this mapping does not know: the answer decides.
    return "solved" if answered else "exhausted"
