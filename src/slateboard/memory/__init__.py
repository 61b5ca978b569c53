"""Long-term memory beside the board store: working memory is the board, episodic memory its
log (``episodes`` queries it across boards), semantic memory the distilled facts
(``open_memory``; BM25 through SQLite FTS5 or PostgreSQL full-text search).

When a board ends, ``distill_board`` writes its facts with provenance (board, record seq,
worker); a later board reads them through a ``RecallWorker``, whose retrieved section is a
logged proposal, so the later board replays without the memory store. A ``FactStore`` is where
the facts live (``open_memory`` returns one; not to be confused with the board store
``slateboard.stores.MemoryStore``); ``FactStore.prune`` applies retention rules.
``EmbeddingMemory`` adds dense retrieval (fused with BM25) where an embedding model is installed.

``MemoryStore``, the name ``FactStore`` had before, still imports from here for one release,
with a ``DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from ._distill import Distiller, Episode, RecallWorker, distill_board, episodes
from ._embed import Embed, EmbeddingMemory
from ._model import Fact, NewFact
from ._store import FactStore, open_memory

__all__ = [
    "Distiller",
    "Embed",
    "EmbeddingMemory",
    "Episode",
    "Fact",
    "FactStore",
    "NewFact",
    "RecallWorker",
    "distill_board",
    "episodes",
    "open_memory",
]

if TYPE_CHECKING:
    # The protocol's old name, kept one release: type checkers accept code that still uses it.
    MemoryStore = FactStore
else:

    def __getattr__(name: str) -> object:
        """``MemoryStore``, the old name of ``FactStore``, with a DeprecationWarning: it was the
        same name as the board store ``slateboard.stores.MemoryStore`` for another thing."""
        if name == "MemoryStore":
            warnings.warn(
                "slateboard.memory.MemoryStore is deprecated and will be removed in the next release:"
                " use slateboard.memory.FactStore (slateboard.stores.MemoryStore is the in-memory board store)",
                DeprecationWarning,
                stacklevel=2,
            )
            return FactStore
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
