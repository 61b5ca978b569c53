"""The typed error hierarchy and the mapping from HTTP replies onto it."""

from __future__ import annotations

import email.utils

import httpx
import pytest

from slateboard.errors import RunError, UsageError
from slateboard.models import (
    AnthropicModel,
    ModelAuthError,
    ModelBadResponse,
    ModelConfigError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestError,
    ModelScriptError,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
    OpenAICompatModel,
)
from slateboard.models._http import error_for_status, parse_retry_after, reply_json

MODEL = "openai:gpt-test@http://127.0.0.1:1/v1"


def _response(status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> httpx.Response:
    request = httpx.Request("POST", "http://127.0.0.1:1/v1/chat/completions")
    return httpx.Response(status, content=body, headers=headers, request=request)


@pytest.mark.parametrize(
    "cls",
    [
        ModelUnavailable,
        ModelTimeout,
        ModelRateLimited,
        ModelServerError,
        ModelRequestError,
        ModelBadResponse,
        ModelAuthError,
        ModelNotFound,
        ModelScriptError,
    ],
)
def test_every_error_is_a_model_error_with_a_one_line_message_naming_the_model(
    cls: type[ModelError],
) -> None:
    error = cls(MODEL, "first line\nsecond   line\n\n")
    assert isinstance(error, ModelError)
    assert str(error) == f"{MODEL}: first line second line"
    assert "\n" not in str(error)
    assert error.model == MODEL


def test_a_config_error_is_a_usage_error_and_no_model_error() -> None:
    """Found before any call, a configuration error must not be caught as a failed call (the
    workers' ``except ModelError`` would turn it into rejections); it is one redacted line too."""
    error = ModelConfigError("openai:m@http://user:sk-secret-1@h/v1", "OPENAI_API_KEY is not set\n(needed)")
    assert isinstance(error, UsageError) and not isinstance(error, ModelError | RunError)
    assert str(error) == "openai:m@http://user:***@h/v1: OPENAI_API_KEY is not set (needed)"
    assert "sk-secret-1" not in error.model


@pytest.mark.parametrize(
    "base_url",
    ["ftp://127.0.0.1/v1", "127.0.0.1:8080/v1", "http:///v1", "http://[::1/v1"],
)
def test_a_base_url_no_request_could_use_is_refused_before_any_call(base_url: str) -> None:
    with pytest.raises(ModelConfigError, match="base URL"):
        OpenAICompatModel("m", base_url=base_url)
    with pytest.raises(ModelConfigError, match="base URL"):
        AnthropicModel("m", base_url=base_url)


def test_errors_also_subclass_the_matching_builtin() -> None:
    assert isinstance(ModelTimeout(MODEL, "x"), TimeoutError)
    assert isinstance(ModelUnavailable(MODEL, "x"), ConnectionError)


def test_long_details_are_truncated() -> None:
    error = ModelServerError(MODEL, "<html>" + "x" * 5000)
    assert len(error.detail) <= 300
    assert error.detail.endswith("…")


@pytest.mark.parametrize(
    ("status", "cls"),
    [
        (429, ModelRateLimited),
        (500, ModelServerError),
        (503, ModelServerError),
        (529, ModelServerError),
        (401, ModelAuthError),
        (403, ModelAuthError),
        (404, ModelNotFound),
        (400, ModelRequestError),
        (422, ModelRequestError),
    ],
)
def test_status_codes_map_onto_error_classes(status: int, cls: type[ModelError]) -> None:
    error = error_for_status(MODEL, _response(status, b'{"error": {"message": "nope"}}'))
    assert type(error) is cls
    assert error.status == status
    assert f"HTTP {status}" in str(error)
    assert "nope" in str(error)


@pytest.mark.parametrize(
    "body",
    [
        b'{"error": {"message": "context too long"}}',
        b'{"error": "context too long"}',
        b'{"detail": "context too long"}',
        b'{"type": "error", "error": {"type": "invalid_request_error", "message": "context too long"}}',
        b"context too long",
    ],
)
def test_the_server_message_is_extracted_from_common_error_shapes(body: bytes) -> None:
    assert "context too long" in str(error_for_status(MODEL, _response(400, body)))


def test_rate_limit_carries_retry_after() -> None:
    error = error_for_status(MODEL, _response(429, b"slow down", {"retry-after": "7"}))
    assert isinstance(error, ModelRateLimited)
    assert error.retry_after == 7.0


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "250", "retry-after": "9"})) == 0.25
    assert parse_retry_after(httpx.Headers({"retry-after": "-4"})) == 0.0
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers({})) is None
    date = email.utils.formatdate(1_000_030.0, usegmt=True)
    assert parse_retry_after(httpx.Headers({"retry-after": date}), now=1_000_000.0) == 30.0


def test_reply_json_rejects_non_json_and_non_objects() -> None:
    with pytest.raises(ModelBadResponse, match="not JSON"):
        reply_json(MODEL, _response(200, b"<html>hello</html>"))
    with pytest.raises(ModelBadResponse, match="not an object"):
        reply_json(MODEL, _response(200, b"[1, 2]"))
    with pytest.raises(ModelServerError):
        reply_json(MODEL, _response(502, b"bad gateway"))
    assert reply_json(MODEL, _response(200, b'{"ok": true}')) == {"ok": True}
