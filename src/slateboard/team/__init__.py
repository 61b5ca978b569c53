"""Teams of agents on a shared board: ``Team.blackboard`` (the classic blackboard architecture).

Usage::

    from slateboard.team import Agent, Team

    team = Team.blackboard(
        {"hypothesis": Agent("Propose hypotheses."), "critic": Agent("Critique them.")},
        coordinator=Agent("Decide who contributes next, or terminate."),
        decider=Agent("Write the final answer."),
        model="gpt-4o-mini",  # bare names, litellm provider/model and PROVIDER:MODEL all work
    )
    result = await team.run("Investigate why retention dropped in March.")
    print(result.value, result.turns, result.tokens_in, result.tokens_out)

Seed 004 (loomflow's documented blackboard) runs as written with the package renamed in its
imports; loomflow keywords slateboard does not take are refused at construction with the
equivalent to use (README, "Coming from loomflow").

Every contribution is a proposal the kernel validates and logs: the board's log verifies with
``slateboard.kernel.replay`` like any other board. Events (``blackboard.started``,
``.coordinator_decided``, ``.no_contributor``, ``.unknown_agent``, ``.invoking``,
``.contribution``, ``.rejected``, ``.approval``, ``.halted``, ``.decider_failed``, ``.completed``,
and ``budget.exceeded``)
reach ``on_event`` callbacks, ``team.events()`` subscribers and ``team.stream(prompt)``.
"""

from ._agent import DEFAULT_DECIDER_INSTRUCTIONS
from ._agent_spec import Agent
from ._board import blackboard_blueprint, make_entry
from ._coordinate import DEFAULT_COORDINATOR_INSTRUCTIONS, ROUND_ROBIN_RAW
from ._team import (
    BLACKBOARD_EVENTS,
    BUDGET_EXCEEDED,
    ApprovalRequest,
    Budget,
    BudgetPolicy,
    BudgetStatus,
    EventCallback,
    ResumeError,
    Spend,
    Team,
    TeamResult,
    TeamStream,
)

# What a user of teams touches: building one (Team, Agent, the default instructions), its
# budget and approval hooks, its result and stream, its events, and the board it writes
# (blackboard_blueprint, make_entry, ROUND_ROBIN_RAW for reading its log). The workers, the
# coordinator's prompt and parsing, and the board's reserved authors stay in the private
# modules (issue 35: they had no user outside this package).
__all__ = [
    "BLACKBOARD_EVENTS",
    "BUDGET_EXCEEDED",
    "DEFAULT_COORDINATOR_INSTRUCTIONS",
    "DEFAULT_DECIDER_INSTRUCTIONS",
    "ROUND_ROBIN_RAW",
    "Agent",
    "ApprovalRequest",
    "Budget",
    "BudgetPolicy",
    "BudgetStatus",
    "EventCallback",
    "ResumeError",
    "Spend",
    "Team",
    "TeamResult",
    "TeamStream",
    "blackboard_blueprint",
    "make_entry",
]
