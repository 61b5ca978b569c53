"""The shop board of the compose tests: orders and payments joined by order id, alerts batched.

Its function workers live here, at module level, so runner subprocesses (with this folder on
their path) import them by reference (``compose_kit:place``)."""

from __future__ import annotations

import copy
from typing import Any

SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "orders": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "payments": {"type": "array", "items": {"type": "object", "properties": {"order": {"type": "string"}}}},
        "shipped": {"type": "array", "items": {"type": "string"}},
        "alerts": {"type": "array", "items": {"type": "string"}},
        "digests": {
            "type": "array",
            "items": {"type": "object", "properties": {"count": {"type": "integer"}, "reason": {"type": "string"}}},
        },
    },
}
INITIAL: dict[str, Any] = {"orders": [], "payments": [], "shipped": [], "alerts": [], "digests": []}

JOIN_RULE: dict[str, Any] = {
    "name": "ship",
    "invoke": "shipper",
    "join": {
        "parts": {
            "order": {"on": {"op": "add", "path": "/orders/-"}, "key": "value.id"},
            "payment": {"on": {"op": "add", "path": "/payments/-"}, "key": "value.order"},
        }
    },
}


def place(view: Any) -> list[dict[str, Any]]:
    """Worker ``order_<k>`` places order ``o<k>``."""
    return [{"op": "add", "path": "/orders/-", "value": {"id": "o" + view.worker.split("_")[1]}}]


def pay(view: Any) -> list[dict[str, Any]]:
    """Worker ``pay_<k>`` pays order ``o<k>``."""
    return [{"op": "add", "path": "/payments/-", "value": {"order": "o" + view.worker.split("_")[1]}}]


def ship(view: Any, event: Any) -> list[dict[str, Any]]:
    """The join's worker: ships the order its trigger names (the joined key)."""
    return [{"op": "add", "path": "/shipped/-", "value": event["key"]}]


def alert(view: Any) -> list[dict[str, Any]]:
    """Worker ``alert_<k>`` raises alert ``a<k>``."""
    return [{"op": "add", "path": "/alerts/-", "value": "a" + view.worker.split("_")[1]}]


def digest(view: Any, event: Any) -> list[dict[str, Any]]:
    """The batch's worker: one digest per batch, with how many alerts it held and why it fired."""
    return [{"op": "add", "path": "/digests/-", "value": {"count": len(event["items"]), "reason": event["reason"]}}]


def shop(
    keys: int,
    *,
    join: dict[str, Any] | None = None,
    alerts: int = 0,
    batch: dict[str, Any] | None = None,
    start: bool = True,
) -> dict[str, Any]:
    """A shop blueprint: ``keys`` order writers and ``keys`` payers (all started at once when
    ``start``), the join of ``JOIN_RULE`` (``join`` replaces its spec), and with ``alerts``, that
    many alert writers and a batch rule ``digest`` (``batch`` is its spec)."""
    workers: dict[str, Any] = {"shipper": _fn("ship", ["/shipped/-"])}
    rules: list[dict[str, Any]] = [{**JOIN_RULE, "join": join or JOIN_RULE["join"]}]
    for k in range(keys):
        workers[f"order_{k}"] = _fn("place", ["/orders/-"])
        workers[f"pay_{k}"] = _fn("pay", ["/payments/-"])
        if start:
            rules += [{"on": {"op": "start"}, "invoke": f"order_{k}"}, {"on": {"op": "start"}, "invoke": f"pay_{k}"}]
    if alerts:
        workers["digester"] = _fn("digest", ["/digests/-"])
        rules.append({"name": "digest", "invoke": "digester", "on": {"op": "add", "path": "/alerts/-"}, "batch": batch})
        for k in range(alerts):
            workers[f"alert_{k}"] = _fn("alert", ["/alerts/-"])
            if start:
                rules.append({"on": {"op": "start"}, "invoke": f"alert_{k}"})
    return {
        "name": "shop",
        "schema": copy.deepcopy(SCHEMA),
        "initial_state": copy.deepcopy(INITIAL),
        "workers": workers,
        "rules": rules,
        "limits": {"max_steps": 1000},
    }


def _fn(name: str, writes: list[str]) -> dict[str, Any]:
    # They read nothing (their event says all they need), so concurrent appends never go stale.
    return {"function": f"compose_kit:{name}", "reads": [], "writes": writes, "ops": ["add"]}


async def step(session: Any, worker: str) -> Any:
    """Claim ``worker``'s pending invocation from the store and run it through ``session.step``
    (no catch-up first: a session behind the store loses the compare-and-set and catches up
    inside the step). Returns the step's record."""
    claim = await session.store.claim(session.board_id, owner=f"test-{worker}", lease_s=30, worker_names=[worker])
    assert claim is not None, f"nothing pending for {worker}"
    outcome = await session.step(claim.invocation, "test")
    return outcome.record


async def gathered(store: Any, board_id: str, rule: str) -> list[Any]:
    """The invocations (any status) a join or batch ``rule`` created on the board, in order."""
    every = await store.agenda(board_id, ("pending", "claimed", "done", "cancelled"))
    return sorted((i for i in every if i.rule == rule), key=lambda i: i.order)
