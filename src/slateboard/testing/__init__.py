"""Testing helpers shipped with slateboard: the store conformance suite.

``StoreConformance`` (``slateboard.testing.conformance``) holds the tests every store backend
must pass (required groups) and the tests of each optional capability it may declare; a
backend's test module subclasses it and provides an ``open_another`` fixture. ``kit`` holds the
small blueprint and the kernel-driven ``Board`` the tests write with. Needs pytest and
pytest-asyncio (``asyncio_mode = "auto"``).
"""

from __future__ import annotations

from .conformance import StoreConformance, require
from .kit import Board, OpenStore, entry

__all__ = [
    "Board",
    "OpenStore",
    "StoreConformance",
    "entry",
    "require",
]
