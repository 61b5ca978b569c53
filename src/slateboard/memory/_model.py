"""The values of semantic memory: facts to remember, stored facts, and query terms."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..kernel.canonical import JSON

__all__ = [
    "COLUMNS",
    "Fact",
    "NewFact",
    "fact_from_row",
    "prune_where",
    "query_terms",
    "query_terms_all",
    "tenant_where",
]

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_QUERY_TERMS = 32


@dataclass(frozen=True, slots=True)
class NewFact:
    """A fact to remember: its text and where it came from (board, record seq, worker)."""

    text: str
    board: str
    seq: int | None = None
    worker: str | None = None
    meta: dict[str, JSON] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Fact:
    """A stored fact: ``id`` is stable; ``score`` is the retrieval rank score (higher is better)."""

    id: int
    text: str
    board: str
    seq: int | None
    worker: str | None
    created: float
    last_used: float | None
    meta: dict[str, JSON]
    score: float = 0.0

    def to_json(self) -> dict[str, JSON]:
        """The fact with its provenance, as a board sees it in a retrieved section."""
        return {"fact": self.id, "text": self.text, "board": self.board, "seq": self.seq, "worker": self.worker}


def query_terms(text: str) -> list[str]:
    """The distinct words of ``text`` (lower-case, at most 32), in order: what a search matches."""
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if len(w) > 1:
            seen.setdefault(w, None)
    return list(seen)[:_MAX_QUERY_TERMS]


def fact_from_row(row: Sequence[Any], score: float = 0.0) -> Fact:
    """A Fact from a ``SELECT COLUMNS`` row (plus its score)."""
    meta = orjson.loads(row[7]) if row[7] else {}
    return Fact(int(row[0]), str(row[1]), str(row[2]), row[3], row[4], float(row[5]), row[6], meta, score)


COLUMNS = "id, text, board, seq, worker, created, last_used, meta"


def tenant_where(mark: str, tenant: str | None, column: str = "tenant") -> tuple[str, list[Any]]:
    """The SQL condition keeping a query to ``tenant``'s facts (None: every fact), and its
    arguments: every statement of a scoped memory carries it (issue 44)."""
    return (f"{column} = {mark}", [tenant]) if tenant is not None else ("1 = 1", [])


def prune_where(
    mark: str,
    *,
    at: float,
    older_than_s: float | None,
    unused_for_s: float | None,
    keep_last: int | None,
    tenant: str | None = None,
) -> tuple[str, list[Any]] | None:
    """The SQL condition (and its arguments) selecting the facts ``FactStore.prune`` deletes
    at time ``at``, written with ``mark`` as the driver's placeholder (``?`` for SQLite, ``%s``
    for PostgreSQL); None when no rule is given (nothing is deleted). With ``tenant`` only its
    facts are deleted, and ``keep_last`` counts its facts only."""
    scope, scope_args = tenant_where(mark, tenant)
    clauses: list[str] = []
    args: list[Any] = []
    if older_than_s is not None:
        clauses.append(f"created < {mark}")
        args.append(at - older_than_s)
    if unused_for_s is not None:
        clauses.append(f"COALESCE(last_used, created) < {mark}")
        args.append(at - unused_for_s)
    if keep_last is not None:
        clauses.append(f"id NOT IN (SELECT id FROM memory_facts WHERE {scope} ORDER BY id DESC LIMIT {mark})")
        args.extend([*scope_args, max(0, keep_last)])
    if not clauses:
        return None
    return f"({scope}) AND ({' OR '.join(clauses)})", [*scope_args, *args]


def query_terms_all(text: str) -> list[str]:
    """Every word of ``text`` (lower-case, with repeats): a document's terms for ranking."""
    return [w for w in _WORD.findall(text.lower()) if len(w) > 1]
