"""The schema-source switch: the slateboard board's blueprint *generated* by the Architect from
the game's task instead of the *fixed* hand-written ``text_actor`` one (seed 000, section 5:
generated vs fixed schemas).

The Architect (``slateboard.architect``) is asked for a blueprint for the game's task, with the
interface the harness needs stated in the request (``design_request``): the members the
environment worker, the board inputs and the narrowed actor and verifier read and write. Its
reply goes through the Architect's whole path (reading the JSON, ``compile_blueprint``, the
runnable checks, the repair rounds) plus ``interface_issues``, which ``HarnessArchitect`` feeds
back into the repairs like any other issue, so an accepted design always fits the harness.

Which model designs:

* a real model (``--model``): the same model the system plays with designs each game's
  blueprint; its calls are counted, and the design's usage is logged on the board as a
  ``spend`` record (so tokens per success include the design);
* the gold policy (``walkthrough``), which cannot design: ``recorded_model()``, a scripted
  model that returns ``RECORDED_DESIGN``. That reply was written for this harness by hand, in the
  form the Architect asks for (one JSON blueprint), following the Architect's prompt and the
  interface request; it is *not* a model's output. It still goes through the Architect's
  checks, so the gold-policy runs exercise the generated path deterministically and measure what
  a blueprint of this shape costs against the tuned fixed one (no history windows, fewer
  invariants), not how well a model designs.
"""

from __future__ import annotations

import json
from typing import Any

from slateboard.architect import Architect, Design
from slateboard.blueprint.compile import BlueprintIssue, CompiledBlueprint
from slateboard.kernel.pointer import parse_pointer
from slateboard.models import Model, ScriptedModel

__all__ = [
    "BLUEPRINT_SOURCES",
    "FIXED",
    "GENERATED",
    "INTERFACE",
    "RECORDED_DESIGN",
    "HarnessArchitect",
    "design_blueprint",
    "design_request",
    "interface_issues",
    "recorded_model",
]

FIXED = "fixed"
GENERATED = "generated"
BLUEPRINT_SOURCES = (FIXED, GENERATED)
"""Where the slateboard board's blueprint comes from: the fixed template or the Architect."""

RECORDED_MODEL = "recorded-architect"
_DESIGN_MAX_TOKENS = 3000  # a text_actor-sized blueprint is ~1,500 tokens of JSON
_DESIGN_TIMEOUT = 300.0

INTERFACE = """\
The harness plays the game on the board and needs this interface (keep these names and shapes):
- state members filled by the harness: "task" (string), "observation" (string), "admissible"
  (array of command strings, empty when the game cannot tell), "progress" (object with integer
  "score", integer "max_score", booleans "won", "lost", "tracked"), "max_commands" (integer,
  0 = no limit);
- "actions": array of {"command": string}; worker "actor" appends one command at a time
  (writes "/actions/-"), and it must be one of /admissible when that list is not empty;
- "observations": array of {"step": integer, "text": string}; worker "environment" (a program)
  answers each command: it appends to /observations, replaces /observation, /admissible and
  /progress, and a rule must invoke it on every added action;
- worker "actor" must show /admissible whole ("pinned"); a worker named "verifier" that reads
  /progress must pin it; workers "planner" and "verifier" are optional;
- the board is done when the game is won or lost or /max_commands commands were observed."""

_TASK = "Design the team that plays this text game.\nGame task: {objective}\nFirst observation: {observation}"

_MEMBERS: dict[str, str] = {
    "task": "string",
    "observation": "string",
    "admissible": "array",
    "progress": "object",
    "max_commands": "integer",
    "actions": "array",
    "observations": "array",
}
_ENV_WRITES = ("/observations/-", "/observation", "/admissible", "/progress")
_SAMPLE: dict[str, Any] = {
    "task": "t",
    "observation": "o",
    "admissible": ["look"],
    "progress": {"score": 0, "max_score": 100, "won": False, "lost": False, "tracked": True},
    "max_commands": 3,
    "actions": [{"command": "look"}],
    "observations": [{"step": 0, "text": "o"}],
}
"""A state the harness writes after one command: a generated schema must accept it."""


def design_request(objective: str, observation: str = "") -> str:
    """The Architect's request for a game: its task and first observation, and ``INTERFACE``."""
    task = _TASK.format(objective=" ".join(objective.split()) or "(none)", observation=" ".join(observation.split()))
    return f"{task}\n\n{INTERFACE}"


def _pinned(compiled: CompiledBlueprint, worker: str, pointer: str) -> bool:
    spec = compiled.spec.workers.get(worker)
    return spec is not None and pointer in (spec.pinned or [])


def interface_issues(compiled: CompiledBlueprint) -> list[BlueprintIssue]:
    """What an accepted blueprint lacks to be played by the harness (see ``INTERFACE``): each
    issue names the blueprint path and what to change, so the Architect can repair it."""
    spec = compiled.spec
    issues: list[BlueprintIssue] = []
    props = spec.state_schema.get("properties")
    props = props if isinstance(props, dict) else {}
    for member, kind in _MEMBERS.items():
        if member not in props:
            issues.append(BlueprintIssue(f"/schema/properties/{member}", f"missing: the harness writes {kind} here"))
    if issues:
        return issues
    start = compiled.initial_state()
    sample = {**start, **_SAMPLE} if isinstance(start, dict) else dict(_SAMPLE)
    for v in compiled.schema.validate_state(sample):
        issues.append(BlueprintIssue("/schema", f"the harness's state does not fit the schema: {v}"))
    env = compiled.workers.get("environment")
    if env is None:
        issues.append(BlueprintIssue("/workers/environment", "missing: the worker that executes commands"))
    else:
        for pointer in _ENV_WRITES:
            if not env.may_write(parse_pointer(pointer)):
                issues.append(BlueprintIssue("/workers/environment/writes", f"must cover {pointer}"))
        if not any(r.on.op == "add" and r.on.path == "/actions/-" and r.invoke == "environment" for r in spec.rules):
            issues.append(
                BlueprintIssue("/rules", 'no rule invokes "environment" on {"op": "add", "path": "/actions/-"}')
            )
    actor = compiled.workers.get("actor")
    if actor is None:
        issues.append(BlueprintIssue("/workers/actor", "missing: the worker that issues commands"))
    else:
        if not actor.may_write(parse_pointer("/actions/-")):
            issues.append(BlueprintIssue("/workers/actor/writes", "must cover /actions/-"))
        if not _pinned(compiled, "actor", "/admissible"):
            issues.append(BlueprintIssue("/workers/actor/pinned", "must pin /admissible (the commands it picks from)"))
    verifier = spec.workers.get("verifier")
    if verifier is not None and "/progress" in verifier.reads and not _pinned(compiled, "verifier", "/progress"):
        issues.append(BlueprintIssue("/workers/verifier/pinned", "must pin /progress (it reads it)"))
    return issues


class HarnessArchitect(Architect):
    """An Architect whose acceptance also demands ``interface_issues`` be empty: an interface
    issue is sent back in a repair round like a schema error, and a design it returns always
    fits the harness (``ArchitectError`` otherwise, as for any Architect)."""

    def check(self, text: str) -> tuple[CompiledBlueprint | None, list[BlueprintIssue]]:
        """The Architect's check, then the harness interface (see ``interface_issues``)."""
        compiled, issues = super().check(text)
        if compiled is None:
            return None, issues
        extra = interface_issues(compiled)
        return (None, extra) if extra else (compiled, [])


RECORDED_DESIGN: dict[str, Any] = {
    "name": "text_game_team",
    "description": (
        "Play a text game: a planner keeps a short plan, an actor issues one admissible command at a time, "
        "the environment answers it, and a verifier judges every observation."
    ),
    "schema": {
        "type": "object",
        "required": ["task", "observation", "admissible", "progress", "max_commands", "actions", "observations"],
        "additionalProperties": False,
        "properties": {
            "task": {"type": "string"},
            "observation": {"type": "string"},
            "admissible": {
                "type": "array",
                "maxItems": 200,
                "items": {"type": "string", "minLength": 1, "maxLength": 120},
            },
            "progress": {
                "type": "object",
                "required": ["score", "max_score", "won", "lost", "tracked"],
                "additionalProperties": False,
                "properties": {
                    "score": {"type": "integer"},
                    "max_score": {"type": "integer", "minimum": 0},
                    "won": {"type": "boolean"},
                    "lost": {"type": "boolean"},
                    "tracked": {"type": "boolean"},
                },
            },
            "max_commands": {"type": "integer", "minimum": 0},
            "plan": {"type": "array", "maxItems": 10, "items": {"type": "string", "minLength": 1, "maxLength": 160}},
            "actions": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["command"],
                    "additionalProperties": False,
                    "properties": {"command": {"type": "string", "minLength": 1, "maxLength": 120}},
                },
            },
            "observations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["step", "text"],
                    "additionalProperties": False,
                    "properties": {"step": {"type": "integer", "minimum": 0}, "text": {"type": "string"}},
                },
            },
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["step", "status", "reason"],
                    "additionalProperties": False,
                    "properties": {
                        "step": {"type": "integer", "minimum": 0},
                        "status": {"enum": ["continue", "replan", "success", "failed"]},
                        "reason": {"type": "string", "maxLength": 300},
                    },
                },
            },
            "result": {"type": "string", "minLength": 1},
        },
    },
    "initial_state": {
        "task": "",
        "observation": "",
        "admissible": [],
        "progress": {"score": 0, "max_score": 0, "won": False, "lost": False, "tracked": False},
        "max_commands": 0,
        "actions": [],
        "observations": [],
        "verdicts": [],
    },
    "workers": {
        "planner": {
            "instruction": "Write a short plan of concrete commands that achieve the task from the current observation.",
            "reads": ["/task", "/observation", "/admissible", "/observations", "/plan"],
            "pinned": ["/task", "/observation"],
            "writes": ["/plan"],
            "ops": ["add", "replace"],
        },
        "actor": {
            "instruction": "Issue the next command: one of /admissible, following the plan and the latest observation.",
            "reads": ["/task", "/observation", "/admissible", "/plan", "/actions"],
            "pinned": ["/admissible"],
            "writes": ["/actions/-"],
            "ops": ["add"],
        },
        "environment": {
            "instruction": "Execute the latest command; report the observation, the admissible commands and the progress.",
            "reads": ["/actions"],
            "writes": ["/observations/-", "/observation", "/admissible", "/progress"],
            "ops": ["add", "replace"],
            "view_budget": 40000,
        },
        "verifier": {
            "instruction": "Judge the latest observation: continue, replan, success or failed, with a short reason.",
            "reads": ["/task", "/plan", "/observations", "/verdicts", "/progress"],
            "pinned": ["/progress"],
            "writes": ["/verdicts/-", "/result"],
            "ops": ["add"],
        },
    },
    "rules": [
        {"on": {"op": "start"}, "invoke": "planner", "priority": 2},
        {"on": {"op": "start"}, "invoke": "actor"},
        {"on": {"op": "add", "path": "/actions/-"}, "invoke": "environment"},
        {"on": {"op": "add", "path": "/observations/-"}, "invoke": "verifier", "priority": 1},
        {"on": {"op": "add", "path": "/observations/-"}, "invoke": "actor"},
        {"on": {"op": "add", "path": "/verdicts/-"}, "when": "value.status == 'replan'", "invoke": "planner"},
    ],
    "invariants": [
        {
            "at": "",
            "rule": "size(self.actions) <= size(self.observations) + 1",
            "message": "one command at a time: wait for the observation",
        },
        {
            "at": "",
            "rule": "self.max_commands == 0 || size(self.actions) <= self.max_commands",
            "message": "the command budget is spent",
        },
        {
            "at": "/actions",
            "rule": (
                "size(self) == size(oldSelf) || size(root.admissible) == 0 "
                "|| self[size(self) - 1].command in root.admissible"
            ),
            "message": "the command must be one of /admissible",
        },
        {
            "at": "/verdicts",
            "rule": (
                "size(self) == size(oldSelf) || self[size(self) - 1].status != 'success' "
                "|| !root.progress.tracked || root.progress.won"
            ),
            "message": "success only in a won game",
        },
    ],
    "done": (
        "has(state.result) || state.progress.won || state.progress.lost "
        "|| (state.max_commands > 0 && size(state.observations) >= state.max_commands)"
    ),
    "answer": "/result",
}
"""The recorded Architect reply the gold-policy runs use (see the module docstring: written by
hand for this harness, not a model's output)."""


def recorded_model() -> Model:
    """A scripted model that answers every Architect request with ``RECORDED_DESIGN`` as JSON."""
    return ScriptedModel([json.dumps(RECORDED_DESIGN, indent=1)], cycle=True, name=RECORDED_MODEL)


async def design_blueprint(objective: str, observation: str, model: Model, *, max_repairs: int = 2) -> Design:
    """The Architect's design for a game (its task and first observation) on ``model``, checked
    against the harness interface; ArchitectError when no acceptable design came (its ``usage``
    is what the attempts cost)."""
    architect = HarnessArchitect(model, max_repairs=max_repairs, max_tokens=_DESIGN_MAX_TOKENS, timeout=_DESIGN_TIMEOUT)
    return await architect.design_report(design_request(objective, observation))
