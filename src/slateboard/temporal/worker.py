"""A Temporal worker process serving boards: the board workflow, the team workflow and their
activities on one task queue, for one store. Start as many as you like, on any machine that reaches the store and the
Temporal server."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from ..models import Model
from ..stores.base import Store
from ._names import DEFAULT_TASK_QUEUE, tenant_queue
from .activities import BoardActivities
from .team_activities import TeamActivities
from .workflow import BoardWorkflow, TeamWorkflow

__all__ = ["BoardWorker"]


class BoardWorker:
    """Serves board workflows, team workflows (``submit_team``) and their activities on
    ``task_queue`` until ``stop()``.

    ``concurrency`` bounds the activities (worker calls, commits) in flight in this process;
    ``grace_s`` is how long a stop lets running activities finish before cancelling them (a
    cancelled activity is retried by another worker; nothing half-committed stays, since a
    commit is one store transaction). The other keywords are ``BoardActivities``'."""

    def __init__(
        self,
        client: Client,
        store: Store,
        *,
        task_queue: str = DEFAULT_TASK_QUEUE,
        concurrency: int = 16,
        grace_s: float = 10.0,
        model: Model | str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        worker_names: Sequence[str] | None = None,
        import_blueprint_dirs: bool = False,
        log_line: Callable[[str], None] | None = None,
        identity: str | None = None,
    ) -> None:
        # A tenant's store serves the tenant's own queue (see tenant_queue): another tenant's
        # workflow never reaches a worker that cannot see its board.
        task_queue = tenant_queue(task_queue, getattr(store, "tenant", None))
        self.activities = BoardActivities(
            store,
            model=model,
            functions=functions,
            worker_names=worker_names,
            import_blueprint_dirs=import_blueprint_dirs,
            log_line=log_line,
            engine_meta={
                "name": "temporal",
                "task_queue": task_queue,
                "address": client.service_client.config.target_host,
            },
        )
        self.team_activities = TeamActivities(
            store, import_blueprint_dirs=import_blueprint_dirs, log_line=self.activities.log_line
        )
        self.identity = identity or f"slateboard-{uuid.uuid4().hex[:8]}"
        self.task_queue = task_queue
        self.worker = Worker(
            client,
            task_queue=task_queue,
            workflows=[BoardWorkflow, TeamWorkflow],
            # The workflow module is slateboard's own: passed through, not re-imported per run
            # (the sandbox still guards what the workflow's code itself calls).
            workflow_runner=SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules("slateboard")
            ),
            activities=[*self.activities.all(), *self.team_activities.all()],
            max_concurrent_activities=concurrency,
            graceful_shutdown_timeout=timedelta(seconds=grace_s),
            identity=self.identity,
        )
        self._stop = asyncio.Event()

    def stop(self) -> None:
        """Ask ``serve`` to stop (safe to call from a signal handler in the loop)."""
        self._stop.set()

    async def serve(self) -> None:
        """Poll the task queue until ``stop()``, then shut down cleanly (running activities get
        the grace period; the worker's polls are closed before the event loop ends, which an
        abrupt interpreter exit would abort)."""
        self.activities.log_line(f"temporal worker {self.identity} serving task queue {self.task_queue!r}")
        running = asyncio.create_task(self.worker.run())
        stopping = asyncio.create_task(self._stop.wait())
        done, _ = await asyncio.wait([running, stopping], return_when=asyncio.FIRST_COMPLETED)
        if running in done:
            stopping.cancel()
            running.result()  # a fatal worker error surfaces here
            return
        await self.worker.shutdown()
        await running
        self.activities.log_line(f"temporal worker {self.identity} stopped")
