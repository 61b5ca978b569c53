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

from ._agent import (
    DEFAULT_DECIDER_INSTRUCTIONS,
    Agent,
    AgentReply,
    AgentWorker,
    DeciderWorker,
    fallback_answer,
    render_board,
    run_agent,
)
from ._board import (
    DECIDER_WORKER,
    RESERVED_AUTHORS,
    SYSTEM_AUTHOR,
    SYSTEM_WORKER,
    USER_AUTHOR,
    blackboard_blueprint,
    make_entry,
)
from ._coordinate import (
    DEFAULT_COORDINATOR_INSTRUCTIONS,
    ROUND_ROBIN_RAW,
    CoordinatorDecision,
    coordinator_prompt,
    coordinator_schema,
    parse_coordinator_decision,
    round_robin_decision,
)
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

__all__ = [
    "BLACKBOARD_EVENTS",
    "BUDGET_EXCEEDED",
    "DECIDER_WORKER",
    "DEFAULT_COORDINATOR_INSTRUCTIONS",
    "DEFAULT_DECIDER_INSTRUCTIONS",
    "RESERVED_AUTHORS",
    "ROUND_ROBIN_RAW",
    "SYSTEM_AUTHOR",
    "SYSTEM_WORKER",
    "USER_AUTHOR",
    "Agent",
    "AgentReply",
    "AgentWorker",
    "ApprovalRequest",
    "Budget",
    "BudgetPolicy",
    "BudgetStatus",
    "CoordinatorDecision",
    "DeciderWorker",
    "EventCallback",
    "ResumeError",
    "Spend",
    "Team",
    "TeamResult",
    "TeamStream",
    "blackboard_blueprint",
    "coordinator_prompt",
    "coordinator_schema",
    "fallback_answer",
    "make_entry",
    "parse_coordinator_decision",
    "render_board",
    "round_robin_decision",
    "run_agent",
]
