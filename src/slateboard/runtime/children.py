"""The seam between a sub-board worker and whatever runs its child boards: ``ChildRunner``.

A sub-board worker (``runtime.subboards``) decides *which* children an invocation has and what
they start from; a ``ChildRunner`` runs one child board to its end and returns its ``RunResult``.
The default is the parent's own ``Runner`` (``Runner.run_child``): in this process, on the
parent's store, with the parent's worker source (model override, functions, tools) and spend
ledgers. Another engine plugs in by implementing ``run_child`` and being passed as
``Runner(children=...)``. The Temporal engine (``slateboard.temporal``) splits the step
instead: it asks the worker for its children (``SubBoardWorker.runs_for``), creates them and
runs each as a child workflow, then lets the worker propose with a runner that only reads the
ended children back.

What an implementation must guarantee, so that a parent resumed after a crash never runs a child
twice and loses no answer:

- **Idempotent by id.** ``child.child_id`` is deterministic (``child_id``: parent board,
  invocation, item index). Create the board only when the store has none with that id
  (``ensure_child`` does it, tolerating a concurrent creator), else attach to it: a board that
  has ended is not run again (its result is read back: ``Runner.run`` on an ended board
  returns it without appending), one that has not is resumed.
- **Same store.** The child's log lives in the parent's store (``child.store_url`` names it for
  a runner in another process), so ``verify_board`` of the parent can check it.
- **Plain data.** Everything but ``ledgers`` is JSON: a remote runner gets the blueprint, the
  inputs and the board meta (``meta`` holds the parent link and ``ledger.SPEND_META``, so the
  recorded spend limits hold wherever the child runs). ``ledgers`` are the live shared ledger
  objects of an in-process run; a remote runner uses the recorded names instead.
- **Cancellation passes through.** When the parent's step is cancelled, ``run_child`` is
  cancelled; the child board stays as it is and the next attach resumes it.
- Raising is a failed child: the worker turns it into a rejection naming the child, never a
  crash of the parent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..kernel.canonical import JSON, sha256_hex
from ..stores.base import BoardExists, BoardInfo, BoardNotFound, Store
from .ledger import Ledger
from .result import RunResult

__all__ = [
    "CHILD_PREFIX",
    "PARENT_META",
    "ChildRun",
    "ChildRunner",
    "child_id",
    "ensure_child",
    "subboard_children",
    "subboard_link",
]

CHILD_PREFIX = "sub-"
"""How every child board's id starts."""

PARENT_META = "subboard_of"
"""The child board's meta key naming its parent: ``{"board", "invocation", "index", "worker"}``."""


def child_id(parent: str, invocation: str, index: int) -> str:
    """The id of child ``index`` of ``invocation`` on board ``parent``: the same for the same three,
    so a resumed parent finds the children it started before it died."""
    return CHILD_PREFIX + sha256_hex(f"{parent}\x00{invocation}\x00{index}".encode())[:32]


@dataclass(frozen=True)
class ChildRun:
    """One child board to run (see the module docstring): its deterministic id, where it comes
    from (parent board, invocation, item index, worker), the child blueprint (JSON, as the
    parent's blueprint holds it), the ``inputs`` merged into its initial state, the board
    ``meta`` to create it with, the parent's store URL when known, and (in process only) the
    shared spend ledgers its model calls reserve against."""

    child_id: str
    parent_id: str
    invocation: str
    index: int
    worker: str
    blueprint: dict[str, Any]
    inputs: dict[str, JSON]
    meta: dict[str, JSON]
    store_url: str | None = None
    ledgers: Sequence[tuple[Ledger, str]] = field(default=(), compare=False)


@runtime_checkable
class ChildRunner(Protocol):
    """Runs one child board to its end (see the module docstring for what it must guarantee)."""

    async def run_child(self, store: Store, child: ChildRun) -> RunResult:
        """Create or attach to ``child.child_id`` in ``store`` and run it until it ends; its result."""
        ...


async def ensure_child(store: Store, child: ChildRun, create: Any) -> bool:
    """Create the child board unless ``store`` has it already; True when this call created it.
    ``create`` is ``runtime.runner.create_board`` (passed in: this module sits below the runner).
    A concurrent creator of the same id is not an error: the board is there either way."""
    try:
        await store.board_info(child.child_id)
        return False
    except BoardNotFound:
        pass
    try:
        await create(store, child.blueprint, inputs=child.inputs or None, board_id=child.child_id, meta=child.meta)
    except BoardExists:
        return False
    return True


def child_meta(parent_meta: Mapping[str, JSON], link: dict[str, JSON], spend_key: str) -> dict[str, JSON]:
    """The board meta of a child: the parent link, and the spend limits the parent recorded."""
    meta: dict[str, JSON] = {PARENT_META: link}
    if spend_key in parent_meta:
        meta[spend_key] = parent_meta[spend_key]
    return meta


def subboard_link(meta: Mapping[str, Any]) -> dict[str, JSON] | None:
    """The parent link (``PARENT_META``) of a child board's meta as ``{"board", "invocation",
    "index", "worker"}``; None for a board that is no sub-board (or whose link is not the shape
    a sub-board worker writes: a link without a parent board id names nothing)."""
    link = meta.get(PARENT_META)
    if not isinstance(link, Mapping) or not isinstance(link.get("board"), str):
        return None
    index = link.get("index")
    invocation = link.get("invocation")
    worker = link.get("worker")
    return {
        "board": str(link["board"]),
        "invocation": str(invocation) if isinstance(invocation, str) else None,
        "index": index if isinstance(index, int) and not isinstance(index, bool) else None,
        "worker": str(worker) if isinstance(worker, str) else None,
    }


def subboard_children(boards: Sequence[BoardInfo], board_id: str) -> list[tuple[BoardInfo, dict[str, JSON]]]:
    """The sub-boards among ``boards`` whose parent is ``board_id``, each with its link: grouped
    by invocation (the invocation whose first child was created first comes first), in item
    order within one. Only ``boards`` is searched, so a caller that lists them through a
    tenant's store sees that tenant's children only."""
    found = [(b, link) for b in boards if (link := subboard_link(b.meta)) is not None and link["board"] == board_id]
    first: dict[JSON, float] = {}
    for b, link in found:
        first[link["invocation"]] = min(first.get(link["invocation"], b.created_at), b.created_at)

    def key(pair: tuple[BoardInfo, dict[str, JSON]]) -> tuple[float, str, int, str]:
        b, link = pair
        index = link["index"]
        return first[link["invocation"]], str(link["invocation"]), index if isinstance(index, int) else -1, b.board_id

    return sorted(found, key=key)
