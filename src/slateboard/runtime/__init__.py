"""The runtime: drive boards from a store with workers, a control unit and the circuit policy;
runner processes (``RunnerProcess``, ``submit``, ``wait``) share boards through PostgreSQL."""

from .approval import ApprovalError, Held, approve, held_proposals, refuse
from .boards import board_result
from .distributed import RunnerProcess, RunnerStats, WaitTimeout, resolve_runner_model, submit, wait
from .events import RunEvent
from .result import RunResult, TokenUsage
from .runner import Runner, RunnerError, create_board
from .session import BoardSession
from .verify import verify_board
from .watch import WatchPastEnd, watch

__all__ = [
    "ApprovalError",
    "BoardSession",
    "Held",
    "RunEvent",
    "RunResult",
    "Runner",
    "RunnerError",
    "RunnerProcess",
    "RunnerStats",
    "TokenUsage",
    "WaitTimeout",
    "WatchPastEnd",
    "approve",
    "board_result",
    "create_board",
    "held_proposals",
    "refuse",
    "resolve_runner_model",
    "submit",
    "verify_board",
    "wait",
    "watch",
]
