"""The runtime: drive boards from a store with workers, a control unit and the circuit policy."""

from .events import RunEvent
from .result import RunResult, TokenUsage
from .runner import Runner, RunnerError, create_board

__all__ = ["RunEvent", "RunResult", "Runner", "RunnerError", "TokenUsage", "create_board"]
