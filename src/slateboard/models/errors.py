"""Typed errors raised by every model provider.

Two meanings, in two branches of the error tree: `ModelConfigError` (a `UsageError`) is a model
that cannot be used as configured, found before any call (a bad model string, a missing key or
weights file); every failure of a call under way is a `ModelError` (a `RunError`), which the LLM
worker, a team's agents and the coordinator turn into a logged rejection at stage ``model``
rather than a crash (`ModelAuthError` for a key the provider refuses during a call).
Callers branch on the class, never on message text: the retry loop retries exactly
`ModelRateLimited`, `ModelServerError` and `ModelUnavailable`; everything else is final.
"""

from __future__ import annotations

from ..errors import RunError, UsageError
from ..redaction import redact

__all__ = [
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
]

# Server bodies can be whole HTML pages; an error message must stay one readable line.
_MAX_DETAIL_CHARS = 300


def one_line(text: str, limit: int = _MAX_DETAIL_CHARS) -> str:
    """Collapse `text` to a single line of at most `limit` characters (an ellipsis marks a cut)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _redacted(model: str, detail: str) -> tuple[str, str]:
    # A provider's error body or a URL may carry a key: the message is redacted once here, so
    # no record, prompt, span or CLI line built from it holds a secret.
    return redact(model), redact(one_line(detail))


class ModelConfigError(UsageError):
    """The model cannot be used as configured, found before any call: a bad model string, a
    missing API key or weights file, an unusable URL, a missing optional dependency.

    A usage error, not a `ModelError`: nothing is retried or turned into a rejection, the caller
    must change the configuration (the CLI exits with status 2). `model` is the model string
    (redacted), `detail` what was wrong; the message is one line, ``MODEL: DETAIL``.
    """

    def __init__(self, model: str, detail: str) -> None:
        self.model, self.detail = _redacted(model, detail)
        super().__init__(f"{self.model}: {self.detail}")


class ModelError(RunError):
    """Base of every failure of a model call under way; the message is one line naming the model
    string and the cause.

    `model` is the model string that failed, `detail` what was wrong, and `status` the HTTP
    status when the failure came from an HTTP reply (otherwise None).
    """

    def __init__(self, model: str, detail: str, *, status: int | None = None) -> None:
        self.model, self.detail = _redacted(model, detail)
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


class ModelAuthError(ModelError):
    """The provider refused the API key during a call (HTTP 401 or 403: missing, wrong, revoked or
    without access to the model); not retried. The key itself is never in the message."""


class ModelNotFound(ModelError):
    """The model the string names is not there to serve a call: the provider answered 404
    (unknown model or endpoint), the request URL could not be used, or local weights that
    exist did not load; not retried."""


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


class ModelScriptError(ModelError):
    """A scripted or replayed model has no reply for this call (script exhausted, or no
    recording under this call's key)."""
