"""The boards a serving process keeps loaded: one ``BoardSession`` per board, built from what the
board's meta records (model string, control unit, step limit, spend limits, the directory its
blueprint came from), least recently used first out.

Runner processes (``runtime.distributed``) and Temporal workers (``slateboard.temporal``) serve
many boards of one store and share this cache, so both build a board's session the same way: a
board runs on the model it was submitted with, under the spend limits recorded with it, with the
control unit it names, whichever process picks it up.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..kernel.canonical import JSON
from ..kernel.record import MODEL_META, Usage
from ..models import Model
from ..models.errors import ModelConfigError
from ..scheduling.control import AgendaOrder, ControlUnit
from ..scheduling.units import make_control
from ..stores.base import Store
from ..vocabulary import EventKind
from .boards import RunnerError
from .children import ChildRunner
from .events import PROPOSAL_DECIDED
from .ledger import board_spend_limits
from .models import resolve_runner_model
from .result import price_table
from .session import BoardSession
from .step import Concurrency, Emit

__all__ = ["BoardSessions", "commit_lines", "import_from"]


def commit_lines(board_id: str, log_line: Callable[[str], None]) -> Emit:
    """An event sink that writes one line per decided proposal of the board to ``log_line``
    (what ``slateboard worker`` prints)."""

    def emit(kind: EventKind, /, **data: JSON) -> None:
        if kind != PROPOSAL_DECIDED:
            return
        stage = f"/{data['stage']}" if data.get("stage") else ""
        log_line(
            f"commit board={board_id} seq={data.get('seq')} worker={data.get('worker')}"
            f" invocation={data.get('invocation')} {data.get('outcome')}{stage} version={data.get('version')}"
        )

    return emit


def import_from(where: JSON) -> None:
    """Append ``where`` (a board's recorded ``blueprint_dir``) to ``sys.path`` when it is an
    existing directory not on it yet."""
    if isinstance(where, str) and where not in sys.path and os.path.isdir(where):
        sys.path.append(where)


class BoardSessions:
    """Loaded sessions of the boards of ``store``, by board id (at most ``max_sessions``; the
    least recently used one whose lock is free goes first).

    ``concurrency()`` makes each session's strategy (``Shared`` for runner processes);
    ``emit_for(board_id)`` its event sink. ``model`` overrides every board's recorded model;
    ``functions`` are function workers by name or reference; ``worker_names`` serves only those
    workers; ``children`` runs sub-board workers' child boards (None: they reject, as runner
    processes run no sub-boards); ``import_blueprint_dirs`` puts a board's recorded blueprint directory on
    ``sys.path`` before its workers are built. Guarantees: one load per board at a time (a
    second caller waits for the first load), and a session carries the spend guard and the
    control unit its board's meta records before anyone steps it."""

    def __init__(
        self,
        store: Store,
        concurrency: Callable[[], Concurrency],
        *,
        model: Model | str | None = None,
        functions: Mapping[str, Callable[..., Any]] | None = None,
        worker_names: Sequence[str] | None = None,
        worker_timeout: float = 120.0,
        max_sessions: int = 256,
        import_blueprint_dirs: bool = False,
        emit_for: Callable[[str], Emit] | None = None,
        children: ChildRunner | None = None,
    ) -> None:
        self.store = store
        self.children = children
        self.concurrency = concurrency
        self.model = model
        self.functions = functions
        self.worker_names = None if worker_names is None else tuple(worker_names)
        self.worker_timeout = worker_timeout
        self.max_sessions = max_sessions
        self.import_blueprint_dirs = import_blueprint_dirs
        self.emit_for = emit_for
        self.controls: dict[str, ControlUnit] = {}
        """The control unit of each cached board whose runs are not in agenda order."""
        self._control_spent: dict[str, Usage] = {}
        self._sessions: OrderedDict[str, BoardSession] = OrderedDict()
        self._loading: dict[str, asyncio.Lock] = {}
        self._models: dict[str, Model | None] = {}

    def loaded(self) -> list[BoardSession]:
        """The sessions loaded now, least recently used first."""
        return list(self._sessions.values())

    def __contains__(self, board_id: object) -> bool:
        return board_id in self._sessions

    async def get(self, board_id: str) -> BoardSession:
        """The board's session, loaded (and cached) on first use. Raises what loading raises:
        ``BoardNotFound``/``StoreError`` from the store, ``BlueprintError``,
        ``WorkerConfigError``, ``ModelConfigError`` or ``RunnerError`` for a board these
        settings cannot run."""
        cached = self._sessions.get(board_id)
        if cached is not None:
            self._sessions.move_to_end(board_id)
            return cached
        lock = self._loading.setdefault(board_id, asyncio.Lock())
        async with lock:
            cached = self._sessions.get(board_id)
            if cached is not None:
                return cached
            session = await self._load(board_id)
            self._sessions[board_id] = session
            while len(self._sessions) > self.max_sessions:
                oldest = next(iter(self._sessions))
                if self._sessions[oldest].lock.locked():
                    break
                self.evict(oldest)
        self._loading.pop(board_id, None)
        return session

    async def _load(self, board_id: str) -> BoardSession:
        info = await self.store.board_info(board_id)
        if self.import_blueprint_dirs:
            import_from(info.meta.get("blueprint_dir"))
        steps = info.meta.get("max_steps")
        session = BoardSession(
            self.store,
            board_id,
            model=self.model_for(info.meta),
            functions=self.functions,
            worker_timeout=self.worker_timeout,
            max_steps=steps if isinstance(steps, int) and not isinstance(steps, bool) else None,
            serve=self.worker_names,
            emit=None if self.emit_for is None else self.emit_for(board_id),
            concurrency=self.concurrency(),
            children=self.children,
        )
        await session.load()
        # issue 45: the spend limits submitted with the board hold in every serving process
        # (unowned: processes share the board, so none may release another's reservations)
        limits = await board_spend_limits(self.store, info.meta, None)
        if limits is not None:
            prices = price_table(session.blueprint.spec.limits.prices)
            session.arm_spend(await limits.guard(prices, spent=session.accounts.cost))
        control = self._control_for(info.meta, session)
        if control is not None:
            if session.spend_guard is not None and hasattr(control, "spend"):
                control.spend = session.spend_guard  # a model-based control unit reserves too
            self.controls[board_id] = control
        return session

    def evict(self, board_id: str) -> None:
        """Forget the board's session (its state may be half-way: the next use reloads it)."""
        self._sessions.pop(board_id, None)
        self.controls.pop(board_id, None)
        self._control_spent.pop(board_id, None)

    async def note_control_spend(self, session: BoardSession, control: object, reason: str) -> None:
        """Log what a model-based control unit's last choice spent (the growth of its ``usage``
        since the last note in this process), as the single-board Runner does."""
        usage = getattr(control, "usage", None)
        if not isinstance(usage, Usage):
            return
        before = self._control_spent.get(session.board_id) or Usage(component=usage.component)
        delta = Usage(
            usage.tokens_in - before.tokens_in,
            usage.tokens_out - before.tokens_out,
            round(max(0.0, usage.latency_ms - before.latency_ms), 3),
            usage.component or "control",
            usage.cache_read - before.cache_read,
            usage.cache_write - before.cache_write,
        )
        self._control_spent[session.board_id] = usage
        model = getattr(getattr(control, "model", None), "name", None)
        await session.note_spend(
            delta, f"control unit chose: {reason}"[:500], model=model if isinstance(model, str) else None
        )

    def _control_for(self, meta: Mapping[str, JSON], session: BoardSession) -> ControlUnit | None:
        """The board's control unit (its meta ``control``, set by ``submit``); None for agenda
        order. RunnerError for a unit it cannot build."""
        name = meta.get("control")
        if name is None or name == "agenda":
            return None
        if not isinstance(name, str):
            raise RunnerError(f"board {session.board_id}: its control unit is not a name: {name!r}")
        try:
            unit = make_control(
                name, list(session.blueprint.workers), model=self.model_for(meta), state=lambda: session.kernel.state
            )
        except ValueError as exc:
            raise RunnerError(f"board {session.board_id}: {exc}") from None
        return None if isinstance(unit, AgendaOrder) else unit

    def model_for(self, meta: Mapping[str, JSON]) -> Model | None:
        """The Model the board's LLM workers use: the override, else the board's recorded model
        string (resolved once per process), else None (each worker's blueprint model)."""
        chosen = self.model if self.model is not None else meta.get(MODEL_META)
        if chosen is None or isinstance(chosen, Model):
            return chosen
        if not isinstance(chosen, str):
            raise ModelConfigError(str(chosen), "the board's model is not a model string")
        if chosen not in self._models:
            self._models[chosen] = resolve_runner_model(chosen)
        return self._models[chosen]
