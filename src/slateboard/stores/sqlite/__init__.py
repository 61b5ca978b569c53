"""SQLite store: one file, WAL, one dedicated connection thread per store object.

``sqlite:///abs/path.db`` (or ``sqlite://rel/path.db``; ``sqlite://`` alone uses the default file
under the user's data directory). Query options: ``snapshot_every=N`` (records between
snapshots), ``synchronous=full|normal``, ``busy_timeout_ms=N`` and ``writer=thread|loop``.

Guarantees, on top of the Store protocol's:
- Every write is one SQLite transaction started with ``BEGIN IMMEDIATE`` (the write lock is
  taken before the CAS is read, so two writers in different processes serialise and the second
  sees the first's record and gets ``Conflict``).
- Group commit: durable writes (appends, board creation, status changes) go through a commit
  queue drained by the store's one connection thread; every write queued while the previous
  batch was flushing goes into the next transaction, each inside its own savepoint, so one
  failing (a lost compare-and-set, say) rolls back only itself, and each is acknowledged only
  after the batch's commit. One board appending alone pays one transaction and one thread
  hand-off per step (``append(..., claim=...)`` leases its next invocation in it).
- Lease bookkeeping (claims, heartbeats, releases) and background snapshots commit on a second
  connection opened with ``synchronous=NORMAL`` (no per-claim ``PRAGMA`` switching): the WAL
  is append-only, so the next durable commit syncs those frames too, and losing a lease change
  to a power cut only makes an invocation claimable again, as an expired lease would.
- ``writer=loop`` runs every database call on the event loop's own thread instead of the
  connection thread: no thread hand-off (about 0.2 ms of CPU per step on a 2-core VM, see
  benchmarks/peers.py), but the loop waits for each flush and nothing else in it runs
  meanwhile, so concurrent boards no longer share flushes. For one board per process (one
  Runner), not for a service driving many boards or a web server in the same loop. Each write
  is then its own transaction; the guarantees above hold otherwise.
- ``synchronous=full`` (the default) fsyncs the WAL at every commit: a returned append survives
  a power loss. ``synchronous=normal`` survives the death of the process but may lose the last
  commits on a power loss; it is faster on disks with slow syncs (see benchmarks/store.py).
- A file that is not an SQLite database, is truncated, or is damaged raises ``StoreCorrupt``
  naming the file and the problem; a locked file ``StoreUnavailable``; no sqlite3 exception
  escapes.

The package: ``_file`` (the file a URL names, checked before SQLite opens it), ``_connection``
(the connection thread, the commit queue, error translation), ``_statements`` and ``_rows`` (the
SQL only SQLite runs, and its row operations), ``_store`` (``SqliteStore``: the protocol's
storage steps).
"""

from __future__ import annotations

from ._file import check_file, default_path, path_from_url
from ._store import OPTIONS, SqliteStore

__all__ = ["OPTIONS", "SqliteStore", "check_file", "default_path", "path_from_url"]
