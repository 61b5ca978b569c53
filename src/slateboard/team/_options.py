"""The options of ``Team.blackboard`` as one frozen pydantic model, validated in one pass.

``Team.__init__`` calls ``TeamOptions.of(...)`` with its keywords. pydantic checks every option
(its type, its constraints, then its validator) and collects every problem; ``_translated`` turns
them into our errors, each naming the keyword it is about, and this is the only place a pydantic
error is read: none reaches the caller, nor its documentation URL. One problem is raised as
itself (``TypeError`` for a value of the wrong type, ``InvalidInput`` for a value out of range,
``ModelConfigError`` for a model string that can never resolve), so a caller catching either
keeps working; several are raised together as one ``InvalidInput`` that is also a ``TypeError``,
its message listing each, in the order of the keywords.

A check that builds on another option (``parallel=True`` needs ``coordinator=None``,
``untrusted`` names agents of ``agents``, ``sanitiser`` needs ``untrusted``) is the later
option's validator and reads the earlier ones that passed (pydantic's ``info.data``): when the
option it builds on is itself a problem, it is not run, so a problem is never reported twice.

What pydantic checks: the integers (``max_rounds``, ``view_budget``: strict ``int``, so no bool,
float or numeric string, and ``ge=1``), ``parallel`` (strict ``bool``), the callables
(``on_event``, ``clock``, ``approval``, ``sanitiser``) and the instance types (``Agent``,
``Store``, mappings, strings). What stays hand-written, as validators, and why:

- strings are checked with ``isinstance`` (``InstanceOf[str]``), not pydantic's ``str``, which
  refuses a string holding a lone surrogate that Python holds (and that was accepted before);
  so ``name``'s non-blank rule is ``str.strip`` in a validator, not a ``pattern`` (a regex
  engine's whitespace class is not Python's);
- ``untrusted`` and ``approval_paths`` take any iterable of strings but a string (a list, tuple,
  set, dict's keys): pydantic's sequence types refuse some of those and copy the others;
- ``agents`` (names the board can hold, values that are Agents), ``model`` (a string in an
  accepted form) and ``circuit``'s ``max_repeats`` call the checks the rest of the package uses
  or keep their own message.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Any, TypeGuard

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, InstanceOf, ValidationError, ValidationInfo
from pydantic_core import PydanticCustomError

from ..errors import InvalidInput, UsageError
from ..stores.base import Store
from ._agent_spec import Agent
from ._board import check_agent_names
from ._compat import check_model
from ._control import DEFAULT_MAX_REPEATS

__all__ = ["TeamOptions"]


class _Problems(InvalidInput, TypeError):
    """Several problems with a team's options, reported together (both error kinds, so code
    catching the one a single problem would raise still catches it)."""


# -- our messages for pydantic's own checks ------------------------------------------------------
_OURS = "slateboard_team_option"
"""The pydantic error type of a problem our validators found: its context holds our error."""

_Message = tuple[type[Exception], str]
_VIEW_BUDGET: _Message = (InvalidInput, "view_budget must be a positive number of characters, got {value!r}")
_NAME: _Message = (InvalidInput, "name must be a non-empty string, got {value!r}")

_MESSAGES: Mapping[tuple[str, str], _Message] = {
    # (keyword, pydantic error type) -> our error and its message; {type} is the type name of the
    # value given and {value!r} the value.
    ("agents", "is_instance_of"): (
        TypeError,
        "agents must be a mapping of names to Agents (agents={{'name': Agent(...)}}), got {type}",
    ),
    ("max_rounds", "int_type"): (TypeError, "max_rounds must be an integer, got {type}"),
    ("max_rounds", "greater_than_equal"): (InvalidInput, "max_rounds must be >= 1"),
    ("coordinator", "is_instance_of"): (TypeError, "coordinator must be an Agent or None, got {type}"),
    ("decider", "is_instance_of"): (TypeError, "decider must be an Agent or None, got {type}"),
    ("coordinator_instructions", "is_instance_of"): (
        TypeError,
        "coordinator_instructions must be a string or None, got {type}",
    ),
    ("decider_instructions", "is_instance_of"): (
        TypeError,
        "decider_instructions must be a string or None, got {type}",
    ),
    ("store", "is_instance_of"): (TypeError, "store must be a Store or a store URL, got {type}"),
    ("on_event", "callable_type"): (TypeError, "on_event must be callable, got {type}"),
    ("clock", "callable_type"): (
        TypeError,
        "clock must be a zero-argument callable returning a datetime, got {type}",
    ),
    ("view_budget", "int_type"): _VIEW_BUDGET,
    ("view_budget", "greater_than_equal"): _VIEW_BUDGET,
    ("name", "is_instance_of"): _NAME,
    ("parallel", "bool_type"): (TypeError, "parallel must be True or False, got {type}"),
    ("sanitiser", "callable_type"): (
        TypeError,
        "sanitiser must be a callable releasing a quarantined entry, got {type}",
    ),
    ("approval", "callable_type"): (TypeError, "approval must be a callable deciding an ApprovalRequest, got {type}"),
    ("circuit", "is_instance_of"): (TypeError, "circuit must be a mapping of circuit policy settings, got {type}"),
}


def _translated(error: ValidationError) -> Exception:
    """Our error for pydantic's report: the first problem of each keyword (a union type reports
    one per member), in the keywords' order; one is itself, several are one ``_Problems``."""
    firsts: dict[str, Exception] = {}
    for item in error.errors(include_url=False):
        keyword = str(item["loc"][0]) if item["loc"] else ""
        if keyword in firsts:
            continue
        ctx = item.get("ctx") or {}
        found = ctx.get("error")
        if item["type"] == _OURS and isinstance(found, Exception):
            firsts[keyword] = found
            continue
        value = item["input"]
        kind, message = _MESSAGES.get((keyword, item["type"]), (InvalidInput, keyword + ": {msg}"))
        firsts[keyword] = kind(message.format(type=type(value).__name__, value=value, msg=item["msg"]))
    problems = list(firsts.values())
    if len(problems) == 1:
        return problems[0]
    return _Problems(f"Team.blackboard: {len(problems)} problems: " + "; ".join(str(p) for p in problems))


# -- the hand-written checks (see the module docstring for why each is one) ----------------------
_Check = Callable[[Any, ValidationInfo], None]


def _check(check: _Check) -> AfterValidator:
    """A pydantic validator running ``check``, which raises our error for its one problem: the
    error travels in pydantic's report (``_OURS``) to ``_translated``, which raises it as is."""

    def validator(value: Any, info: ValidationInfo) -> Any:
        try:
            check(value, info)
        except (TypeError, UsageError) as exc:
            # Our message stays out of pydantic's template: pydantic would encode it as UTF-8,
            # which a lone surrogate in a model string (a Python str) cannot be.
            raise PydanticCustomError(_OURS, "see the error in the context", {"error": exc}) from None
        return value

    return AfterValidator(validator)


def _agents(agents: Mapping[Any, Any], _info: ValidationInfo) -> None:
    if not agents:
        raise InvalidInput("Blackboard requires at least one agent")
    check_agent_names(list(agents))
    for n, a in agents.items():
        if not isinstance(a, Agent):
            raise TypeError(f"agent {n!r} must be an Agent, got {type(a).__name__}")


def _coordinator(coordinator: Agent | None, _info: ValidationInfo) -> None:
    if coordinator is not None and coordinator.output_type is not None:
        raise InvalidInput(
            "the coordinator cannot have an output_type: its replies are the team's decisions; "
            "give output_type to an agent or the decider"
        )


def _model(model: object, _info: ValidationInfo) -> None:
    check_model(model, "Team.blackboard")


def _name(name: str, _info: ValidationInfo) -> None:
    if not name.strip():
        kind, message = _NAME
        raise kind(message.format(value=name))


def _parallel(parallel: bool, info: ValidationInfo) -> None:
    # A coordinator that failed its own check is missing here, and was not None (None passes).
    coordinator_given = "coordinator" not in info.data or info.data["coordinator"] is not None
    if parallel and coordinator_given:
        raise InvalidInput(
            "parallel=True needs coordinator=None: a coordinator names one agent per round, and a "
            "parallel round gives every agent a turn (drop the coordinator, or run with parallel=False)"
        )


def _names(value: object) -> TypeGuard[Iterable[str] | None]:
    return value is None or (
        not isinstance(value, str) and isinstance(value, Iterable) and all(isinstance(n, str) for n in value)
    )


def _untrusted(untrusted: object, info: ValidationInfo) -> None:
    if not _names(untrusted):
        raise TypeError(f"untrusted must be a list of agent names, got {untrusted!r}")
    agents = info.data.get("agents")
    if not isinstance(agents, Mapping):
        return  # the agents are a problem of their own
    names = tuple(untrusted or ())
    strangers = [n for n in names if n not in agents]
    if strangers:
        raise InvalidInput(f"untrusted names agents the team does not have: {strangers!r} (agents: {list(agents)!r})")
    typed = [n for n in dict.fromkeys(names) if agents[n].output_type is not None]
    if typed:
        raise InvalidInput(
            f"untrusted agents {typed!r} cannot have an output_type: their replies go to quarantine as text"
        )


def _sanitiser(sanitiser: object, info: ValidationInfo) -> None:
    # Only when untrusted passed its check; tuple(): what Team keeps of it (an exhausted
    # iterator names no one).
    if sanitiser is not None and "untrusted" in info.data and not tuple(info.data["untrusted"] or ()):
        raise InvalidInput("sanitiser= needs untrusted=[...]: with no untrusted agent nothing is quarantined")


def _approval_paths(paths: object, _info: ValidationInfo) -> None:
    if not _names(paths):
        raise TypeError(f"approval_paths must be a list of path patterns, got {paths!r}")


def _circuit(circuit: Mapping[str, Any] | None, _info: ValidationInfo) -> None:
    repeats = DEFAULT_MAX_REPEATS if circuit is None else circuit.get("max_repeats", DEFAULT_MAX_REPEATS)
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 0:
        raise InvalidInput(f"circuit max_repeats must be an integer >= 0 (0: off), got {repeats!r}")


_Callback = Callable[..., Any] | None
_Text = InstanceOf[str] | None


class TeamOptions(BaseModel):
    """The keywords of ``Team.blackboard``, every one checked: built only by ``of``, which
    raises our errors (see the module docstring). The fields are in the keywords' order, the
    order problems are reported in; a field's validator sees the fields before it that passed."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True, strict=True)

    agents: Annotated[InstanceOf[Mapping[Any, Any]], _check(_agents)]
    max_rounds: Annotated[int, Field(ge=1)] = 10
    coordinator: Annotated[InstanceOf[Agent] | None, _check(_coordinator)] = None
    decider: InstanceOf[Agent] | None = None
    model: Annotated[object, _check(_model)] = None
    coordinator_instructions: _Text = None
    decider_instructions: _Text = None
    store: InstanceOf[str] | InstanceOf[Store] | None = None
    on_event: _Callback = None
    clock: _Callback = None
    view_budget: Annotated[int, Field(ge=1)] = 100_000
    name: Annotated[InstanceOf[str], _check(_name)] = "blackboard"
    parallel: Annotated[bool, _check(_parallel)] = False
    untrusted: Annotated[object, _check(_untrusted)] = None
    sanitiser: Annotated[_Callback, _check(_sanitiser)] = None
    approval: _Callback = None
    approval_paths: Annotated[object, _check(_approval_paths)] = None
    circuit: Annotated[InstanceOf[Mapping[str, Any]] | None, _check(_circuit)] = None

    @classmethod
    def of(cls, **options: object) -> TeamOptions:
        """The options, when every one is usable; otherwise raise naming every problem (one:
        itself; several: one error that is both an ``InvalidInput`` and a ``TypeError``)."""
        try:
            return cls.model_validate(options)
        except ValidationError as exc:
            error = _translated(exc)
        # Raised outside the except clause: the pydantic report (and its URLs) is not even the
        # error's __context__.
        raise error
