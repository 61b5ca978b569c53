"""The view builder's errors, in a module of their own: mypyc (slateboard._native) does not compile
classes that inherit from built-in exceptions, and ``_build`` is compiled."""

from __future__ import annotations

from ..errors import InvalidInput, UnknownName


class UnknownWorker(UnknownName):
    """A view asked for a worker the blueprint does not have (the message lists its workers)."""


class ViewBudgetError(InvalidInput):
    """A view budget that is not an integer of at least ``MIN_BUDGET`` characters."""
