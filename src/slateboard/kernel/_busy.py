"""``KernelBusy``, in a module of its own: ``kernel.py`` is compiled (slateboard._native) and mypyc
does not compile a class with two built-in exception bases."""

from __future__ import annotations

from ..errors import UsageError


class KernelBusy(UsageError, RuntimeError):
    """``prepare`` was called while another decision awaits commit or abort."""
