"""The system workers of a blueprint's ``retention`` bounds (against board pollution).

A bound ``{path: /notes, keep_last: N}`` compiles into a system worker (``retention:/notes``,
reads the array, may only remove its items) and a rule that wakes it, with top priority, when an
append leaves the array longer than N. Its proposal removes the oldest items (the first ones) so
that N remain. It is a proposal like any worker's: the kernel checks it against the worker's
contract (and invariants, approval, quarantine), the log holds it with ``meta.retention``, and
replay re-decides it. Nothing is ever pruned silently.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..kernel.canonical import JSON
from ..kernel.pointer import format_pointer, resolve
from ..kernel.record import Usage
from .base import Feedback, WorkerConfigError, WorkerReply

if TYPE_CHECKING:
    from ..blueprint.compile import CompiledRetention
    from ..views import View

__all__ = ["SYSTEM_COMPONENT", "RetentionWorker", "prune"]

SYSTEM_COMPONENT = "system"
"""The usage component of system workers' records (they spend no tokens)."""


class RetentionWorker:
    """Proposes removing the oldest items of the array its bound names, down to ``keep_last``
    (at most ``max_ops`` removals per proposal; a later append wakes it again). Reads the array
    from ``state`` (the live committed state) when given, else from the view. Proposes nothing
    (an empty patch, a no-op) when the array is within its bound."""

    def __init__(
        self, bound: CompiledRetention, *, state: Callable[[], JSON] | None = None, max_ops: int = 256
    ) -> None:
        self.bound = bound
        self.state = state
        self.max_ops = max_ops

    @property
    def name(self) -> str:
        """The system worker's blueprint name."""
        return self.bound.worker

    def _items(self, view: View) -> list[JSON] | None:
        if self.state is not None:
            found = resolve(self.state(), self.bound.tokens)
            return found if isinstance(found, list) else None
        shown = view.data.get(self.bound.path)
        return shown if isinstance(shown, list) else None

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """The removals that bring the array back to its bound."""
        started = time.perf_counter()
        items = self._items(view)
        size = len(items) if items is not None else 0
        extra = min(max(0, size - self.bound.keep_last), self.max_ops)
        first = format_pointer([*self.bound.tokens, "0"])
        patch: list[JSON] = [{"op": "remove", "path": first} for _ in range(extra)]
        diagnostics: dict[str, JSON] = {
            "kind": "retention",
            "retention": {"path": self.bound.path, "keep_last": self.bound.keep_last, "size": size, "removed": extra},
        }
        usage = Usage(latency_ms=round((time.perf_counter() - started) * 1e3, 3), component=SYSTEM_COMPONENT)
        return WorkerReply(patch=patch, usage=usage, diagnostics=diagnostics)


def prune(view: View) -> JSON:
    """The function reference retention workers carry in the blueprint; the worker factory builds
    a ``RetentionWorker`` from the compiled bound instead of calling it."""
    raise WorkerConfigError("retention workers are built from the blueprint's retention bounds, not called directly")
