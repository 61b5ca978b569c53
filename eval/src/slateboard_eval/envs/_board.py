"""A text environment on a text_actor board: the environment function worker, the board's
initial inputs, and an actor whose decoding is narrowed to the admissible commands."""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from slateboard.errors import InvalidInput
from slateboard.kernel.canonical import JSON
from slateboard.workers.base import Feedback, WorkerReply
from slateboard.workers.llm import LLMWorker

from ._protocol import TextEnvironment, TextEnvironmentError, TextTurn, clip

if TYPE_CHECKING:
    from slateboard.views import View

__all__ = ["AdmissibleActor", "EnvironmentWorker", "TurnVerifier", "board_inputs", "latest_command"]

MAX_ADMISSIBLE = 200
"""The text_actor schema's bound on /admissible (items longer than MAX_COMMAND_CHARS are left out)."""
MAX_COMMAND_CHARS = 120


def _admissible_list(commands: Sequence[str]) -> list[JSON]:
    return [c for c in commands if 0 < len(c) <= MAX_COMMAND_CHARS][:MAX_ADMISSIBLE]


def board_inputs(env: TextEnvironment, first: TextTurn, *, max_commands: int = 0) -> dict[str, JSON]:
    """The inputs of a text_actor board for an episode that starts at ``first`` (the turn
    ``env.reset()`` returned): task, first observation, admissible commands, progress, budget.
    The first observation is shown without the objective it opens with (it is the task)."""
    if max_commands < 0:
        raise InvalidInput("max_commands must be >= 0 (0: no limit)")
    task = env.objective or first.observation
    observation = first.observation
    # A TextWorld game's first observation opens with its objective, word for word: the board
    # keeps it once, in /task (what every later observation lacks too).
    if env.objective and observation.startswith(env.objective) and observation[len(env.objective) :].strip():
        observation = observation[len(env.objective) :].lstrip()
    return {
        "task": task,
        "observation": clip(observation),
        "admissible": _admissible_list(first.admissible),
        "progress": first.progress(),
        "max_commands": max_commands,
    }


def latest_command(view: View) -> tuple[int, str, list[str] | None]:
    """(index, command) of the latest action the view shows, and every command in order when the
    view shows all of them (None when it shows only the newest). Raises TextEnvironmentError when
    the view shows no action."""
    data = view.data
    whole = data.get("/actions")
    if isinstance(whole, list):
        commands = [str(a.get("command", "")) if isinstance(a, dict) else "" for a in whole]
        if not commands:
            raise TextEnvironmentError("the environment was invoked, but there is no command on the board")
        return len(commands) - 1, commands[-1], commands
    items: dict[int, str] = {}
    for pointer, value in data.items():
        head, _, rest = pointer.partition("/actions/")
        if head or not rest:
            continue
        index, _, member = rest.partition("/")
        if not index.isdigit():
            continue
        if member == "command" and isinstance(value, str):
            items[int(index)] = value
        elif not member and isinstance(value, dict):
            items[int(index)] = str(value.get("command", ""))
    if not items:
        raise TextEnvironmentError("the environment was invoked, but its view shows no command")
    last = max(items)
    complete = sorted(items) == list(range(last + 1))
    return last, items[last], [items[i] for i in range(last + 1)] if complete else None


class EnvironmentWorker:
    """The ``environment`` function worker of a text_actor board over a TextEnvironment:
    ``Runner(store, board, functions={"environment": EnvironmentWorker(env)})``.

    Guarantees: each invocation answers the latest command on the board with one patch that
    appends the observation (with the command's index as ``step``), replaces ``/observation``,
    ``/admissible`` and ``/progress``; a command is executed in the environment once, however
    often the worker is asked for the same index (a re-queued invocation gets the same turn
    again); when the environment is behind or ahead of the board (a resumed board, a fresh
    process) it is reset and the board's earlier commands are replayed first, so the
    environment's state always follows the board's log. ``turns`` keeps every turn by index.
    With ``echo=True``, ``/observation`` opens with the command it answers (``> COMMAND``, as a
    game's transcript shows it), so a worker that reads it needs no window on ``/actions``; the
    ``/observations`` items keep the game's text alone.
    """

    def __init__(self, env: TextEnvironment, *, echo: bool = False) -> None:
        self.env = env
        self.echo = echo
        self.turns: dict[int, TextTurn] = {}

    async def __call__(self, view: View) -> list[dict[str, JSON]]:
        """Execute the latest command of ``view`` (see the class) and return the patch."""
        index, command, commands = latest_command(view)
        turn = await self._turn(index, command, commands)
        return self.patch(index, turn, command if self.echo else None)

    async def _turn(self, index: int, command: str, commands: list[str] | None) -> TextTurn:
        known = self.turns.get(index)
        if known is not None and self.env.commands == index + 1:
            return known
        if self.env.last is None or self.env.commands != index:
            if commands is None:
                raise TextEnvironmentError(
                    f"the environment has run {self.env.commands} commands but the board is at command {index}, "
                    "and the view does not show every earlier command to replay"
                )
            await self.env.reset()
            self.turns.clear()
            for i, earlier in enumerate(commands[:index]):
                self.turns[i] = await self.env.step(earlier)
        turn = await self.env.step(command)
        self.turns[index] = turn
        return turn

    @staticmethod
    def patch(index: int, turn: TextTurn, echo: str | None = None) -> list[dict[str, JSON]]:
        """The text_actor patch that reports ``turn`` as the answer to command ``index``
        (``/observation`` opening with ``> echo`` when given)."""
        text = clip(turn.observation) or "(nothing happens)"
        latest = text if echo is None else clip(f"> {echo}\n{text}")
        return [
            {"op": "add", "path": "/observations/-", "value": {"step": index, "text": text}},
            {"op": "replace", "path": "/observation", "value": latest},
            {"op": "replace", "path": "/admissible", "value": _admissible_list(turn.admissible)},
            {"op": "replace", "path": "/progress", "value": turn.progress()},
        ]


def _command_value(admissible: list[str]) -> dict[str, Any]:
    """An /actions item whose command is one of ``admissible``."""
    return {
        "type": "object",
        "required": ["command"],
        "additionalProperties": False,
        "properties": {"command": {"enum": list(admissible)}},
    }


def _narrow(node: Any, admissible: list[str]) -> bool:
    """Replace, in a derived proposal schema, the value of the ``/actions/-`` op by a command
    chosen from ``admissible``; True when one was found."""
    found = False
    if isinstance(node, dict):
        props = node.get("properties")
        path = props.get("path") if isinstance(props, dict) else None
        if isinstance(path, dict) and path.get("enum") == ["/actions/-"]:
            assert isinstance(props, dict)
            props["value"] = _command_value(admissible)
            return True
        for value in node.values():
            found = _narrow(value, admissible) or found
    elif isinstance(node, list):
        for value in node:
            found = _narrow(value, admissible) or found
    return found


class AdmissibleActor(LLMWorker):
    """The text_actor ``actor`` as an LLM worker whose reply is constrained to one of the
    commands in ``/admissible`` (as its view shows them), on top of the contract schema.

    It proposes exactly what the kernel accepts: the template's "an admissible command"
    invariant rejects any other command, so constraining the decoding spares a small model the
    rejections. With no admissible list (an environment that cannot tell) it is a plain
    LLMWorker. Only the ``contract`` and ``output`` decodings are narrowed; ``json`` and
    ``none`` stay free.

    A typed actor (``output: /actions/-``) decoded against the admissible list replies with the
    command alone (``"go east"``, 4 tokens instead of ``{"command":"go east"}``'s 6), which it
    proposes as the ``/actions`` item ``{"command": ...}``; any other reply (an item, when the
    provider refused the schema and the prompt stated the item's; text that is no JSON string)
    is proposed as it is, for the kernel to judge.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_ops", 1)
        super().__init__(*args, **kwargs)

    def patch_schema(self, view: View) -> tuple[dict[str, Any] | None, str]:
        """The contract schema with the command narrowed to the admissible ones (see class);
        for a typed actor (``output: /actions/-``) the value schema, narrowed the same way.
        Raises TextEnvironmentError when the view shows /admissible only in part (the budget
        cut it): decoding from a partial list would silently drop commands, so it must be
        pinned (the text_actor template pins it)."""
        _require_whole(view, "/admissible")
        schema, used = super().patch_schema(view)
        admissible = view.data.get("/admissible")
        if schema is None or used not in ("contract", "output") or not isinstance(admissible, list) or not admissible:
            return schema, used
        commands = [c for c in admissible if isinstance(c, str)]
        if not commands:
            return schema, used
        if used == "output":
            return {"enum": commands}, "output+admissible"
        narrowed = copy.deepcopy(schema)
        if _narrow(narrowed, commands):
            return narrowed, "contract+admissible"
        return schema, used

    async def propose(self, view: View, event: JSON = None, *, feedback: Feedback = None) -> WorkerReply:
        """LLMWorker.propose, with a typed reply that is a bare command proposed as the
        ``/actions`` item it names (see the class)."""
        reply = await super().propose(view, event, feedback=feedback)
        patch = reply.patch
        if (
            self.output == "/actions/-"
            and isinstance(patch, list)
            and len(patch) == 1
            and isinstance(patch[0], dict)
            and patch[0].get("path") == "/actions/-"
            and isinstance(patch[0].get("value"), str)
            and _json_string(reply.raw) == patch[0]["value"]
        ):
            item: dict[str, JSON] = {"command": patch[0]["value"]}
            return dataclasses.replace(reply, patch=[{**patch[0], "value": item}])
        return reply


def _json_string(text: str | None) -> str | None:
    """The string ``text`` is as JSON (a quoted string), else None: text that is no JSON string
    (a reply cut short, prose) stays the kernel's to reject at stage ``schema``."""
    try:
        value = json.loads(text.strip()) if text else None
    except ValueError:
        return None
    return value if isinstance(value, str) else None


def _require_whole(view: View, pointer: str) -> None:
    """Fail loudly when ``pointer`` is in the view only in part (some members or a handle):
    a value the decoding or an invariant depends on must be shown whole (pinned) or not at all."""
    if pointer in view.data:
        return
    partial = any(key.startswith(pointer + "/") for key in view.data) or any(
        h.pointer == pointer or h.handle.startswith(pointer + "#") for h in view.handles
    )
    if partial:
        raise TextEnvironmentError(
            f"the {view.worker} view shows {pointer} only in part (its budget cut it); pin it in the "
            "worker's contract (pinned:) so the decoding and the invariants see all of it"
        )


def _latest_observation(view: View) -> int | None:
    """The index of the newest observation the view shows (views show array items newest first,
    so the largest index seen is the latest), or None when it shows none."""
    whole = view.data.get("/observations")
    if isinstance(whole, list):
        return len(whole) - 1 if whole else None
    found = [
        int(rest.split("/", 1)[0])
        for pointer in view.data
        if pointer.startswith("/observations/")
        and (rest := pointer[len("/observations/") :]).split("/", 1)[0].isdigit()
    ]
    return max(found) if found else None


def _narrow_verdict(node: Any, step: int, statuses: list[str]) -> bool:
    """Fix, in a derived proposal schema, the ``/verdicts/-`` value's ``step`` to ``step`` and its
    ``status`` to ``statuses``; True when one was found."""
    found = False
    if isinstance(node, dict):
        props = node.get("properties")
        path = props.get("path") if isinstance(props, dict) else None
        value = props.get("value") if isinstance(props, dict) else None
        if isinstance(path, dict) and path.get("enum") == ["/verdicts/-"] and isinstance(value, dict):
            members = value.get("properties")
            if isinstance(members, dict):
                members["step"] = {"const": step}
                members["status"] = {"enum": list(statuses)}
                return True
        for child in node.values():
            found = _narrow_verdict(child, step, statuses) or found
    elif isinstance(node, list):
        for child in node:
            found = _narrow_verdict(child, step, statuses) or found
    return found


_STATUSES = ("continue", "replan", "success", "failed")


class TurnVerifier(LLMWorker):
    """The text_actor ``verifier`` as an LLM worker whose verdict is decoded with the only values
    the kernel can accept for its bookkeeping: ``step`` is the index of the latest observation
    (the "a verdict judges the latest observation" invariant), and ``success`` is not offered
    while the environment reports the game as not won ("success only in a won game"). The
    judgement itself (continue, replan, failed, the reason) stays the model's; the invariants
    stay in force for any other worker or decoding.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("max_ops", 1)
        super().__init__(*args, **kwargs)

    def patch_schema(self, view: View) -> tuple[dict[str, Any] | None, str]:
        """The contract schema with the verdict's step and status narrowed (see class); raises
        TextEnvironmentError when the view shows /progress only in part (pin it)."""
        _require_whole(view, "/progress")
        schema, used = super().patch_schema(view)
        step = _latest_observation(view)
        if schema is None or used != "contract" or step is None:
            return schema, used
        statuses = list(_STATUSES)
        progress = view.data.get("/progress")
        if isinstance(progress, dict) and progress.get("tracked") is True and progress.get("won") is not True:
            statuses.remove("success")
        narrowed = copy.deepcopy(schema)
        if _narrow_verdict(narrowed, step, statuses):
            return narrowed, "contract+turn"
        return schema, used
