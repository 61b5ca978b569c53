"""Blueprints and guard functions the guard-stage tests share (importable as ``guards_testkit``:
a guard's ``function`` reference names them)."""

from __future__ import annotations

import threading
from typing import Any

STRICT = {"on": True}
"""Flip ``STRICT["on"]`` to make ``no_bad`` change its mind (a function whose code changed)."""
RELEASE = threading.Event()
"""Set to let ``hang`` return (a hanging guard's thread is left behind at its timeout)."""


def no_bad(before: Any, after: Any, patch: Any) -> tuple[bool, str]:
    """Refuses a note containing 'bad' (the patch's ops are read, not the state)."""
    for op in patch:
        if "bad" in str(op.get("value", "")) and STRICT["on"]:
            return False, f"note {op.get('value')!r} contains 'bad'"
    return True, "clean"


def grows(before: Any, after: Any, patch: Any) -> bool:
    """The patch must add a note (compares the states before and after)."""
    return len(after["notes"]) > len(before["notes"])


async def async_ok(before: Any, after: Any, patch: Any, worker: str) -> dict[str, Any]:
    """An async guard taking the worker's name too."""
    return {"ok": worker == "w", "reason": f"from {worker}"}


def boom(before: Any, after: Any, patch: Any) -> bool:
    """A guard that raises."""
    raise RuntimeError("the checker is broken")


def hang(before: Any, after: Any, patch: Any) -> bool:
    """A guard that does not return until ``RELEASE`` is set."""
    RELEASE.wait(30)
    return True


def no_verdict(before: Any, after: Any, patch: Any) -> str:
    """A guard that returns something that is no verdict."""
    return "maybe"


def board(guards: list[dict[str, Any]], *, max_steps: int = 4, **extra: Any) -> dict[str, Any]:
    """One worker ``w`` appending notes to ``/notes`` (woken at start and after each note), a
    reader-less ``/secret``, and the given ``guards``."""
    return {
        "name": "guarded",
        "schema": {
            "type": "object",
            "properties": {
                "notes": {"type": "array", "items": {"type": "string"}},
                "secret": {"type": "string"},
            },
        },
        "initial_state": {"notes": [], "secret": "s3cret"},
        "workers": {"w": {"reads": ["/notes"], "writes": ["/notes/-"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w"}, {"on": {"op": "add", "path": "/notes/-"}, "invoke": "w"}],
        "guards": guards,
        "limits": {"max_steps": max_steps},
        **extra,
    }


def notes(*texts: str) -> Any:
    """A function worker proposing ``texts`` in turn (then declining), recording its feedback."""
    seen: list[Any] = []
    queue = list(texts)

    def worker(view: Any, event: Any = None, feedback: Any = None) -> Any:
        seen.append(feedback)
        if not queue:
            return {"decline": "nothing more"}
        return [{"op": "add", "path": "/notes/-", "value": queue.pop(0)}]

    worker.feedback = seen  # type: ignore[attr-defined]
    return worker
