"""One episode of a text environment played by the text_actor team on a board."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from slateboard.blueprint.compile import CompiledBlueprint, compile_blueprint
from slateboard.blueprint.templates import template_spec
from slateboard.errors import InvalidInput
from slateboard.kernel.canonical import JSON
from slateboard.models import Model, resolve_model
from slateboard.runtime import Runner, RunResult, create_board
from slateboard.stores.base import Store
from slateboard.workers.base import Worker
from slateboard.workers.llm import LLMWorker

from ._board import AdmissibleActor, EnvironmentWorker, TurnVerifier, board_inputs
from ._protocol import TextEnvironment, TextTurn
from ._walkthrough import WALKTHROUGH_MODEL, WalkthroughModel, walkthrough_functions

__all__ = [
    "VERIFIERS",
    "BoardEpisode",
    "VerifierMode",
    "outcome_of",
    "play_on_board",
    "runner_steps_for",
    "text_actor_blueprint",
]

VerifierMode = Literal["llm", "none"]
VERIFIERS: tuple[VerifierMode, ...] = ("none", "llm")
"""The text_actor variants: ``none`` (the default: the kernel's invariants do the checking, one
model call per command) and ``llm`` (an advisory verifier model call after every observation)."""


def text_actor_blueprint(verifier: VerifierMode = "none", *, executor: bool = True) -> CompiledBlueprint:
    """The text_actor template compiled, with its advisory verifier (``"llm"``) or without it
    (``"none"``: the worker and the rule that invokes it are left out; the invariants that make
    a command admissible and forbid success in a game not won stay, so nothing a deterministic
    check can decide costs a model call). InvalidInput (a ValueError) for another mode.

    Without a verifier the views carry only what the next decision needs (issue 42): the actor
    follows the plan and the observation (its instruction) and no longer reads the task, which
    never changes and was a third of its prompt; the planner, which reads the task, is asked
    again whenever the plan is used up (the template's rule ``plan used up``: the template's
    ``advance`` takes each command's steps off the plan, so the actor reads the steps still to
    take); and the planner no longer reads /observations, whose newest item is /observation
    again and whose older ones the /actions window already implies.

    With ``executor`` (the default, the template's) a plan's first step that is an admissible
    command is issued by the executor, a function worker (``slateboard.workers.plan_step``), not
    by an actor call: the planner has just planned from the same observation and admissible
    commands. ``executor=False`` leaves it and its rule out: the actor picks every command."""
    if verifier not in VERIFIERS:
        raise InvalidInput(f"unknown verifier mode {verifier!r} (modes: {', '.join(VERIFIERS)})")
    spec = template_spec("text_actor")
    label = "template text_actor"
    if not executor:
        spec["workers"].pop(EXECUTOR, None)
        spec["rules"] = [r for r in spec["rules"] if r.get("invoke") != EXECUTOR]
        label += " (no executor)"
    if verifier == "none":
        workers = spec["workers"]
        workers.pop("verifier", None)
        # nothing writes a verdict any more: the rules on them (the verifier's replan) go too
        kept = [r for r in spec["rules"] if r.get("invoke") != "verifier" and r["on"].get("path") != "/verdicts/-"]
        spec["rules"] = kept
        actor, planner = workers["actor"], workers["planner"]
        for key in ("reads", "pinned"):
            actor[key] = [p for p in actor[key] if p not in ("/task", "/actions")]
        actor["windows"] = {}
        actor["instruction"] = ACTOR_INSTRUCTION
        # typed replies: the command (the actor decodes it alone, AdmissibleActor) and the plan
        # list themselves, not a patch around them
        actor["output"], planner["output"] = "/actions/-", "/plan"
        # The planner keeps reading /plan: a write of a node its worker cannot read counts as a
        # change even when the value is the same (a blind write), so a planner that repeats its
        # plan unseen would make a state cycle instead of a no-op. With the plan it wrote shown,
        # its last three commands say how far it was followed (the latest also opens /observation).
        planner["reads"] = [p for p in planner["reads"] if p not in ("/observations", "/verdicts")]
        planner["windows"] = {"/actions": PLANNER_WINDOW}
        planner["instruction"] = PLANNER_INSTRUCTION
        label += " (verifier none)"
    return compile_blueprint(spec, source_label=label)


EXECUTOR = "executor"
"""The template's worker that issues an admissible first step of a fresh plan (no model call)."""
ACTOR_INSTRUCTION = "Pick the plan's first step from /admissible."
PLANNER_WINDOW = 3
"""Commands the planner sees (the newest; a range handle stands for the earlier ones)."""
PLANNER_INSTRUCTION = "Write the plan: a short list of commands that achieve the task from the observation."


def runner_steps_for(max_commands: int) -> int:
    """The Runner's proposal budget for a command budget: each command takes an action, an
    observation and a verdict, with room for a replan and rejected proposals now and then."""
    return 200 if max_commands <= 0 else max(20, 6 * max_commands + 10)


def outcome_of(state: JSON, end_reason: str) -> str:
    """Why an episode ended, in one word: ``won``, ``lost``, ``budget`` (the command budget was
    spent), ``verdict`` (the verifier ended a game the environment does not track: success or
    failed, with a result), else the runner's reason."""
    if isinstance(state, dict):
        progress = state.get("progress")
        if isinstance(progress, dict):
            if progress.get("won") is True:
                return "won"
            if progress.get("lost") is True:
                return "lost"
        observations = state.get("observations")
        budget = state.get("max_commands")
        if isinstance(budget, int) and budget > 0 and isinstance(observations, list) and len(observations) >= budget:
            return "budget"
        if "result" in state:
            return "verdict"
    return end_reason


@dataclass(frozen=True, slots=True)
class BoardEpisode:
    """An episode played on a board: the run's result, the environment's last turn, and the
    outcome word (``outcome_of``)."""

    result: RunResult
    last: TextTurn | None
    outcome: str

    @property
    def won(self) -> bool:
        """True when the environment reports the game as won."""
        return self.last is not None and self.last.won

    @property
    def commands(self) -> int:
        """Commands the environment executed on this board."""
        state = self.result.state
        observations = state.get("observations") if isinstance(state, dict) else None
        return len(observations) if isinstance(observations, list) else 0


async def play_on_board(
    env: TextEnvironment,
    store: Store,
    *,
    model: Model | str | None = None,
    max_commands: int = 20,
    walkthrough: bool = False,
    max_steps: int | None = None,
    name: str | None = None,
    worker_timeout: float = 300.0,
    verifier: VerifierMode = "none",
    executor: bool = True,
) -> BoardEpisode:
    """Play one episode of ``env`` with the text_actor template on a new board of ``store``.

    The blueprint is ``text_actor_blueprint(verifier, executor=executor)``: without a verifier
    (the default) one model call per command (the actor) plus the planner's, less the commands
    the executor issues from a fresh plan (``executor``, the default). The environment worker is
    ``EnvironmentWorker(env)``; the actor is an ``AdmissibleActor``, the verifier (``"llm"``) a
    ``TurnVerifier`` and the planner an LLM worker, all on ``model`` (default ``local``).
    ``walkthrough=True`` (or the model string ``"walkthrough"``) plays the environment's
    walkthrough instead: function workers with ``walkthrough=True``, the WalkthroughModel
    behind the LLM workers with the model string. The board ends when the game is won or lost,
    when ``max_commands`` commands were observed, when the verifier ends it, or on the runner's
    own limits (``max_steps`` proposals, default ``runner_steps_for(max_commands)``). A worker call
    may take ``worker_timeout`` seconds (the first call of the local model also loads it).
    """
    first = await env.reset()
    blueprint = text_actor_blueprint(verifier, executor=executor)
    board = await create_board(
        store, blueprint, inputs=board_inputs(env, first, max_commands=max_commands), name=name or env.name
    )
    # without a verifier the actor reads no /actions: /observation names the command it answers
    functions: dict[str, Any] = {"environment": EnvironmentWorker(env, echo=verifier == "none")}
    workers: dict[str, Worker] = {}
    resolved: Model | None = None
    if walkthrough:
        functions.update({k: f for k, f in walkthrough_functions(env).items() if k in blueprint.workers})
    else:
        resolved = WalkthroughModel(env) if model == WALKTHROUGH_MODEL else resolve_model(model or "local")
        # a typed reply decoded against its schema is asked for in one line (output_hint)
        workers["actor"] = AdmissibleActor(blueprint, "actor", resolved, component="actor", output_hint=True)
        workers["planner"] = LLMWorker(blueprint, "planner", resolved, component="planner", output_hint=True)
        if "verifier" in blueprint.workers:
            workers["verifier"] = TurnVerifier(blueprint, "verifier", resolved, component="verifier")
    runner = Runner(
        store,
        board,
        model=resolved,
        functions=functions,
        workers=workers,
        max_steps=max_steps or runner_steps_for(max_commands),
        worker_timeout=worker_timeout,
    )
    result = await runner.run()
    return BoardEpisode(result, env.last, outcome_of(result.state, result.end_reason))
