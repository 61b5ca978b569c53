"""The options of ``Team.blackboard`` (``team._options.TeamOptions``, a pydantic model): every
bad value of an option raises our error (its type and message naming the keyword, as before
pydantic), never a pydantic ``ValidationError``; several bad options are one error listing each,
in the keywords' order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from slateboard.errors import InvalidInput
from slateboard.models import ModelConfigError, ScriptedModel
from slateboard.stores.memory import MemoryStore
from slateboard.team import Agent, Team
from slateboard.team._options import TeamOptions

AGENT = Agent("x", model=ScriptedModel(["hi"]))
AGENTS = {"a": AGENT}
ci = settings(derandomize=True, database=None, deadline=None, max_examples=60)

# Values of every kind, for drawing the ones an option refuses.
anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=4),
    st.binary(max_size=2),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just(AGENT),
    st.just(print),
    st.just(object()),
)


def _raised(**options: Any) -> Exception:
    """The error ``TeamOptions.of`` raises for ``options`` (with one valid agent unless given),
    checked to be ours: no pydantic error, not even as its context, and no pydantic URL."""
    options.setdefault("agents", AGENTS)
    with pytest.raises(Exception) as caught:
        TeamOptions.of(**options)
    error = caught.value
    assert not isinstance(error, ValidationError)
    assert error.__context__ is None and error.__cause__ is None
    assert "pydantic" not in str(error)
    return error


def _single(error: Exception, kind: type[Exception], message: str) -> None:
    assert type(error) is kind, error
    assert str(error) == message


def _typename(value: object) -> str:
    return type(value).__name__


# -- one bad option: its own error and message ----------------------------------------------------
@ci
@given(anything.filter(lambda v: isinstance(v, bool) or not isinstance(v, int)))
def test_max_rounds_of_another_type(value: object) -> None:
    _single(_raised(max_rounds=value), TypeError, f"max_rounds must be an integer, got {_typename(value)}")


@ci
@given(st.integers(max_value=0))
def test_max_rounds_below_one(value: int) -> None:
    _single(_raised(max_rounds=value), InvalidInput, "max_rounds must be >= 1")


@ci
@given(st.one_of(st.integers(max_value=0), anything.filter(lambda v: isinstance(v, bool) or not isinstance(v, int))))
def test_view_budget_not_a_positive_integer(value: object) -> None:
    # A wrong type is an InvalidInput here too, as before.
    _single(
        _raised(view_budget=value), InvalidInput, f"view_budget must be a positive number of characters, got {value!r}"
    )


@ci
@given(st.one_of(anything.filter(lambda v: not isinstance(v, str)), st.text(alphabet=" \t\n\x0b\x1c\x85\u3000")))
def test_name_not_a_non_blank_string(value: object) -> None:
    # Python's whitespace (str.strip): \x1c and \x85 are blank too.
    _single(_raised(name=value), InvalidInput, f"name must be a non-empty string, got {value!r}")


@ci
@given(anything.filter(lambda v: not isinstance(v, bool)))
def test_parallel_not_a_bool(value: object) -> None:
    _single(_raised(parallel=value), TypeError, f"parallel must be True or False, got {_typename(value)}")


@ci
@given(st.sampled_from(["coordinator", "decider"]), anything.filter(lambda v: v is not None and v is not AGENT))
def test_members_not_agents(role: str, value: object) -> None:
    _single(_raised(**{role: value}), TypeError, f"{role} must be an Agent or None, got {_typename(value)}")


@ci
@given(
    st.sampled_from(["coordinator_instructions", "decider_instructions"]),
    anything.filter(lambda v: v is not None and not isinstance(v, str)),
)
def test_instructions_not_strings(keyword: str, value: object) -> None:
    _single(_raised(**{keyword: value}), TypeError, f"{keyword} must be a string or None, got {_typename(value)}")


@ci
@given(anything.filter(lambda v: v is not None and not isinstance(v, str)))
def test_store_neither_a_store_nor_a_url(value: object) -> None:
    _single(_raised(store=value), TypeError, f"store must be a Store or a store URL, got {_typename(value)}")


CALLBACKS = {
    "on_event": "on_event must be callable",
    "clock": "clock must be a zero-argument callable returning a datetime",
    "approval": "approval must be a callable deciding an ApprovalRequest",
    "sanitiser": "sanitiser must be a callable releasing a quarantined entry",
}


@ci
@given(st.sampled_from(sorted(CALLBACKS)), anything.filter(lambda v: v is not None and not callable(v)))
def test_callbacks_not_callable(keyword: str, value: object) -> None:
    _single(_raised(**{keyword: value}), TypeError, f"{CALLBACKS[keyword]}, got {_typename(value)}")


NAME_LISTS = {
    "untrusted": "untrusted must be a list of agent names",
    "approval_paths": "approval_paths must be a list of path patterns",
}


@ci
@given(
    st.sampled_from(sorted(NAME_LISTS)),
    st.one_of(
        st.text(max_size=3),
        st.integers(),
        st.lists(st.one_of(st.integers(), st.none(), st.binary(max_size=1)), min_size=1, max_size=3),
    ),
)
def test_name_lists_not_lists_of_strings(keyword: str, value: object) -> None:
    _single(_raised(**{keyword: value}), TypeError, f"{NAME_LISTS[keyword]}, got {value!r}")


@ci
@given(anything.filter(lambda v: v is not None and not isinstance(v, dict)))
def test_circuit_not_a_mapping(value: object) -> None:
    _single(
        _raised(circuit=value),
        TypeError,
        f"circuit must be a mapping of circuit policy settings, got {_typename(value)}",
    )


@ci
@given(st.one_of(st.integers(max_value=-1), anything.filter(lambda v: isinstance(v, bool) or not isinstance(v, int))))
def test_circuit_max_repeats_not_a_count(value: object) -> None:
    _single(
        _raised(circuit={"max_repeats": value}),
        InvalidInput,
        f"circuit max_repeats must be an integer >= 0 (0: off), got {value!r}",
    )


@ci
@given(anything.filter(lambda v: not isinstance(v, dict)))
def test_agents_not_a_mapping(value: object) -> None:
    _single(
        _raised(agents=value),
        TypeError,
        f"agents must be a mapping of names to Agents (agents={{'name': Agent(...)}}), got {_typename(value)}",
    )


def test_the_checks_built_on_other_options_keep_their_errors() -> None:
    typed = Agent("x", model=ScriptedModel(["1"]), output_type=int)
    cases: list[tuple[dict[str, Any], type[Exception], str]] = [
        ({"agents": {}}, InvalidInput, "Blackboard requires at least one agent"),
        ({"agents": {"a": 3}}, TypeError, "agent 'a' must be an Agent, got int"),
        ({"coordinator": typed}, InvalidInput, "the coordinator cannot have an output_type: its replies are the "),
        ({"parallel": True, "coordinator": AGENT}, InvalidInput, "parallel=True needs coordinator=None: "),
        (
            {"untrusted": ["web"]},
            InvalidInput,
            "untrusted names agents the team does not have: ['web'] (agents: ['a'])",
        ),
        ({"sanitiser": print}, InvalidInput, "sanitiser= needs untrusted=[...]: with no untrusted agent "),
        (
            {"agents": {"a": typed}, "untrusted": ["a"]},
            InvalidInput,
            "untrusted agents ['a'] cannot have an output_type",
        ),
        ({"model": 3}, TypeError, "Team.blackboard: model must be a model string or a Model, got int"),
        ({"model": "nonsense"}, ModelConfigError, "nonsense: not a model string; accepted: "),
    ]
    for options, kind, start in cases:
        error = _raised(**options)
        assert type(error) is kind and str(error).startswith(start), (options, error)


def test_a_model_string_with_a_lone_surrogate_is_our_error() -> None:
    # pydantic cannot encode such a str; the message never goes through it.
    error = _raised(model="\ud800")
    assert isinstance(error, ModelConfigError) and "not a model string" in str(error)


@ci
@given(st.text(max_size=4))
def test_any_python_string_is_a_string(text: str) -> None:
    # Checked with isinstance: pydantic's str would refuse lone surrogates.
    TeamOptions.of(agents=AGENTS, coordinator_instructions=text, decider_instructions=text, store=text)


def test_usable_options_pass() -> None:
    options = TeamOptions.of(
        agents=AGENTS,
        max_rounds=True + 1,
        view_budget=1,
        name=" x ",
        store=MemoryStore(),
        on_event=print,
        untrusted={"a"},
        sanitiser=print,
        approval_paths=("/public/*",),
        circuit={"max_repeats": 0},
    )
    assert options.max_rounds == 2 and options.agents is AGENTS


# -- several bad options: one error listing each ---------------------------------------------------
BAD: dict[str, tuple[object, Callable[[object], str]]] = {
    "max_rounds": ("3", lambda v: f"max_rounds must be an integer, got {_typename(v)}"),
    "decider": ("boss", lambda v: f"decider must be an Agent or None, got {_typename(v)}"),
    "model": (3, lambda v: f"Team.blackboard: model must be a model string or a Model, got {_typename(v)}"),
    "decider_instructions": (5, lambda v: f"decider_instructions must be a string or None, got {_typename(v)}"),
    "store": (3, lambda v: f"store must be a Store or a store URL, got {_typename(v)}"),
    "on_event": ("print", lambda v: f"on_event must be callable, got {_typename(v)}"),
    "view_budget": (0, lambda v: f"view_budget must be a positive number of characters, got {v!r}"),
    "name": ("", lambda v: f"name must be a non-empty string, got {v!r}"),
    "parallel": (1, lambda v: f"parallel must be True or False, got {_typename(v)}"),
    "untrusted": (["web"], lambda v: "untrusted names agents the team does not have: ['web'] (agents: ['a'])"),
    "approval_paths": ("/public/*", lambda v: f"approval_paths must be a list of path patterns, got {v!r}"),
    "circuit": ({"max_repeats": -1}, lambda v: "circuit max_repeats must be an integer >= 0 (0: off), got -1"),
}
ORDER = list(TeamOptions.model_fields)


@ci
@given(st.lists(st.sampled_from(sorted(BAD)), min_size=2, max_size=len(BAD), unique=True))
def test_several_bad_options_are_one_error_listing_each(keywords: list[str]) -> None:
    error = _raised(**{k: BAD[k][0] for k in keywords})
    assert isinstance(error, InvalidInput) and isinstance(error, TypeError)
    expected = [BAD[k][1](BAD[k][0]) for k in sorted(keywords, key=ORDER.index)]
    assert str(error) == f"Team.blackboard: {len(keywords)} problems: " + "; ".join(expected)


def test_team_blackboard_raises_the_same_errors() -> None:
    # The team's constructor goes through TeamOptions.of: the same errors reach its caller.
    with pytest.raises(TypeError) as caught:
        Team.blackboard(AGENTS, max_rounds="3", store=3)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "Team.blackboard: 2 problems: max_rounds must be an integer, got str; store must be a Store or a store URL, got int"
    )
    assert caught.value.__context__ is None
    with pytest.raises(InvalidInput, match=r"^view_budget must be a positive number of characters, got 0$"):
        Team.blackboard(AGENTS, view_budget=0)


def test_one_shot_iterables_are_checked_and_kept() -> None:
    """A generator of names is read once: the check sees it and the team keeps what it saw (it
    used to be used up by the check and then read as empty)."""
    team = Team.blackboard(
        {"a": AGENT, "web": Agent("web", model=ScriptedModel(["hi"]))},
        decider=AGENT,
        untrusted=(n for n in ["web"]),
        approval=lambda request: True,
        approval_paths=(p for p in ["/public/*"]),
    )
    assert team.untrusted == ("web",)
    assert team.approval_paths == ("/public/*",)
    with pytest.raises(InvalidInput, match="untrusted"):
        Team.blackboard(AGENTS, untrusted=(n for n in ["nobody"]))
