"""ErringModel and its schedule: the errors are a pure function of (seed, episode, call index),
nested across rates, and delivered the same way whoever asks."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from slateboard.models import Message, ScriptedModel
from slateboard.models.erring import (
    CLAIM,
    ERROR_KINDS,
    HALLUCINATIONS,
    ErringModel,
    ErrorContent,
    ErrorContext,
    ErrorSchedule,
    parse_error_kinds,
    parse_error_rates,
)


class _Format:
    """A system whose replies are ``{"command": ...}`` and whose role is the system message."""

    def role(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        return messages[0].content

    def render(self, error: ErrorContent) -> str:
        if error.kind == "off_contract":
            return json.dumps({"plan": [json.loads(error.good)["command"]]})
        return json.dumps({"command": error.command if error.kind == "hallucinated" else error.claim})


class _TextFormat:
    """Another system, replying in plain text: the same content, another format."""

    def role(self, messages: Sequence[Message], json_schema: Mapping[str, Any] | None) -> str:
        return "actor"

    def render(self, error: ErrorContent) -> str:
        return error.command if error.kind == "hallucinated" else error.claim


def _msgs(role: str = "actor") -> list[Message]:
    return [Message.system(role), Message.user("what now?")]


def test_the_schedule_is_a_pure_function_of_seed_episode_and_call() -> None:
    a = ErrorSchedule(0.3, seed=7)
    b = ErrorSchedule(0.3, seed=7)
    assert a.errors("game-1", 400) == b.errors("game-1", 400)
    assert a.errors("game-1", 400) != ErrorSchedule(0.3, seed=8).errors("game-1", 400)
    assert a.errors("game-1", 400) != a.errors("game-2", 400)
    # asking out of order, or once per call, gives the same answers
    assert [a.kind_at("game-1", c) for c in reversed(range(400))][::-1] == [a.kind_at("game-1", c) for c in range(400)]


def test_rates_are_nested_and_roughly_right() -> None:
    low, high = ErrorSchedule(0.1, seed=3), ErrorSchedule(0.3, seed=3)
    at_low, at_high = dict(low.errors("e", 2000)), dict(high.errors("e", 2000))
    assert at_low.items() <= at_high.items()  # same calls, same kinds
    assert 140 <= len(at_low) <= 260 and 520 <= len(at_high) <= 680
    assert set(at_high.values()) == set(ERROR_KINDS)
    assert ErrorSchedule(0.0).errors("e", 500) == []
    assert len(ErrorSchedule(1.0).errors("e", 50)) == 50


def test_a_kind_subset_draws_only_those_kinds() -> None:
    schedule = ErrorSchedule(1.0, seed=1, kinds=("repeat", "malformed"))
    assert {k for _, k in schedule.errors("e", 200)} == {"repeat", "malformed"}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rate": 1.5}, "outside [0, 1]"),
        ({"rate": -0.1}, "outside [0, 1]"),
        ({"kinds": ()}, "at least one kind"),
        ({"kinds": ("typo",)}, "unknown error kind 'typo'"),
    ],
)
def test_a_bad_schedule_says_what_is_wrong(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        ErrorSchedule(**kwargs)


def test_parsing_kinds_and_rates() -> None:
    assert parse_error_kinds("") == ERROR_KINDS
    assert parse_error_kinds("all") == ERROR_KINDS
    assert parse_error_kinds("repeat, false-claim,repeat") == ("false_claim", "repeat")
    with pytest.raises(ValueError, match="unknown error kind 'typos'"):
        parse_error_kinds("malformed,typos")
    assert parse_error_rates("0, 0.1,0.2,0.1") == (0.0, 0.1, 0.2)
    with pytest.raises(ValueError, match="'x' is not a number"):
        parse_error_rates("0.1,x")
    with pytest.raises(ValueError, match="'2' is outside"):
        parse_error_rates("2")
    with pytest.raises(ValueError, match="no error rate"):
        parse_error_rates(" , ")


async def test_each_kind_is_delivered_as_documented() -> None:
    schedule = ErrorSchedule(1.0, seed=0, kinds=ERROR_KINDS)
    good = [json.dumps({"command": f"go {d}"}) for d in ("east", "west", "north", "south", "up", "down")] * 20
    admissible = ("take the obsidian amulet", "go east")
    model = ErringModel(
        ScriptedModel(good),
        schedule,
        episode="ep",
        format=_Format(),
        context=lambda: ErrorContext(turn=4, admissible=admissible),
    )
    delivered = [(await model.generate(_msgs())).text for _ in range(60)]
    assert len(model.injections) == 60 and model.calls == 60
    for i, (inj, text) in enumerate(zip(model.injections, delivered, strict=True)):
        assert (inj.call, inj.turn, inj.role, inj.text, inj.good) == (i, 4, "actor", text, good[i])
        if inj.kind == "malformed":
            assert text == good[i][: len(good[i]) // 2]
            with pytest.raises(ValueError):
                json.loads(text)
        elif inj.kind == "repeat":
            assert text == (delivered[i - 1] if i else "")
        elif inj.kind == "hallucinated":
            command = json.loads(text)["command"]
            assert command in HALLUCINATIONS and command not in admissible
        elif inj.kind == "false_claim":
            assert json.loads(text) == {"command": CLAIM}
        else:
            assert json.loads(text) == {"plan": [json.loads(good[i])["command"]]}
    assert model.kinds() == {k: sum(inj.kind == k for inj in model.injections) for k in ERROR_KINDS}
    assert all(model.kinds().values())


async def test_repeat_is_per_role_and_counts_tokens() -> None:
    # a seed whose first three calls are: no error, repeat, repeat
    seed = next(
        s
        for s in range(1000)
        if [ErrorSchedule(0.5, seed=s, kinds=("repeat",)).kind_at("e", c) for c in range(3)]
        == [None, "repeat", "repeat"]
    )
    schedule = ErrorSchedule(0.5, seed=seed, kinds=("repeat",))
    model = ErringModel(ScriptedModel(["a plan", "a command"], cycle=True), schedule, episode="e", format=_Format())
    first = await model.generate(_msgs("planner"))
    second = await model.generate(_msgs("actor"))
    third = await model.generate(_msgs("planner"))
    assert (first.text, second.text, third.text) == ("a plan", "", "a plan")  # the actor had nothing to repeat
    assert third.usage.estimated and third.usage.completion_tokens > 0 and third.usage.prompt_tokens > 0


async def test_two_systems_meet_the_same_errors_with_the_same_content() -> None:
    schedule = ErrorSchedule(0.4, seed=11)
    context = ErrorContext(turn=0, admissible=("go east",))
    json_model = ErringModel(
        ScriptedModel([json.dumps({"command": "go east"})], cycle=True),
        schedule,
        episode="g",
        format=_Format(),
        context=lambda: context,
    )
    text_model = ErringModel(
        ScriptedModel(["go east"], cycle=True), schedule, episode="g", format=_TextFormat(), context=lambda: context
    )
    for _ in range(80):
        await json_model.generate(_msgs())
        await text_model.generate(_msgs())
    assert [(i.call, i.kind) for i in json_model.injections] == [(i.call, i.kind) for i in text_model.injections]
    assert json_model.injections, "the schedule should err somewhere in 80 calls at rate 0.4"
    for a, b in zip(json_model.injections, text_model.injections, strict=True):
        if a.kind == "hallucinated":
            assert json.loads(a.text)["command"] == b.text
        if a.kind == "false_claim":
            assert json.loads(a.text)["command"] == b.text == CLAIM


async def test_no_error_passes_the_reply_through_untouched() -> None:
    inner = ScriptedModel(["hello"])
    model = ErringModel(inner, ErrorSchedule(0.0), episode="e", format=_Format())
    gen = await model.generate(_msgs())
    assert gen.text == "hello" and model.injections == [] and model.name == inner.name
