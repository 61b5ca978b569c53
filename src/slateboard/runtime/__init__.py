"""The runtime: drive boards from a store with workers, a control unit and the circuit policy."""

from .approval import ApprovalError, Held, approve, held_proposals, refuse
from .events import RunEvent
from .result import RunResult, TokenUsage
from .runner import Runner, RunnerError, create_board

__all__ = [
    "ApprovalError",
    "Held",
    "RunEvent",
    "RunResult",
    "Runner",
    "RunnerError",
    "TokenUsage",
    "approve",
    "create_board",
    "held_proposals",
    "refuse",
]
