"""The text_actor template's executor: the plan's first step issued as the next command, with no
model call.

The planner has just written the plan from the observation and the admissible commands the
actor would read; when the plan's first step is one of those commands, asking the actor to pick
it again is a model call whose answer is already on the board. ``first_step`` proposes it like
any worker (the kernel checks it against the schema and the "admissible command" and turn-taking
invariants, and logs it); otherwise it declines and the actor acts as before. Its rule in the
template fires on a plan change only while no command awaits its observation, and is checked
again when the executor comes up (``recheck``).
"""

from __future__ import annotations

from ..kernel.canonical import JSON
from ..views import View

__all__ = ["first_step"]


def first_step(view: View) -> list[dict[str, JSON]] | dict[str, JSON]:
    """The patch that appends the plan's first step to ``/actions`` when it is one of the
    non-empty ``/admissible`` commands; else ``{"decline": why}`` (nothing changes, the actor
    queued by the same observation acts). Reads only ``/plan`` and ``/admissible``."""
    plan = view.data.get("/plan")
    admissible = view.data.get("/admissible")
    if not isinstance(plan, list) or not plan or not isinstance(plan[0], str):
        return {"decline": "no plan"}
    if not isinstance(admissible, list) or plan[0] not in admissible:
        return {"decline": f"the plan's first step {plan[0]!r} is not an admissible command"}
    return [{"op": "add", "path": "/actions/-", "value": {"command": plan[0]}}]
