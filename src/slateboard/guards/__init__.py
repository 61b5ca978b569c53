"""Guard stages: named checks a blueprint adds after the kernel's ``invariants`` stage.

A guard is a Python function (``function: "pkg.mod:fn"``, called with the state before the
patch, the state after it and the patch) or a model judge (``model``, ``instruction`` and a
typed ``verdict`` such as ``{ok: bool, reason: str}``). The step engine runs them on a proposal
the kernel would otherwise accept and the kernel decides with their verdicts, which the record
logs (with a judge's usage): a refusal is a rejection at stage ``guard:<name>`` fed back to the
worker like any other, and replay decides again from the logged verdicts without calling any
function or model (``slateboard.kernel.guardstage``). ``rerun_function_guards`` is
``replay --revalidate``'s audit of the functions. See docs/guards.md.
"""

from __future__ import annotations

from ._rerun import rerun_function_guards
from ._run import GuardSet, GuardVerdict, build_guards

__all__ = ["GuardSet", "GuardVerdict", "build_guards", "rerun_function_guards"]
