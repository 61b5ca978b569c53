"""Typed errors raised by every model provider.

Callers branch on the class, never on message text: the retry loop retries exactly
`ModelRateLimited`, `ModelServerError` and `ModelUnavailable`; everything else is final.
"""

from __future__ import annotations

from ..errors import RunError, UsageError
from ..redaction import redact

__all__ = [
    "ModelBadResponse",
    "ModelConfigError",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestError",
    "ModelSchemaRefused",
    "ModelScriptError",
    "ModelServerError",
    "ModelTimeout",
    "ModelUnavailable",
]

# Server bodies can be whole HTML pages; an error message must stay one readable line.
_MAX_DETAIL_CHARS = 300


def one_line(text: str, limit: int = _MAX_DETAIL_CHARS) -> str:
    """Collapse `text` to a single line of at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class ModelError(RunError):
    """Base of every model failure; the message is one line naming the model string and the cause.

    `model` is the model string that failed, `detail` what was wrong, and `status` the HTTP
    status when the failure came from an HTTP reply (otherwise None).
    """

    def __init__(self, model: str, detail: str, *, status: int | None = None) -> None:
        # A provider's error body or a URL may carry a key: the message is redacted once here,
        # so no record, prompt, span or CLI line built from it holds a secret.
        self.model = redact(model)
        self.detail = redact(one_line(detail))
        self.status = status
        super().__init__(f"{self.model}: {self.detail}")


class ModelUnavailable(ModelError, ConnectionError):
    """The provider could not be reached (connection refused or reset, DNS failure); retryable."""


class ModelTimeout(ModelError, TimeoutError):
    """No complete reply arrived within the call's time budget; not retried."""


class ModelRateLimited(ModelError):
    """The provider answered 429; `retry_after` is the wait in seconds it asked for, if any."""

    def __init__(
        self,
        model: str,
        detail: str,
        *,
        status: int | None = 429,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(model, detail, status=status)
        self.retry_after = retry_after


class ModelServerError(ModelError):
    """The provider answered with a 5xx status; retryable."""


class ModelRequestError(ModelError):
    """The provider refused the request itself (a 4xx other than 401/403/404/429); not retried.

    `code` and `param` are the provider's own classification when its error body carries them
    (OpenAI: `error.code` / `error.param`), so callers branch on them, never on message text.
    """

    def __init__(
        self,
        model: str,
        detail: str,
        *,
        status: int | None = None,
        code: str | None = None,
        param: str | None = None,
    ) -> None:
        super().__init__(model, detail, status=status)
        self.code = code
        self.param = param


class ModelSchemaRefused(ModelRequestError):
    """The provider refused the reply schema itself (its error names `response_format` or a
    schema error code): the same request without a schema may succeed."""


class ModelBadResponse(ModelError):
    """The reply does not follow the provider's protocol (not JSON, no choices, no content...)."""


class ModelConfigError(ModelError, UsageError):
    """The model cannot be used as configured: bad model string, missing or rejected API key,
    unknown model or endpoint, missing local weights or a missing optional dependency."""


class ModelScriptError(ModelError):
    """A scripted or replayed model has no reply for this call (script exhausted, or no
    recording under this call's key)."""
