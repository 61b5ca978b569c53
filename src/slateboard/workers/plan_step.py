"""The text_actor template's plan steps, with no model call: the executor issues the plan's first
step as the next command, and ``advance`` takes the steps a command used off the plan.

The planner has just written the plan from the observation and the admissible commands the
actor would read; when the plan's first step is one of those commands, asking the actor to pick
it again is a model call whose answer is already on the board. ``first_step`` proposes it like
any worker (the kernel checks it against the schema and the "admissible command" and turn-taking
invariants, and logs it); otherwise it declines and the actor acts as before. Its rule in the
template fires on a plan change only while no command awaits its observation, and is checked
again when the executor comes up (``recheck``).

``advance`` keeps ``/plan`` to the steps still to take, so the actor reads what is left instead
of locating itself in the whole plan (a plan that repeats a step, "go east" twice, did not say
which one an observation answers), and the planner is asked again once the plan is used up.
"""

from __future__ import annotations

from ..kernel.canonical import JSON
from ..views import View

__all__ = ["advance", "first_step"]


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


def advance(view: View) -> list[dict[str, JSON]] | dict[str, JSON]:
    """The patch that takes the steps the newest command used off the plan, so that ``/plan``
    holds only the steps still to take: through the first step equal to the command when the
    plan has one (a step the command skipped is taken off too), else the first step alone (the
    plan counts down one step per command, so it is used up after as many commands as it has
    steps). The last step removes ``/plan`` itself (a plan is never empty). ``{"decline": why}``
    when there is no plan or no command. Reads ``/plan`` and the newest item of ``/actions``
    (a window of one)."""
    plan = view.data.get("/plan")
    if not isinstance(plan, list) or not plan:
        return {"decline": "no plan"}
    newest = max(
        (k for k in view.data if k.startswith(_ACTIONS) and k[len(_ACTIONS) :].isdigit()),
        key=lambda k: int(k[len(_ACTIONS) :]),
        default=None,
    )
    action = view.data.get(newest) if newest is not None else None
    command = action.get("command") if isinstance(action, dict) else None
    if not isinstance(command, str):
        return {"decline": "no command"}
    taken = plan.index(command) + 1 if command in plan else 1
    if taken >= len(plan):
        return [{"op": "remove", "path": "/plan"}]
    return [{"op": "remove", "path": "/plan/0"} for _ in range(taken)]


_ACTIONS = "/actions/"
