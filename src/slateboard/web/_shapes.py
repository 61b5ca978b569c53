"""The JSON the dashboard's API answers with, shaped from a store's boards and records.

Pure functions of what they are given (nothing here reads the store): a board's header, a
record (priced, redacted), tokens and cost by worker and component, the pointers a patch
changed; and ``ApiError``, the one error the API turns into an HTTP status.
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from ..errors import UsageError
from ..kernel.canonical import JSON
from ..kernel.record import Record
from ..models.pricing import PriceTable
from ..redaction import redact_json
from ..runtime.result import cost_json
from ..stores.base import BoardInfo
from ..vocabulary import PROPOSAL_KIND

MAX_PAGE = 5000
"""The most records one ``records`` call returns (``next_after`` says where to go on)."""


class ApiError(UsageError):
    """A request the dashboard cannot answer: ``status`` is the HTTP status, ``message`` one line."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def board_json(info: BoardInfo, cost: float | None = None) -> dict[str, JSON]:
    """A board's header as the API shows it (the same fields as ``slateboard boards --json``);
    ``end_status`` (solved, exhausted, failed, paused, interrupted, running) is what the badges
    show; ``cost_usd`` what its log cost at its own prices (null: unknown, or not computed)."""
    from ..status import end_status

    return {
        "board_id": info.board_id,
        "name": info.name,
        "status": info.status,
        "end_status": end_status(info.status, info.reason),
        "reason": info.reason,
        "version": info.version,
        "records": info.seq,
        "created_at": info.created_at,
        "updated_at": info.updated_at,
        "cost_usd": cost_json(cost),
    }


def record_json(rec: Record, prices: PriceTable | None = None) -> dict[str, JSON]:
    """A record as the API shows it: every logged field, plus ``tokens`` (in + out),
    ``cost_usd`` (those tokens priced with ``prices``, the board's table; null: unknown) and
    ``viewed_version`` (the version the worker's view was built at, when the log says)."""
    from ..runtime.result import record_cost, record_tokens

    out = rec.to_json()
    out["tokens"] = record_tokens(rec)
    out["cost_usd"] = cost_json(record_cost(rec, prices if prices is not None else PriceTable()))
    viewed = rec.meta.get("viewed_version")
    out["viewed_version"] = viewed if isinstance(viewed, int) and not isinstance(viewed, bool) else None
    # a log written before a key was known to be one (or by another process) may hold it: the
    # page never shows a URL password or a registered secret (issue 29, R3)
    shown: dict[str, JSON] = redact_json(out)
    return shown


def usage_json(records: Sequence[Record], prices: PriceTable | None = None) -> dict[str, JSON]:
    """Tokens per worker (proposals only) and per component, as ``RunResult`` counts them, each
    with its ``cost_usd`` at ``prices`` (the board's table; null: unknown)."""
    from ..runtime.result import cost_by, usage_by

    table_of = prices if prices is not None else PriceTable()

    def table(key: str, recs: Sequence[Record]) -> dict[str, JSON]:
        costs = cost_by(recs, key, table_of)
        return {
            name: {**u.to_json(), "cost_usd": cost_json(costs.get(name, 0.0))}
            for name, u in sorted(usage_by(recs, key).items())
        }

    return {
        "by_worker": table("worker", [r for r in records if r.kind == PROPOSAL_KIND]),
        "by_component": table("component", records),
    }


def parse_version(raw: str | None) -> int | None:
    """The ``version`` query parameter as an integer (None when absent); ApiError 400 otherwise."""
    if raw is None or raw == "" or raw == "latest":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ApiError(400, f"version must be a whole number or 'latest', got {raw!r}") from None
    if value < 0:
        raise ApiError(400, f"version must be 0 or more, got {value}")
    return value


def changed_pointers(rec: Record, state: JSON) -> list[str]:
    """The pointers an accepted record's patch wrote, with ``-`` resolved to the appended index."""
    from ..kernel.pointer import MISSING, PointerError, format_pointer, parse_pointer, resolve

    try:
        ops = orjson.loads(rec.patch or "[]")
    except orjson.JSONDecodeError:
        return []
    out: list[str] = []
    for op in ops if isinstance(ops, list) else []:
        if not isinstance(op, dict) or op.get("op") in ("test", "remove") or not isinstance(op.get("path"), str):
            continue
        try:
            tokens = list(parse_pointer(op["path"]))
        except PointerError:
            continue
        if tokens and tokens[-1] == "-":
            parent = resolve(state, tuple(tokens[:-1]))
            if parent is MISSING or not isinstance(parent, list) or not parent:
                continue
            tokens[-1] = str(len(parent) - 1)
        out.append(format_pointer(tokens))
    return out
