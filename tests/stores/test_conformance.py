"""The store conformance suite (``slateboard.testing``) against every backend: memory, sqlite and
postgresql (``open_another`` comes from conftest.py, parametrised over the three)."""

from __future__ import annotations

from slateboard.testing import StoreConformance


class TestStoreConformance(StoreConformance):
    """Every required and optional test of the shipped suite, on each backend."""
