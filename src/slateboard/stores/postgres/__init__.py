"""PostgreSQL store: psycopg 3 (async) with a connection pool, for boards shared by many runners.

``postgresql://user@host:5432/db?schema=NAME&snapshot_every=N&pool_max=N``: the tables live in
schema ``NAME`` (default ``slateboard``; created on open), so several stores (or test runs) can
share one database without seeing each other's data. Other query parameters go to libpq.

Guarantees, on top of the Store protocol's:
- Group commit: appends go through a commit queue; appends queued while others commit go, up to
  ``BATCH_MAX`` at a time, into one transaction on one connection, each append inside its own
  savepoint (a lost compare-and-set rolls back only itself) and each acknowledged only after its
  batch's commit; several batches commit side by side, so concurrent boards share WAL flushes.
- An append is one database transaction (or a savepoint of a batch): a conditional ``UPDATE boards ... WHERE last_seq = ...
  AND last_hash = ...`` (the CAS: a concurrent writer blocks on the row lock, then finds the
  position moved and gets ``Conflict``), the record insert, the agenda rows it creates or
  completes and the snapshot when due. ``NOTIFY slateboard_<schema>`` is sent (at commit) when
  the append made new pending work (so does ``create_board`` with start invocations), so idle
  runners blocked in ``wait_for_work`` wake up; ``set_status`` sends ``NOTIFY sb_status_<schema>``
  with the board id, and every append (in its transaction) ``+`` and the board id: one listening
  connection per store object reads them and wakes the ``wait_for_board`` calls of that board.
- ``claim`` picks with ``FOR UPDATE SKIP LOCKED``: concurrent claimers never block each other
  and never get the same invocation.
- Connection failures raise ``StoreUnavailable`` and damaged data ``StoreCorrupt``; no psycopg
  exception escapes.
- Lease times are the client's clock (``time.time()``), like the other backends.

The package: ``_connection`` (the pool, transactions, error translation, the commit queue),
``_listen`` (the ``LISTEN`` connections), ``_statements`` and ``_rows`` (the SQL only
PostgreSQL runs, and its row operations), ``_store`` (``PostgresStore``: the protocol's
storage steps).
"""

from __future__ import annotations

from ._connection import BATCH_MAX, OPTIONS
from ._listen import APPEND_NOTE
from ._store import PostgresStore

__all__ = ["APPEND_NOTE", "BATCH_MAX", "OPTIONS", "PostgresStore"]
