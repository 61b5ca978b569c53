"""Parallel rounds of ``Team.blackboard(..., parallel=True)`` (issue 18): what a round pushes,
logs and proposes, kept apart from the sequential rules (which the loomflow differential suite
checks and which this module does not touch).

A parallel round has no coordinator: every agent takes a turn, all from the same board (the
board as it was when the round began). The round's decision is one ``control`` record naming
every agent (``next_agents``); its append pushes one turn per agent onto the board's agenda
(``round-<n>.<k>``, k the agent's place in configuration order). The turns are claimed, their
views built at the round's start version and their models called concurrently; then their
proposals are decided by the kernel one by one in agent order, each in its own append.

Two things differ from a sequential turn, both on purpose and both in the log:

* **Staleness.** Every agent's read contract covers ``/public``, so a peer's entry committed
  earlier in the same round makes a view stale to the kernel. A parallel contribution is by
  definition written without seeing its peers' entries of that round, so its proposal is sent
  with no ``viewed_version`` (the kernel's "not checked for staleness"), and the version the
  view was really built at is kept in the record's ``meta`` (``round_version``), with
  ``parallel: true``. Every other check (contract, schema, signatures, unique ids, references)
  runs as usual. ``/public`` is append-only, so concurrent entries cannot overwrite each other.
* **Entry ids.** An agent's worker numbers its entry from the board it saw (``e<n+1>``); all
  the agents of a round saw the same board, so the run gives each entry the next free id of the
  committed board just before it is decided (``renumber``): ids stay unique and follow the
  commit order, which is agent order.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ..kernel.canonical import JSON
from ..scheduling.invocation import Invocation
from ..vocabulary import CONTROL_META, EVENT_META, ONCE_KEY, ROUND_META, TURN_DROPPED
from ..workers.base import WorkerReply
from ._control import COORDINATOR_DECIDED, round_id

__all__ = [
    "PARALLEL_META",
    "PARALLEL_RAW",
    "TURN_DROPPED",
    "parallel_control_meta",
    "parallel_invocation",
    "parallel_turn_id",
    "renumber",
]

PARALLEL_META = "parallel"
"""Key set to true in the ``meta`` of a parallel round's proposals and control record."""
PARALLEL_RAW = "parallel round: every agent contributes from the board as the round began"
"""The ``raw`` of a parallel round's control record (there is no coordinator answer)."""


def parallel_turn_id(round_num: int, index: int) -> str:
    """The invocation id of the turn of the agent at 0-based ``index`` in round ``round_num``."""
    return f"{round_id(round_num)}.{index + 1}"


def parallel_control_meta(names: Sequence[str], round_num: int) -> dict[str, JSON]:
    """The ``meta`` of a parallel round's control record: a decision read like a coordinator's
    (``Progress`` and ``Tally`` count it as the round's decision), naming every agent."""
    return {
        EVENT_META: COORDINATOR_DECIDED,
        ROUND_META: round_num,
        "terminate": False,
        "next_agent": None,
        "next_agents": list(names),
        "instruction": None,
        "parsed": True,
        "raw": PARALLEL_RAW,
        PARALLEL_META: True,
    }


def parallel_invocation(
    agent: str, round_num: int, index: int, order: int, *, feedback: str | None = None
) -> Invocation:
    """The turn of ``agent`` (at ``index`` in agent order) in parallel round ``round_num``: it
    runs once (a rejection is not retried: the next round gives the agent its next turn)."""
    event: dict[str, JSON] = {"kind": "coordinator", "round": round_num, "agent": agent, "instruction": None}
    # No ``parallel`` flag here: the run adds it to the proposals it decides without a staleness
    # check; a resumed run that takes this turn alone (a fresh view, checked) logs none.
    meta: dict[str, JSON] = {ONCE_KEY: True, ROUND_META: round_num, CONTROL_META: PARALLEL_RAW}
    return Invocation(
        parallel_turn_id(round_num, index), agent, 0, order, event, "coordinator", feedback=feedback, meta=meta
    )


def renumber(reply: WorkerReply, entry_id: str) -> WorkerReply:
    """``reply`` with the public entry it appends (and the author's signature of it) given the
    id ``entry_id``; a reply whose patch is not a list of ops appending one entry is returned
    unchanged (the kernel decides it as it is)."""
    ops = reply.patch
    if not isinstance(ops, list):
        return reply
    appended = [op for op in ops if isinstance(op, dict) and op.get("path") == "/public/-"]
    if len(appended) != 1 or not isinstance(appended[0].get("value"), dict):
        return reply
    old = appended[0]["value"].get("id")
    if old == entry_id:
        return reply
    patched = copy.deepcopy(ops)
    for op in patched:
        if not isinstance(op, dict):
            continue
        path = op.get("path")
        if path == "/public/-":
            op["value"]["id"] = entry_id
        elif isinstance(path, str) and path.startswith("/signatures/") and op.get("value") == old:
            op["value"] = entry_id
    diagnostics = dict(reply.diagnostics)
    if "entry" in diagnostics:
        diagnostics["entry"] = entry_id
    return WorkerReply(patched, reply.usage, reply.expand, diagnostics, raw=reply.raw)
