"""Embeddings as an option: dense retrieval fused with BM25, where an embedding model is installed.

``EmbeddingMemory(inner, embed)`` wraps any ``FactStore``. ``embed(texts) -> vectors`` is the
caller's embedding model (e.g. a sentence-transformers or llama.cpp embedding model loaded
locally; slateboard ships none). Each fact's vector is kept in its ``meta["embedding"]`` (so it
lives in the same table, and never enters a board: a retrieved section carries text and
provenance only). A search ranks by reciprocal-rank fusion (k=60) of the inner store's BM25
ranking and the cosine similarity of every fact's vector to the query's; it scans the facts'
vectors, which suits memories of up to some ten thousand facts.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

from ._model import Fact, NewFact
from ._store import FactStore

__all__ = ["Embed", "EmbeddingMemory"]

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""``embed(texts) -> one vector per text`` (equal lengths)."""

_RRF_K = 60


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


class EmbeddingMemory:
    """A ``FactStore`` whose search fuses BM25 with embedding similarity (see the module)."""

    def __init__(self, inner: FactStore, embed: Embed, *, candidates: int = 50) -> None:
        self.inner = inner
        self.embed = embed
        self.candidates = candidates
        self.url = inner.url

    async def add(self, facts: Sequence[NewFact], *, now: float | None = None) -> list[int]:
        """Store ``facts`` with their vectors in ``meta["embedding"]``."""
        vectors = self.embed([f.text for f in facts]) if facts else []
        with_vectors = [
            replace(f, meta={**f.meta, "embedding": [float(x) for x in v]}) for f, v in zip(facts, vectors, strict=True)
        ]
        return await self.inner.add(with_vectors, now=now)

    async def search(self, query: str, *, k: int = 5, now: float | None = None) -> list[Fact]:
        """The ``k`` best facts by fused rank; score is the fused score."""
        if not query.strip() or k <= 0:
            return []
        at = time.time() if now is None else now
        lexical = await self.inner.search(query, k=self.candidates, now=at)
        (qvec,) = self.embed([query])
        every = await self.inner.facts()
        dense = sorted(
            (f for f in every if isinstance(f.meta.get("embedding"), list)),
            key=lambda f: (-_cosine(qvec, f.meta["embedding"]), f.id),
        )[: self.candidates]
        fused: dict[int, float] = {}
        by_id: dict[int, Fact] = {}
        for ranking in (lexical, dense):
            for rank, fact in enumerate(ranking):
                fused[fact.id] = fused.get(fact.id, 0.0) + 1.0 / (_RRF_K + rank + 1)
                by_id.setdefault(fact.id, fact)
        best = sorted(fused, key=lambda i: (-fused[i], i))[:k]
        await self.inner.touch(best, now=at)
        return [replace(by_id[i], score=fused[i], last_used=at) for i in best]

    async def facts(self, *, board: str | None = None) -> list[Fact]:
        """Every fact (of ``board``), oldest first."""
        return await self.inner.facts(board=board)

    async def touch(self, ids: Sequence[int], *, now: float | None = None) -> None:
        """Mark facts ``ids`` as retrieved at ``now``."""
        await self.inner.touch(ids, now=now)

    async def prune(
        self,
        *,
        older_than_s: float | None = None,
        unused_for_s: float | None = None,
        keep_last: int | None = None,
        now: float | None = None,
    ) -> int:
        """The inner store's retention rules."""
        return await self.inner.prune(
            older_than_s=older_than_s, unused_for_s=unused_for_s, keep_last=keep_last, now=now
        )

    async def close(self) -> None:
        """Close the inner store."""
        await self.inner.close()
