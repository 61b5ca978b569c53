"""The sub-board worker: runs child boards and proposes their answer in the parent.

A worker whose spec has ``board`` (``blueprint.models.SubBoardSpec``) proposes, for one
invocation, the answer of a child board of the blueprint it names (inline in the parent's
blueprint), started from ``inputs`` taken from the parent's state; with ``each``, one child per
item of a collection (``item``/``index`` in the inputs' CEL), at most ``max_parallel`` at once,
and the answers joined into one list in item order. Its proposal is ``add`` of that value at the
worker's ``output``.

The record binds the children (``SUBBOARDS_META`` in the reply's diagnostics, so in the record's
meta and its hash): for each, its board id, the digest of the blueprint it was created with, and
the seq and hash of its last record. ``runtime.verify`` checks every bound child with the parent,
so editing a child's log fails the parent's check.

Children are keyed by (parent board, invocation, index) (``children.child_id``): a parent that
dies mid fan-out and resumes runs the same invocation again, attaches to the children that exist
(an ended one is read back, not run; one that did not end is resumed) and creates the rest.

Failures are the parent's rejections, never crashes: a fan-out over more than ``max_items``
items, an input that cannot be evaluated, a child that ended without an answer or failed, or a
child runner that raised all give a reply with ``model_error`` (the kernel rejects it at stage
``model``) naming the worker, the item and the child.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..blueprint.compile import CompiledBlueprint
from ..blueprint.models import SubBoardSpec
from ..errors import InvalidInput
from ..kernel.canonical import JSON, hash_json
from ..kernel.cel import CelExpr, compile_cel
from ..kernel.pointer import MISSING, resolve
from ..kernel.record import Usage
from ..stores.base import Store
from ..views import View, readable_state
from ..workers.base import Feedback, WorkerReply
from .children import PARENT_META, ChildRun, ChildRunner, child_id, child_meta
from .ledger import SPEND_META, SpendGuard
from .result import RunResult
from .step import current_invocation

__all__ = ["SUBBOARDS_META", "SubBoardWorker", "binding"]

SUBBOARDS_META = "subboards"
"""Record meta key of a sub-board worker's proposal: one binding per child, in item order:
``{"board", "digest", "seq", "head", "end_reason"}``."""

SOLVED = "solved"


class _Refused(InvalidInput):
    """This invocation cannot run its children (the message says why)."""


def _json(value: Any) -> JSON:
    """A CEL result as plain JSON (celpy values are subclasses of the Python ones)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    raise _Refused(f"a value of type {type(value).__name__} is not JSON")


async def binding(store: Store, board_id: str, result: RunResult) -> dict[str, JSON]:
    """What the parent's record binds of a child that ran: its id, the digest of its stored
    blueprint, the seq and hash of its last record, and how it ended."""
    loaded = await store.load_board(board_id)
    info = await store.board_info(board_id)
    head = ""
    if info.seq:
        (last,) = await store.read_records(board_id, info.seq, limit=1)
        head = last.hash
    return {
        "board": board_id,
        "digest": hash_json(loaded.blueprint),
        "seq": info.seq,
        "head": head,
        "end_reason": result.end_reason,
    }


class SubBoardWorker:
    """The worker of a blueprint worker with ``board`` (see the module docstring).

    ``store`` is the parent's store and ``state`` gives the parent's committed state (read at the
    start of ``propose``, at the view's version, cut to what the worker may read); ``children``
    runs each child (None: every proposal is a rejection saying this runtime runs no sub-boards);
    ``store_url`` is passed on to children for a runner in another process. ``spend`` is set by a
    run with a spend cap: its ledgers pass to the children. ``step_timeout`` is None: the step
    engine's worker timeout does not cut a child board short (its own limits bound it).
    """

    step_timeout: float | None = None

    def __init__(
        self,
        blueprint: CompiledBlueprint,
        name: str,
        *,
        store: Store,
        state: Callable[[], JSON],
        children: ChildRunner | None,
        board_meta: Callable[[], Mapping[str, JSON]] = dict,
        store_url: str | None = None,
    ) -> None:
        spec = blueprint.spec.workers[name]
        assert spec.board is not None and spec.output is not None, f"{name} is not a sub-board worker"
        self._name = name
        self.blueprint = blueprint
        self.board: SubBoardSpec = spec.board
        self.output = spec.output
        self.store = store
        self.state = state
        self.children = children
        self.board_meta = board_meta
        self.store_url = store_url
        self.spend: SpendGuard | None = None
        budget = blueprint.spec.limits.cel_budget
        self._cel: dict[str, CelExpr] = {
            text: compile_cel(text, budget=budget) if budget else compile_cel(text)
            for text in [*self.board.inputs.values(), *([self.board.each] if self.board.each else [])]
            if not text.startswith("/")
        }

    @property
    def name(self) -> str:
        """The blueprint worker this proposes for."""
        return self._name

    # -- what the children start from -----------------------------------------------------------
    def _value(self, source: str, context: dict[str, Any], what: str) -> JSON:
        if source.startswith("/"):
            found = resolve(context["state"], source)
            if found is MISSING:
                raise _Refused(f"{what}: nothing at {source} in the state")
            return _json(found)
        result = self._cel[source].evaluate(context)
        if result.error is not None:
            raise _Refused(f"{what}: CEL {source!r} failed: {result.error}")
        return _json(result.value)

    def _inputs(self, state: JSON) -> list[dict[str, JSON]]:
        """The inputs of each child (one child without ``each``)."""
        board = self.board
        if board.each is None:
            context: dict[str, Any] = {"state": state}
            return [{k: self._value(src, context, f"input {k!r}") for k, src in board.inputs.items()}]
        items = self._value(board.each, {"state": state}, "each")
        if not isinstance(items, list):
            raise _Refused(f"each {board.each!r} gave {type(items).__name__}, not a list")
        if len(items) > board.max_items:
            raise _Refused(
                f"fan-out over {len(items):,} items refused: over max_items={board.max_items:,} of worker {self.name!r}"
            )
        out = []
        for i, item in enumerate(items):
            context = {"state": state, "item": item, "index": i}
            out.append({k: self._value(src, context, f"item {i}: input {k!r}") for k, src in board.inputs.items()})
        return out

    def runs_for(self, parent: str, invocation: str) -> list[ChildRun]:
        """The children of ``invocation`` on board ``parent`` as the parent's state stands now, in
        item order (what ``propose`` would run). An engine that runs each child as a workflow of
        its own asks this first, runs them, then calls ``propose`` with a ``ChildRunner`` that
        reads the ended children back. InvalidInput when the inputs cannot be computed (or the
        fan-out is over ``max_items``): ``propose`` then says why, as a rejection."""
        inputs = self._inputs(readable_state(self.blueprint, self.name, self.state()))
        return [self._run(parent, invocation, i, values) for i, values in enumerate(inputs)]

    # -- proposing ------------------------------------------------------------------------------
    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """Run the invocation's children (create or attach, see the module docstring) and propose
        their answer; a failure is a reply the kernel rejects at stage ``model``, with the reason."""
        started = time.perf_counter()
        where = current_invocation()
        if where is None:
            return self._failed("a sub-board worker proposes only inside a board's step", [], started)
        if self.children is None:
            return self._failed("this runtime runs no sub-boards (no ChildRunner)", [], started)
        parent, invocation = where
        try:
            inputs = self._inputs(readable_state(self.blueprint, self.name, self.state()))
        except _Refused as exc:
            return self._failed(f"worker {self.name!r}: {exc}", [], started)
        runs = [self._run(parent, invocation, i, values) for i, values in enumerate(inputs)]
        results: list[RunResult | BaseException | None] = [None] * len(runs)
        gate = asyncio.Semaphore(self.board.max_parallel)

        async def one(i: int) -> None:
            async with gate:
                try:
                    results[i] = await self.children.run_child(self.store, runs[i])  # type: ignore[union-attr]
                except Exception as exc:  # a failed child is the parent's rejection, not its crash
                    results[i] = exc

        async with asyncio.TaskGroup() as group:
            for i in range(len(runs)):
                group.create_task(one(i))
        bindings: list[JSON] = []
        problems: list[str] = []
        answers: list[JSON] = []
        for run, res in zip(runs, results, strict=True):
            if not isinstance(res, RunResult):
                problems.append(f"item {run.index}: child {run.child_id} raised {type(res).__name__}: {res}")
                continue
            bindings.append(await binding(self.store, run.child_id, res))
            if res.answer is None or res.end_status != SOLVED:
                problems.append(f"item {run.index}: child {run.child_id} ended {res.end_reason} ({res.end_status})")
            answers.append(res.answer)
        if problems:
            shown = "; ".join(problems[:5]) + (f"; and {len(problems) - 5} more" if len(problems) > 5 else "")
            return self._failed(
                f"worker {self.name!r}: {len(problems)} of {len(runs)} children failed: {shown}", bindings, started
            )
        value: JSON = answers if self.board.each is not None else answers[0]
        return WorkerReply(
            [{"op": "add", "path": self.output, "value": value}],
            Usage(latency_ms=round((time.perf_counter() - started) * 1000, 3), component="worker"),
            diagnostics={SUBBOARDS_META: bindings},
        )

    def _run(self, parent: str, invocation: str, index: int, inputs: dict[str, JSON]) -> ChildRun:
        link: dict[str, JSON] = {"board": parent, "invocation": invocation, "index": index, "worker": self.name}
        board_json = self.board.blueprint
        assert isinstance(board_json, dict)  # accepted blueprints hold their children inline
        return ChildRun(
            child_id=child_id(parent, invocation, index),
            parent_id=parent,
            invocation=invocation,
            index=index,
            worker=self.name,
            blueprint=board_json,
            inputs=inputs,
            meta=child_meta(self.board_meta(), link, SPEND_META),
            store_url=self.store_url,
            ledgers=tuple(self.spend.ledgers) if self.spend is not None else (),
        )

    def _failed(self, why: str, bindings: list[JSON], started: float) -> WorkerReply:
        return WorkerReply(
            "",
            Usage(latency_ms=round((time.perf_counter() - started) * 1000, 3), component="worker"),
            diagnostics={"error": why, "model_error": why, SUBBOARDS_META: bindings},
        )


def parent_of(meta: Mapping[str, JSON]) -> JSON:
    """The parent link a child board's meta holds (None for a board that is no child)."""
    return meta.get(PARENT_META)
