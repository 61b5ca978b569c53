"""The options of ``Team.blackboard`` as one frozen object with one validation pass.

``Team.__init__`` builds a ``TeamOptions`` from its keywords and calls ``validate``: every
problem is found in one pass and reported at once, each naming the keyword it is about. One
problem is raised as itself (``TypeError`` for a value of the wrong type, ``InvalidInput`` for
a value out of range, ``ModelConfigError`` for a model string that can never resolve), so a
caller catching either keeps working; several are raised together as one ``InvalidInput`` that is
also a ``TypeError``, its message listing each.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class TeamOptions:
    """The keywords of ``Team.blackboard`` as given (unchecked until ``validate``)."""

    agents: object
    coordinator: object = None
    decider: object = None
    model: object = None
    max_rounds: object = 10
    coordinator_instructions: object = None
    decider_instructions: object = None
    store: object = None
    on_event: object = None
    clock: object = None
    view_budget: object = 100_000
    name: object = "blackboard"
    approval: object = None
    approval_paths: object = None
    circuit: object = None
    parallel: object = False
    untrusted: object = None
    sanitiser: object = None

    def validate(self) -> None:
        """Return when every option is usable; otherwise raise naming every problem (see the
        module docstring for the exception raised)."""
        problems: list[Exception] = []
        for check in self._checks():
            try:
                check()
            except (TypeError, UsageError) as exc:
                problems.append(exc)
        if len(problems) == 1:
            raise problems[0]
        if problems:
            raise _Problems(f"Team.blackboard: {len(problems)} problems: " + "; ".join(str(p) for p in problems))

    def _checks(self) -> Iterator[Callable[[], None]]:
        # Each check raises its one problem; those whose premise failed (the agents are not a
        # mapping) are not run, so a problem is never reported twice.
        yield self._check_agents
        yield self._check_max_rounds
        yield self._check_members
        yield lambda: check_model(self.model, "Team.blackboard")
        yield self._check_instructions
        yield lambda: _require(
            self.store is None or isinstance(self.store, str | Store),
            TypeError,
            f"store must be a Store or a store URL, got {type(self.store).__name__}",
        )
        yield lambda: _require(
            self.on_event is None or callable(self.on_event),
            TypeError,
            f"on_event must be callable, got {type(self.on_event).__name__}",
        )
        yield lambda: _require(
            self.clock is None or callable(self.clock),
            TypeError,
            f"clock must be a zero-argument callable returning a datetime, got {type(self.clock).__name__}",
        )
        yield lambda: _require(
            _is_int(self.view_budget) and self.view_budget >= 1,  # type: ignore[operator]
            InvalidInput,
            f"view_budget must be a positive number of characters, got {self.view_budget!r}",
        )
        yield lambda: _require(
            isinstance(self.name, str) and bool(self.name.strip()),
            InvalidInput,
            f"name must be a non-empty string, got {self.name!r}",
        )
        yield self._check_parallel
        yield self._check_untrusted
        yield self._check_approval
        yield self._check_circuit

    def _check_agents(self) -> None:
        agents = self.agents
        if not isinstance(agents, Mapping):
            raise TypeError(
                f"agents must be a mapping of names to Agents (agents={{'name': Agent(...)}}), got {type(agents).__name__}"
            )
        if not agents:
            raise InvalidInput("Blackboard requires at least one agent")
        check_agent_names(list(agents))
        for n, a in agents.items():
            if not isinstance(a, Agent):
                raise TypeError(f"agent {n!r} must be an Agent, got {type(a).__name__}")

    def _check_max_rounds(self) -> None:
        if not _is_int(self.max_rounds):
            raise TypeError(f"max_rounds must be an integer, got {type(self.max_rounds).__name__}")
        if self.max_rounds < 1:  # type: ignore[operator]
            raise InvalidInput("max_rounds must be >= 1")

    def _check_members(self) -> None:
        for role, member in (("coordinator", self.coordinator), ("decider", self.decider)):
            if member is not None and not isinstance(member, Agent):
                raise TypeError(f"{role} must be an Agent or None, got {type(member).__name__}")
        if isinstance(self.coordinator, Agent) and self.coordinator.output_type is not None:
            raise InvalidInput(
                "the coordinator cannot have an output_type: its replies are the team's decisions; "
                "give output_type to an agent or the decider"
            )

    def _check_instructions(self) -> None:
        for label, text in (
            ("coordinator_instructions", self.coordinator_instructions),
            ("decider_instructions", self.decider_instructions),
        ):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{label} must be a string or None, got {type(text).__name__}")

    def _check_parallel(self) -> None:
        if not isinstance(self.parallel, bool):
            raise TypeError(f"parallel must be True or False, got {type(self.parallel).__name__}")
        if self.parallel and self.coordinator is not None:
            raise InvalidInput(
                "parallel=True needs coordinator=None: a coordinator names one agent per round, and a "
                "parallel round gives every agent a turn (drop the coordinator, or run with parallel=False)"
            )

    def _check_untrusted(self) -> None:
        untrusted, agents = self.untrusted, self.agents
        if untrusted is not None and (
            isinstance(untrusted, str)
            or not isinstance(untrusted, Iterable)
            or not all(isinstance(n, str) for n in untrusted)
        ):
            raise TypeError(f"untrusted must be a list of agent names, got {untrusted!r}")
        names: tuple[str, ...] = tuple(untrusted or ())
        if isinstance(agents, Mapping):
            strangers = [n for n in names if n not in agents]
            if strangers:
                raise InvalidInput(
                    f"untrusted names agents the team does not have: {strangers!r} (agents: {list(agents)!r})"
                )
        if self.sanitiser is not None and not callable(self.sanitiser):
            raise TypeError(
                f"sanitiser must be a callable releasing a quarantined entry, got {type(self.sanitiser).__name__}"
            )
        if self.sanitiser is not None and not names:
            raise InvalidInput("sanitiser= needs untrusted=[...]: with no untrusted agent nothing is quarantined")
        if isinstance(agents, Mapping):
            typed = [n for n in dict.fromkeys(names) if isinstance(a := agents[n], Agent) and a.output_type is not None]
            if typed:
                raise InvalidInput(
                    f"untrusted agents {typed!r} cannot have an output_type: their replies go to quarantine as text"
                )

    def _check_approval(self) -> None:
        if self.approval is not None and not callable(self.approval):
            raise TypeError(
                f"approval must be a callable deciding an ApprovalRequest, got {type(self.approval).__name__}"
            )
        paths = self.approval_paths
        if paths is not None and (
            isinstance(paths, str) or not isinstance(paths, Iterable) or not all(isinstance(p, str) for p in paths)
        ):
            raise TypeError(f"approval_paths must be a list of path patterns, got {paths!r}")

    def _check_circuit(self) -> None:
        if self.circuit is None:
            return
        if not isinstance(self.circuit, Mapping):
            raise TypeError(f"circuit must be a mapping of circuit policy settings, got {type(self.circuit).__name__}")
        repeats = self.circuit.get("max_repeats", DEFAULT_MAX_REPEATS)
        if not _is_int(repeats) or repeats < 0:
            raise InvalidInput(f"circuit max_repeats must be an integer >= 0 (0: off), got {repeats!r}")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _require(ok: bool, kind: type[Exception], message: str) -> None:
    if not ok:
        raise kind(message)
