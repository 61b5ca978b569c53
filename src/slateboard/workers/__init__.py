"""Workers: what proposes patches. LLM workers, plain Python functions, tool-using workers.

A worker reads a bounded view and returns a WorkerReply holding a *candidate* patch; it never
writes the state (the kernel decides). ``make_worker(blueprint, name)`` builds the right kind
from the blueprint's WorkerSpec. LLM workers use contract-constrained decoding by default
(``slateboard.workers.constrain``): the model can only emit patches the kernel authorises,
with values typed by the schema. Model, tool and function failures never crash a worker: they
become replies that the kernel rejects at stage ``parse``, with the error in the diagnostics.
"""

from .base import DEFAULT_COMPONENT, Feedback, Worker, WorkerConfigError, WorkerReply, feedback_lines
from .constrain import (
    ANY_VALUE,
    PATCH_KEY,
    ConstrainedSchema,
    Target,
    generic_patch_schema,
    proposal_schema,
    sketch_state,
    write_targets,
)
from .factory import make_worker, make_workers
from .function import FunctionWorker, function_worker, resolve_function
from .llm import Decoding, LLMWorker
from .parse import ParsedReply, ToolCall, parse_reply
from .prompt import build_messages, example_patch, example_value
from .tools import Tool, ToolResult, tool

__all__ = [
    "ANY_VALUE",
    "DEFAULT_COMPONENT",
    "PATCH_KEY",
    "ConstrainedSchema",
    "Decoding",
    "Feedback",
    "FunctionWorker",
    "LLMWorker",
    "ParsedReply",
    "Target",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Worker",
    "WorkerConfigError",
    "WorkerReply",
    "build_messages",
    "example_patch",
    "example_value",
    "feedback_lines",
    "function_worker",
    "generic_patch_schema",
    "make_worker",
    "make_workers",
    "parse_reply",
    "proposal_schema",
    "resolve_function",
    "sketch_state",
    "tool",
    "write_targets",
]
