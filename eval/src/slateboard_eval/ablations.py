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
``generated``       the schema source: the blueprint is designed by the Architect from the
                    game's task (``slateboard_eval.generated``) instead of the fixed template
==================  ===========================================================================

Settings compose with ``+`` (``no-slicing+no-circuit``, ``generated+no-slicing``: the switches
then transform the generated blueprint). ``setting_blueprint`` gives the transformed blueprint;
``play_setting`` plays one episode of an environment with it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from slateboard.architect import Design
from slateboard.blueprint.compile import CompiledBlueprint, compile_blueprint
from slateboard.blueprint.templates import template_spec
from slateboard.errors import InvalidInput
from slateboard.models import Model, resolve_model
from slateboard.runtime import Runner, create_board
from slateboard.stores.base import Store
from slateboard.workers.base import Worker
from slateboard.workers.llm import LLMWorker

from .envs import (
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
from .generated import FIXED, GENERATED, design_blueprint, recorded_model

__all__ = [
    "ABLATIONS",
    "CONTROLS",
    "FULL",
    "SOURCES",
    "Setting",
    "SettingEpisode",
    "parse_setting",
    "play_setting",
    "setting_blueprint",
]

FULL = "full"
ABLATIONS = ("no-interface", "no-slicing", "no-contracts", "no-invariants", "no-circuit")
"""The component ablations, in the paper's order (C1 interface, C3 slicing, ...)."""
CONTROLS = ("json-board", "plain-board")
"""The blackboard controls."""
SOURCES = (GENERATED,)
"""The schema-source switch (the fixed template is the default, ``full``)."""
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
    source: str = FIXED
    """Where the blueprint comes from: ``fixed`` (the template) or ``generated`` (the Architect)."""

    @property
    def free_text(self) -> bool:
        """True when the LLM workers decode free text (no interface)."""
        return "no-interface" in self.off

    @property
    def generated(self) -> bool:
        """True when the Architect designs the blueprint (``generated``)."""
        return self.source == GENERATED


def parse_setting(text: str) -> Setting:
    """The Setting ``text`` names (InvalidInput, a ValueError, naming the known switches for an unknown one)."""
    name = text.strip().lower() or FULL
    off: set[str] = set()
    budget: int | None = None
    source = FIXED
    for part in name.split("+"):
        part = part.strip()
        if part in ("", FULL, FIXED):
            continue
        if part == GENERATED:
            source = GENERATED
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
            known = ", ".join((FULL, *ABLATIONS, *CONTROLS, *SOURCES, "budget=N"))
            raise InvalidInput(f"unknown setting {part!r} (settings: {known}; combine with +)")
    return Setting(name, frozenset(off), budget, source)


def setting_blueprint(
    setting: Setting | str, template: str = "text_actor", *, base: Mapping[str, Any] | None = None
) -> CompiledBlueprint:
    """The template's blueprint (or ``base``, e.g. a generated one, as plain JSON) transformed
    by ``setting``'s switches and compiled (the kernel accepts it like any other blueprint, so a
    board of it replays and verifies)."""
    s = parse_setting(setting) if isinstance(setting, str) else setting
    spec: dict[str, Any] = copy.deepcopy(dict(base) if base is not None else template_spec(template))
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
    origin = "a generated blueprint" if base is not None else f"template {template}"
    return compile_blueprint(spec, source_label=f"{origin}, setting {s.name}")


@dataclass(frozen=True, slots=True)
class SettingEpisode(BoardEpisode):
    """A BoardEpisode with the Architect's design when the setting generated the blueprint."""

    design: Design | None = None


async def play_setting(
    env: TextEnvironment,
    store: Store,
    *,
    setting: Setting | str = FULL,
    model: Model | str | None = None,
    max_commands: int = 20,
    name: str | None = None,
    worker_timeout: float = 300.0,
    architect: Model | None = None,
) -> SettingEpisode:
    """One episode of ``env`` on a text_actor board under ``setting`` (see the module table),
    like ``slateboard_eval.envs.play_on_board`` with the transformed blueprint: the environment
    function worker, the planner, actor and verifier on ``model`` (the model string
    ``walkthrough`` for a WalkthroughModel over ``env``). Under ``full`` the actor and verifier
    are the admissible/turn-narrowed workers; under ``no-interface`` all LLM workers decode
    free text.

    Under ``generated`` the Architect designs the blueprint from the game's task first
    (``slateboard_eval.generated.design_blueprint``) on ``architect``, by default the playing
    model, or the recorded design when the model is the walkthrough (which cannot design); the
    design's usage is logged on the board as a spend record. ArchitectError (with its usage)
    when no acceptable design came."""
    s = parse_setting(setting) if isinstance(setting, str) else setting
    first = await env.reset()
    resolved = WalkthroughModel(env) if model == WALKTHROUGH_MODEL else resolve_model(model or "local")
    design: Design | None = None
    if s.generated:
        designer = architect or (recorded_model() if resolved.name == WALKTHROUGH_MODEL else resolved)
        design = await design_blueprint(env.objective, first.observation, designer)
        blueprint = setting_blueprint(s, base=design.blueprint.spec.to_json())
    else:
        blueprint = setting_blueprint(s)
    board = await create_board(
        store,
        blueprint,
        inputs=board_inputs(env, first, max_commands=max_commands),
        name=name or env.name,
        spent=[design.usage] if design is not None else (),
    )
    workers: dict[str, Worker] = {}
    present = [w for w in _LLM_WORKERS if w in blueprint.workers]
    if s.free_text:
        for worker in present:
            workers[worker] = LLMWorker(blueprint, worker, resolved, decoding="none")
    else:
        workers["actor"] = AdmissibleActor(blueprint, "actor", resolved)
        if "verifier" in blueprint.workers:
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
    return SettingEpisode(result, env.last, outcome_of(result.state, result.end_reason), design)
