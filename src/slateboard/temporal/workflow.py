"""The board workflow: the durable loop that drives one board, step by step, on Temporal.

It holds no board state and runs no user code: each turn it asks the ``plan`` activity which
invocation runs next (or why the board ended), the ``propose`` activity for that invocation's
worker reply (a model call, a tool, a function worker: I/O is fine there), and the ``commit``
activity to decide it with the kernel and append it to the board's log. The store stays the
board's home and its log the audit trail; Temporal's history only records which activity ran
with which result, so a replayed workflow re-reads those results and never calls a worker or
appends a record again. A board paused for approval waits for the ``approval`` signal
(``slateboard approve`` sends it); a sub-board worker's children run as child workflows of
this one (the same workflow, on the same task queue), then the worker proposes their answers; a
cancelled workflow (``slateboard cancel``) gives its claims
back and leaves the board resumable with the end reason ``interrupted``.

A team's board (``Team.blackboard``) runs as the team workflow instead: one ``team_round``
activity per round (the team is rebuilt on the worker from its reference), the same approval
signal, cancellation and failure as a board's.
"""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    WorkflowAlreadyStartedError,
)
from temporalio.exceptions import (
    TimeoutError as RoundTimedOut,
)

with workflow.unsafe.imports_passed_through():
    from ..vocabulary import BOARD_FAILED, BOARD_PAUSED
    from ._names import (
        APPROVAL_SIGNAL,
        COMMIT,
        FAIL,
        INTERRUPT,
        PLAN,
        PROPOSE,
        TEAM_ROUND,
        TEAM_WORKFLOW,
        UNUSABLE,
        WORKFLOW,
        BoardStart,
        TeamStart,
        workflow_id,
    )

# Store and worker faults are retried without end (a store that is down for an hour delays the
# board, it does not fail it); what can never succeed is raised as UNUSABLE and not retried.
RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=30),
    non_retryable_error_types=[UNUSABLE],
)


@workflow.defn(name=WORKFLOW)
class BoardWorkflow:
    """One board's run (see the module docstring). Returns the plan that ended it: ``ended``
    (the end reason) and ``status``."""

    def __init__(self) -> None:
        self._approvals = 0

    @workflow.signal(name=APPROVAL_SIGNAL)
    def approval(self) -> None:
        """A human decided on a held proposal: plan again."""
        self._approvals += 1

    async def _run_children(self, children: list[dict[str, Any]], max_parallel: int) -> None:
        """Run each child board's workflow (at most ``max_parallel`` at once) to its end. A child
        that fails or is cancelled is not an error here: the sub-board worker reads every child
        back and rejects, naming it, when one did not end solved."""
        gate = asyncio.Semaphore(max(1, max_parallel))

        async def one(child: dict[str, Any]) -> None:
            async with gate:
                with contextlib.suppress(ChildWorkflowError, WorkflowAlreadyStartedError):
                    await workflow.execute_child_workflow(
                        WORKFLOW, BoardStart(**child), id=workflow_id(str(child["board_id"]))
                    )

        await asyncio.gather(*(one(c) for c in children))

    @workflow.run
    async def run(self, start: BoardStart) -> dict[str, Any]:
        """Drive the board until it ends; on cancellation, interrupt it (resumable)."""
        store_limit = timedelta(seconds=start.store_timeout_s)
        try:
            planned: dict[str, Any] | None = None
            while True:
                seen = self._approvals
                plan: dict[str, Any] = planned or await workflow.execute_activity(
                    PLAN, start, start_to_close_timeout=store_limit, retry_policy=RETRY
                )
                planned = None
                if plan.get("ended") is None and plan.get("invocation") is None:
                    # A batch's timer is pending (wait_s), or the pick was taken meanwhile: a
                    # durable timer, then plan again.
                    await asyncio.sleep(min(max(float(plan.get("wait_s") or 1.0), 0.05), 3600.0))
                    continue
                if plan.get("ended") is not None:
                    if plan.get("status") != BOARD_PAUSED:
                        return plan
                    await workflow.wait_condition(lambda seen=seen: self._approvals > seen)  # type: ignore[misc]
                    continue
                step = {"board_id": start.board_id, "invocation": plan["invocation"], "reason": plan["reason"]}
                proposed: dict[str, Any] = await workflow.execute_activity(
                    PROPOSE,
                    args=[start, step],
                    start_to_close_timeout=timedelta(seconds=start.worker_timeout_s + start.store_timeout_s),
                    heartbeat_timeout=timedelta(seconds=start.heartbeat_s),
                    retry_policy=RETRY,
                )
                if proposed.get("children") is not None:
                    # A sub-board worker: each child board runs as a child workflow, then the
                    # worker proposes the children's answers (read back from the store).
                    await self._run_children(proposed["children"], int(proposed.get("max_parallel") or 1))
                    proposed = await workflow.execute_activity(
                        PROPOSE,
                        args=[start, {**step, "children_ran": True}],
                        start_to_close_timeout=timedelta(seconds=start.worker_timeout_s + start.store_timeout_s),
                        heartbeat_timeout=timedelta(seconds=start.heartbeat_s),
                        retry_policy=RETRY,
                    )
                if proposed.get("proposal") is None:
                    continue  # the invocation was committed or cancelled meanwhile
                committed: dict[str, Any] = await workflow.execute_activity(
                    COMMIT,
                    args=[start, {**step, "proposal": proposed["proposal"]}],
                    start_to_close_timeout=store_limit,
                    retry_policy=RETRY,
                )
                if committed.get("ended") is not None and committed.get("status") != BOARD_PAUSED:
                    return committed
                planned = committed.get("next")  # the commit planned the next step already
        except ActivityError as exc:
            cause = exc.cause
            if isinstance(cause, CancelledError):
                # The workflow was cancelled while an activity ran: the activity reports its own
                # cancellation first. Interrupt the board as below, then end cancelled.
                await _interrupt(start.board_id, store_limit)
                raise
            return await _failed(start.board_id, exc, store_limit)
        except asyncio.CancelledError:
            await _interrupt(start.board_id, store_limit)
            raise


@workflow.defn(name=TEAM_WORKFLOW)
class TeamWorkflow:
    """One team board's run: the ``team_round`` activity, once per round, until the run ends;
    a run paused at an entry awaiting approval waits for the ``approval`` signal and plays on.
    Returns the last round's ``ended`` (the end reason) and ``status``."""

    def __init__(self) -> None:
        self._approvals = 0

    @workflow.signal(name=APPROVAL_SIGNAL)
    def approval(self) -> None:
        """A human decided on a held entry: play on."""
        self._approvals += 1

    @workflow.run
    async def run(self, start: TeamStart) -> dict[str, Any]:
        """Play rounds until the run ends; on cancellation, interrupt the board (resumable)."""
        store_limit = timedelta(seconds=start.store_timeout_s)
        # The budget's seconds count from the workflow's start, and again from each approval (a
        # person's time is not the team's), as they count from a resume in one process.
        started = workflow.now().isoformat()
        try:
            while True:
                seen = self._approvals
                played: dict[str, Any] = await workflow.execute_activity(
                    TEAM_ROUND,
                    args=[start, started],
                    start_to_close_timeout=timedelta(seconds=start.round_timeout_s),
                    heartbeat_timeout=timedelta(seconds=start.heartbeat_s),
                    retry_policy=RETRY,
                    # A cancelled round stops (at its next heartbeat) before the board is marked
                    # interrupted, so no round goes on beside a resumed workflow.
                    cancellation_type=workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
                )
                if played.get("ended") is not None and played.get("status") != BOARD_PAUSED:
                    return played
                if workflow.cancellation_reason() is not None:
                    # Cancelled while the round played to its end (a cancellation reaches a
                    # round at its next heartbeat, which a short round may not send).
                    raise asyncio.CancelledError
                if played.get("ended") is None:
                    continue
                await workflow.wait_condition(lambda seen=seen: self._approvals > seen)  # type: ignore[misc]
                started = workflow.now().isoformat()
        except ActivityError as exc:
            cause = exc.cause
            # Retries never end: a round times out for the workflow only when it was cancelled
            # while its worker was gone, an interruption too.
            cancelled = workflow.cancellation_reason() is not None
            if isinstance(cause, CancelledError) or (cancelled and isinstance(cause, RoundTimedOut)):
                await _interrupt(start.board_id, store_limit)
                raise
            return await _failed(start.board_id, exc, store_limit)
        except asyncio.CancelledError:
            await _interrupt(start.board_id, store_limit)
            raise


async def _interrupt(board_id: str, limit: timedelta) -> None:
    """Cancelled (slateboard cancel, Ctrl-C on submit --wait): give the claims back and mark
    the board ``interrupted``; the caller then lets the cancellation end the workflow."""
    await workflow.execute_activity(INTERRUPT, board_id, start_to_close_timeout=limit, retry_policy=RETRY)


async def _failed(board_id: str, exc: ActivityError, limit: timedelta) -> dict[str, Any]:
    """An activity that can never succeed for this board (``UNUSABLE``: a version, digest or
    store mismatch, a worker that cannot be built) ends the board ``failed`` with its message,
    and the workflow returns that end; any other activity error is raised again."""
    cause = exc.cause
    if not (isinstance(cause, ApplicationError) and cause.type == UNUSABLE):
        raise exc
    reason = f"engine: {cause.message}"
    await workflow.execute_activity(FAIL, args=[board_id, reason], start_to_close_timeout=limit, retry_policy=RETRY)
    return {"ended": reason, "status": BOARD_FAILED}
