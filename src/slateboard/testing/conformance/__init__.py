"""The store conformance suite, shipped in the package so any backend can run it.

Every backend passes the same tests; a third-party backend runs them from its own test module::

    import pytest
    from slateboard.testing import StoreConformance

    class TestMyStore(StoreConformance):
        @pytest.fixture
        async def open_another(self, tmp_path):
            # yields a callable opening another handle on ONE fresh, empty store
            ...

(pytest with pytest-asyncio in ``asyncio_mode = "auto"``). The groups:

- required, every ``Store``: boards and logs (``LogStore``: create, append with its
  compare-and-set, atomicity and once-only invocation commits, snapshots), and agenda and
  claims (``AgendaStore``: pushes, claim order, leases, wake-ups), including the claim made
  inside an append, and concurrent appends of many boards (group commit: one failing
  compare-and-set fails alone);
- optional, one per capability (``WatchesWork``, ``WatchesBoards``, ``ScansStalledBoards``,
  ``ReportsCommits``, ``ReportsLeases``): a test of a capability the backend does not declare is skipped, with the
  reason printed. ``ServesManyRunners`` (claims that never wait for each other) is a promise
  about contention with no test here: the required claim tests already hold every backend to
  "two claimers never get the same invocation".

``open_another`` must return the same object every time for a store without connections (like
``memory://``), and a new handle on the same database otherwise.

``StoreConformance`` is composed of one class per theme, each in its module: ``_boards``,
``_log``, ``_snapshots``, ``_agenda``, ``_appends`` (claims inside appends, group commit) and
``_capabilities`` (the optional ones); ``_support`` holds what they share.
"""

from __future__ import annotations

import pytest

from ...stores import Store
from ..kit import OpenStore
from ._agenda import AgendaTests
from ._appends import AppendTests
from ._boards import BoardTests
from ._capabilities import CapabilityTests
from ._log import LogTests
from ._snapshots import SnapshotTests
from ._support import require


class StoreConformance(BoardTests, LogTests, SnapshotTests, AgendaTests, AppendTests, CapabilityTests):
    """The conformance tests; a subclass provides the ``open_another`` fixture (see the module
    docstring). ``store`` is the first handle it opens."""

    @pytest.fixture
    async def store(self, open_another: OpenStore) -> Store:
        """The store under test (first handle of ``open_another``)."""
        return await open_another()


__all__ = ["StoreConformance", "require"]
