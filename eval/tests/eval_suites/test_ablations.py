"""The slateboard settings as blueprint transformations, and what they switch off."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from slateboard.models import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE, DEFAULT_TIMEOUT, Generation, Message
from slateboard.stores import MemoryStore
from slateboard_eval.ablations import ABLATIONS, CONTROLS, parse_setting, play_setting, setting_blueprint
from slateboard_eval.envs import WalkthroughModel
from slateboard_eval.envs.twx import CI_GAMES, TwxGame


def _spec(setting: str) -> dict[str, Any]:
    return setting_blueprint(setting).spec.to_json()


def test_parse_setting() -> None:
    assert parse_setting("").name == "full" and not parse_setting("full").off
    assert parse_setting("json-board").off == {"no-slicing", "no-contracts", "no-invariants"}
    assert parse_setting("plain-board").free_text
    both = parse_setting("no-circuit+budget=500")
    assert both.off == {"no-circuit"} and both.budget == 500
    with pytest.raises(ValueError, match="unknown setting"):
        parse_setting("no-kernel")
    with pytest.raises(ValueError, match=">= 64"):
        parse_setting("budget=10")


def test_each_setting_transforms_the_blueprint() -> None:
    full = _spec("full")
    members = sorted(full["schema"]["properties"])
    assert full["invariants"] and full["workers"]["actor"]["reads"] != [f"/{m}" for m in members]
    sliced = _spec("no-slicing")
    for w in sliced["workers"].values():
        assert w["reads"] == [f"/{m}" for m in members] and w["view_budget"] == 10_000_000
    assert all(w["writes"] == ["/**"] for w in _spec("no-contracts")["workers"].values())
    assert _spec("no-invariants")["invariants"] == []
    assert _spec("no-circuit")["circuit"]["max_consecutive_invalid"] >= 1_000_000
    budget = _spec("budget=500")["workers"]
    assert budget["actor"]["view_budget"] == 500 and budget["environment"]["view_budget"] == 40000
    for setting in (*ABLATIONS, *CONTROLS):
        setting_blueprint(setting)  # every setting compiles


class _Stubborn:
    """The walkthrough, except that the actor always proposes a command the game does not admit."""

    def __init__(self, inner: WalkthroughModel) -> None:
        self.inner = inner
        self.name = "stubborn"

    async def generate(
        self,
        messages: Sequence[Message],
        *,
        json_schema: Mapping[str, Any] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        temperature: float = DEFAULT_TEMPERATURE,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> Generation:
        gen = await self.inner.generate(messages, json_schema=json_schema, max_tokens=max_tokens)
        if "You are worker 'actor'" in messages[0].content:
            patch = [{"op": "add", "path": "/actions/-", "value": {"command": "dance wildly"}}]
            return Generation(
                text=json.dumps({"patch": patch}),
                usage=gen.usage,
                finish_reason="stop",
                model="stubborn",
                latency_s=0.0,
            )
        return gen


async def _commands_under(setting: str) -> tuple[list[str], list[str]]:
    store = MemoryStore()
    env = TwxGame(CI_GAMES[0], 1)
    try:
        ep = await play_setting(env, store, setting=setting, model=_Stubborn(WalkthroughModel(env)), max_commands=2)
        records = await store.read_records(ep.result.board_id)
        stages = [str(r.stage) for r in records if r.outcome == "rejected"]
        # the actor's commands (the executor issues the plan's first step, the walkthrough's)
        actors = [r for r in records if r.worker == "actor" and r.outcome == "accepted"]
        return [json.loads(str(r.patch))[0]["value"]["command"] for r in actors], stages
    finally:
        env.close()


@pytest.mark.usefixtures("twx_ready")
async def test_invariants_reject_an_inadmissible_command_only_when_on() -> None:
    with_inv, stages = await _commands_under("full")
    assert "dance wildly" not in with_inv
    assert any("invariant" in s for s in stages)
    without, _ = await _commands_under("no-invariants")
    assert without and all(c == "dance wildly" for c in without)
