"""One small async protocol over model providers.

`resolve_model("openai:gpt-4o-mini")` (or `anthropic:...`, `local`, `scripted:[...]`,
`replay:file.jsonl`) returns a `Model`; `await model.generate(messages, json_schema=...)` returns
a `Generation` whose token usage is always present (reported, or estimated and marked so).
Importing this package never imports llama_cpp; only using the `local` provider does.
"""

from slateboard.models.anthropic import AnthropicModel
from slateboard.models.errors import (
    ModelAuthError,
    ModelBadResponse,
    ModelConfigError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestError,
    ModelSchemaRefused,
    ModelScriptError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
)
from slateboard.models.openai_compat import OpenAICompatModel, StructuredOutput
from slateboard.models.protocol import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    DEFAULT_TIMEOUT,
    Generation,
    GenerationUsage,
    Message,
    Model,
    Role,
)
from slateboard.models.registry import resolve_model
from slateboard.models.retry import RetryPolicy
from slateboard.models.scripted import RecordingModel, ReplayModel, ScriptedModel

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "DEFAULT_TIMEOUT",
    "AnthropicModel",
    "Generation",
    "GenerationUsage",
    "Message",
    "Model",
    "ModelAuthError",
    "ModelBadResponse",
    "ModelConfigError",
    "ModelError",
    "ModelNotFound",
    "ModelRateLimited",
    "ModelRequestError",
    "ModelSchemaRefused",
    "ModelScriptError",
    "ModelServerError",
    "ModelTimeout",
    "ModelUnavailable",
    "OpenAICompatModel",
    "RecordingModel",
    "ReplayModel",
    "RetryPolicy",
    "Role",
    "ScriptedModel",
    "StructuredOutput",
    "resolve_model",
]
