"""Workers: what proposes patches. LLM workers, plain Python functions, tool-using workers.

A worker reads a bounded view and returns a WorkerReply holding a *candidate* patch; it never
writes the state (the kernel decides). ``make_worker(blueprint, name)`` builds the right kind
from the blueprint's WorkerSpec. LLM workers use contract-constrained decoding by default
(``slateboard.workers.constrain``): the model can only emit patches the kernel authorises,
with values typed by the schema. Model, tool and function failures never crash a worker: they
become replies that the kernel rejects at stage ``parse``, with the error in the diagnostics.
"""

from .base import Feedback, Worker, WorkerConfigError, WorkerReply, feedback_lines
from .factory import make_worker, make_workers
from .function import FunctionWorker, function_worker
from .llm import Decoding, LLMWorker
from .tools import Tool, ToolResult, tool

__all__ = [
    "Decoding",
    "Feedback",
    "FunctionWorker",
    "LLMWorker",
    "Tool",
    "ToolResult",
    "Worker",
    "WorkerConfigError",
    "WorkerReply",
    "feedback_lines",
    "function_worker",
    "make_worker",
    "make_workers",
    "tool",
]
