"""How a board ended, in the words a user needs: the one mapping the CLI, the result API and the
dashboard's badges share.

The store keeps a lifecycle status (running, paused, done, failed) and the end reason the run
wrote; ``end_status`` turns the two into one of:

- ``solved``: the blueprint's ``done`` condition was met (or the coordinator ended the classic
  board, or the agenda ran dry with an answer on the board);
- ``solved`` also when a team played its rounds: ``rounds_played`` (a team without a
  coordinator, round-robin: its normal end) or ``max_rounds`` (the coordinator never ended the
  run); the decider answers after the rounds, so either is solved unless the run is known to
  have no answer;
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

from .vocabulary import (
    AGENDA_EMPTY,
    BOARD_FAILED,
    BOARD_PAUSED,
    BOARD_RUNNING,
    BUDGET_EXHAUSTED,
    BUDGET_PREFIX,
    CIRCUIT_PREFIX,
    DONE_CONDITION,
    END_EXHAUSTED,
    END_FAILED,
    END_INTERRUPTED,
    END_PAUSED,
    END_RUNNING,
    END_SOLVED,
    END_STATUSES,
    FAIL_PREFIX,
    INTERRUPTED,
    LOST_WORK,
    MAX_COST,
    MAX_ROUNDS,
    MAX_STEPS,
    MAX_TOKENS,
    MODEL_UNAVAILABLE,
    PAUSED_PREFIX,
    RAISED_PREFIX,
    ROUNDS_PLAYED,
    STUCK,
    TERMINATE,
    TERMINATED,
    EndStatus,
)

# The end statuses and end reasons live in ``slateboard.vocabulary``; this module, their first
# home, re-exports them beside the mapping that reads them.
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
    "ROUNDS_PLAYED",
    "TERMINATED",
    "EndStatus",
    "base_reason",
    "end_status",
    "failure_kind",
    "with_lost_work",
]


def with_lost_work(reason: str, lost: list[str]) -> str:
    """``reason`` naming the invocations that failed during the run (none: unchanged)."""
    if not lost or LOST_WORK in reason:
        return reason
    shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
    return f"{reason}{LOST_WORK}{len(lost)} invocation(s) failed ({shown})"


def base_reason(reason: str | None) -> str:
    """The end reason without the lost-work note ``with_lost_work`` adds."""
    return (reason or "").split(LOST_WORK, 1)[0].strip()


_SOLVED = (DONE_CONDITION, TERMINATED, TERMINATE)
_EXHAUSTED = (MAX_STEPS, MAX_TOKENS, MAX_COST, STUCK)


def failure_kind(reason: str | None) -> str | None:
    """``model`` when the board failed because the model was unavailable, ``circuit`` for any
    other circuit halt, ``error`` for a run that raised, ``condition`` when the blueprint's
    ``fail`` condition held; None when ``reason`` is no failure."""
    text = base_reason(reason)
    if text.startswith(FAIL_PREFIX):
        return "condition"
    if MODEL_UNAVAILABLE in text:
        return "model"
    if text.startswith(CIRCUIT_PREFIX) and BUDGET_EXHAUSTED not in text:
        return "circuit"
    if text.startswith(RAISED_PREFIX):
        return "error"
    return None


def end_status(board_status: str | None, reason: str | None, *, answered: bool | None = None) -> EndStatus:
    """The user-facing status of a board from its stored ``board_status`` (None when only the
    end reason is known) and end ``reason``; ``answered`` says whether the board holds an answer
    (decides an ``agenda_empty`` end: solved with one, exhausted without).

    Guarantees: total (every input maps to one of END_STATUSES) and pure.
    """
    text = base_reason(reason)
    if text == INTERRUPTED and board_status in (BOARD_RUNNING, None):
        return END_INTERRUPTED
    if board_status == BOARD_RUNNING or (board_status is None and not text):
        return END_RUNNING
    if board_status == BOARD_PAUSED or text.startswith(PAUSED_PREFIX):
        return END_PAUSED
    if failure_kind(text) is not None:
        return END_FAILED
    if BUDGET_EXHAUSTED in text:  # a circuit budget halt is a limit, whatever the store says
        return END_EXHAUSTED
    if board_status == BOARD_FAILED:
        return END_FAILED
    if text in _SOLVED:
        return END_SOLVED
    if text in (MAX_ROUNDS, ROUNDS_PLAYED):
        # A team's rounds ran out: the decider answers after them (answered=None: not known here).
        return END_EXHAUSTED if answered is False else END_SOLVED
    if text in _EXHAUSTED or text.startswith((CIRCUIT_PREFIX, "max_", BUDGET_PREFIX)):
        return END_EXHAUSTED
    # agenda_empty, control, or a reason this mapping does not know: the answer decides.
    return END_SOLVED if answered else END_EXHAUSTED
