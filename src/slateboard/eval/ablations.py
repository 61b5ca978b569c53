"""Ablations of the slateboard system as blueprint and worker switches (seed 000, section 5).

A *setting* names one variant of the slateboard system on the text_actor board; every variant
runs on the same kernel, environment worker, model and command budget, so an ablation's effect
is measured against ``full`` on matched (game, seed) pairs:

==================  ===========================================================================
``full``            the text_actor blueprint as shipped
``no-interface``    C1: no patch/schema interface at decoding: the LLM workers write free text
                    (``decoding="none"``) that the worker parses into a proposal; no admissible
                    narrowing of the actor
``no-slicing``      C3: no context slicing: every worker reads every member of the board, with
                    the largest view budget (the whole board in every view)
``no-contracts``    no write contracts: every worker may write anywhere (``/**``)
``no-invariants``   no invariants (turn-taking, budget, admissibility... are not checked)
``no-circuit``      no circuit policy: its thresholds are set out of reach, so it never acts
``json-board``      control: a structured JSON board without slicing, contracts or invariants
``plain-board``     control: ``json-board`` with free-text proposals as well (nothing of the
                    interface is left but the JSON Patch form the kernel parses)
``budget=N``        the context-budget sweep: every LLM worker's view budget is N characters
==================  ===========================================================================

Settings compose with ``+`` (``no-slicing+no-circuit``). ``setting_blueprint`` gives the
transformed blueprint; ``play_setting`` plays one episode of an environment with it.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..blueprint.compile import CompiledBlueprint, compile_blueprint
from ..blueprint.templates import template_spec
from ..envs import (
    WALKTHROUGH_MODEL,
    AdmissibleActor,
    BoardEpisode,
    EnvironmentWorker,
    TextEnvironment,
    TurnVerifier,
    WalkthroughModel,
    board_inputs,
    outcome_of,
    runner_steps_for,
)
from ..errors import InvalidInput
from ..models import Model, resolve_model
from ..runtime import Runner, create_board
from ..stores.base import Store
from ..workers.base import Worker
from ..workers.llm import LLMWorker

__all__ = [
    "ABLATIONS",
    "CONTROLS",
    "FULL",
    "Setting",
    "parse_setting",
    "play_setting",
    "setting_blueprint",
]

FULL = "full"
ABLATIONS = ("no-interface", "no-slicing", "no-contracts", "no-invariants", "no-circuit")
"""The component ablations, in the paper's order (C1 interface, C3 slicing, ...)."""
CONTROLS = ("json-board", "plain-board")
"""The blackboard controls."""
_COMPOSED = {
    "json-board": ("no-slicing", "no-contracts", "no-invariants"),
    "plain-board": ("no-interface", "no-slicing", "no-contracts", "no-invariants"),
}
_LLM_WORKERS = ("planner", "actor", "verifier")
_WHOLE_BUDGET = 10_000_000
_OUT_OF_REACH = 1_000_000
_MIN_BUDGET = 64


@dataclass(frozen=True, slots=True)
class Setting:
    """A parsed setting: the switches it turns off and the view budget it imposes (if any)."""

    name: str
    off: frozenset[str]
    budget: int | None = None

    @property
    def free_text(self) -> bool:
        """True when the LLM workers decode free text (no interface)."""
        return "no-interface" in self.off


def parse_setting(text: str) -> Setting:
    """The Setting ``text`` names (InvalidInput, a ValueError, naming the known switches for an unknown one)."""
    name = text.strip().lower() or FULL
    off: set[str] = set()
    budget: int | None = None
    for part in name.split("+"):
        part = part.strip()
        if part in ("", FULL):
            continue
        if part in ABLATIONS:
            off.add(part)
        elif part in _COMPOSED:
            off.update(_COMPOSED[part])
        elif part.startswith("budget="):
            try:
                budget = int(part.split("=", 1)[1])
            except ValueError:
                raise InvalidInput(f"bad view budget in {part!r} (budget=N, N characters)") from None
            if budget < _MIN_BUDGET:
                raise InvalidInput(f"a view budget must be >= {_MIN_BUDGET} characters, got {budget}")
        else:
            known = ", ".join((FULL, *ABLATIONS, *CONTROLS, "budget=N"))
            raise InvalidInput(f"unknown setting {part!r} (settings: {known}; combine with +)")
    return Setting(name, frozenset(off), budget)


def setting_blueprint(setting: Setting | str, template: str = "text_actor") -> CompiledBlueprint:
    """The template's blueprint transformed by ``setting`` and compiled (the kernel accepts it
    like any other blueprint, so a board of it replays and verifies)."""
    s = parse_setting(setting) if isinstance(setting, str) else setting
    spec: dict[str, Any] = copy.deepcopy(template_spec(template))
    members = sorted((spec.get("schema") or {}).get("properties") or {})
    workers: dict[str, dict[str, Any]] = spec["workers"]
    if "no-slicing" in s.off:
        for w in workers.values():
            w["reads"] = [f"/{m}" for m in members]
            w["view_budget"] = _WHOLE_BUDGET
    if "no-contracts" in s.off:
        for w in workers.values():
            w["writes"] = ["/**"]
    if "no-invariants" in s.off:
        spec["invariants"] = []
    if "no-circuit" in s.off:
        spec["circuit"] = {
            **(spec.get("circuit") or {}),
            "max_consecutive_invalid": _OUT_OF_REACH,
            "max_noops": _OUT_OF_REACH,
            "stuck_after": _OUT_OF_REACH,
            "cycle_window": _OUT_OF_REACH,
        }
    if s.budget is not None:
        for name in _LLM_WORKERS:
            if name in workers:
                workers[name]["view_budget"] = s.budget
    spec["name"] = f"{spec.get('name', template)} [{s.name}]" if s.name != FULL else spec.get("name", template)
    return compile_blueprint(spec, source_label=f"template {template}, setting {s.name}")


async def play_setting(
    env: TextEnvironment,
    store: Store,
    *,
    setting: Setting | str = FULL,
    model: Model | str | None = None,
    max_commands: int = 20,
    name: str | None = None,
    worker_timeout: float = 300.0,
) -> BoardEpisode:
    """One episode of ``env`` on a text_actor board under ``setting`` (see the module table),
    like ``slateboard.envs.play_on_board`` with the transformed blueprint: the environment
    function worker, the planner, actor and verifier on ``model`` (the model string
    ``walkthrough`` for a WalkthroughModel over ``env``). Under ``full`` the actor and verifier
    are the admissible/turn-narrowed workers; under ``no-interface`` all three decode free text."""
    s = parse_setting(setting) if isinstance(setting, str) else setting
    first = await env.reset()
    blueprint = setting_blueprint(s)
    board = await create_board(
        store, blueprint, inputs=board_inputs(env, first, max_commands=max_commands), name=name or env.name
    )
    resolved = WalkthroughModel(env) if model == WALKTHROUGH_MODEL else resolve_model(model or "local")
    workers: dict[str, Worker] = {}
    if s.free_text:
        for worker in _LLM_WORKERS:
            workers[worker] = LLMWorker(blueprint, worker, resolved, decoding="none")
    else:
        workers["actor"] = AdmissibleActor(blueprint, "actor", resolved)
        workers["verifier"] = TurnVerifier(blueprint, "verifier", resolved)
    runner = Runner(
        store,
        board,
        model=resolved,
        functions={"environment": EnvironmentWorker(env)},
        workers=workers,
        max_steps=runner_steps_for(max_commands),
        worker_timeout=worker_timeout,
    )
    result = await runner.run()
    return BoardEpisode(result, env.last, outcome_of(result.state, result.end_reason))
