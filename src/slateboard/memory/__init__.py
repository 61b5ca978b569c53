"""Long-term memory beside the board store: working memory is the board, episodic memory its
log (``episodes`` queries it across boards), semantic memory the distilled facts
(``open_memory``; BM25 through SQLite FTS5 or PostgreSQL full-text search).

When a board ends, ``distill_board`` writes its facts with provenance (board, record seq,
worker); a later board reads them through a ``RecallWorker``, whose retrieved section is a
logged proposal, so the later board replays without the memory store. ``MemoryStore.prune``
applies retention rules. ``EmbeddingMemory`` adds dense retrieval (fused with BM25) where an
embedding model is installed.
"""

from ._distill import Distiller, Episode, RecallWorker, distill_board, episodes, facts_from_records
from ._embed import Embed, EmbeddingMemory
from ._model import Fact, NewFact, query_terms
from ._store import InProcessMemory, MemoryStore, SqliteMemory, open_memory

__all__ = [
    "Distiller",
    "Embed",
    "EmbeddingMemory",
    "Episode",
    "Fact",
    "InProcessMemory",
    "MemoryStore",
    "NewFact",
    "RecallWorker",
    "SqliteMemory",
    "distill_board",
    "episodes",
    "facts_from_records",
    "open_memory",
    "query_terms",
]
