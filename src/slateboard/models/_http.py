"""HTTP plumbing shared by the HTTP providers: one JSON POST, mapped onto typed model errors."""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import errno
import ssl
import time
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import orjson

from slateboard.models._http_pool import descriptor_limit, loop_client, loop_transport
from slateboard.models.errors import (
    ModelAuthError,
    ModelBadResponse,
    ModelConfigError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelRequestError,
    ModelSchemaRefused,
    ModelServerError,
    ModelTimeout,
    ModelUnavailable,
    one_line,
)

__all__ = ["SCHEMA_ERROR_CODES", "JsonPoster", "error_fields", "error_for_status", "parse_retry_after", "reply_json"]

# A refused or black-holed host should surface as "unavailable" (retryable) rather than eat the
# whole call budget; the reply itself is bounded by the caller's deadline, not by httpx.
CONNECT_TIMEOUT_S = 30.0
_TIMEOUTS = {"timeout": httpx.Timeout(None, connect=CONNECT_TIMEOUT_S).as_dict()}


class JsonPoster:
    """POSTs JSON to one base URL and returns the raw response, mapping transport failures.

    Guarantees: a base URL that is not http(s) with a host raises `ModelConfigError` here, before
    any call; transport failures raise `ModelUnavailable` (connect errors, resets, connect
    timeouts, an OSError before the request is sent: a process out of file descriptors is named
    as such, with its RLIMIT_NOFILE), `ModelTimeout` (read/write timeouts) or `ModelNotFound` (a
    URL httpx cannot use); HTTP statuses are left to the caller. Without an injected client, every poster on one
    event loop shares that loop's client (`loop_client`): one bounded pool of keep-alive
    connections (`PooledTransport`: O(1) per call, at most `pool_connections()` sockets, calls
    beyond that wait for one), with one SSL context per process (`shared_ssl_context`).
    """

    def __init__(
        self,
        model: str,
        base_url: str,
        headers: Mapping[str, str],
        *,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._model = model
        self.base_url = base_url.rstrip("/")
        _check_base_url(model, self.base_url)
        self._headers = dict(headers)
        self._post_headers: dict[str, str] | None = None
        self._urls: dict[str, httpx.URL] = {}
        self._given_client = client
        self._client: httpx.AsyncClient | None = None
        self._client_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None

    def _current_client(self) -> httpx.AsyncClient:
        if self._given_client is not None:
            return self._given_client
        loop = asyncio.get_running_loop()
        stale = self._client_loop is None or self._client_loop() is not loop
        if self._client is None or self._client.is_closed or stale:
            self._client = loop_client(shared_ssl_context(), CONNECT_TIMEOUT_S)
            self._client_loop = weakref.ref(loop)
        return self._client

    async def post(self, path: str, payload: Mapping[str, Any]) -> httpx.Response:
        """POST `payload` as JSON to `base_url + path`; returns the response whatever its status."""
        url = self.base_url + path
        body = orjson.dumps(payload)
        with self.transport_errors(url):
            pool = None if self._given_client is not None else loop_transport(shared_ssl_context(), CONNECT_TIMEOUT_S)
            if pool is None:
                headers = {**self._headers, "content-type": "application/json"}
                return await self._current_client().post(url, content=body, headers=headers)
            # The client's per-request work (URL merging, auth, cookies, redirects, event hooks)
            # does nothing here and cost as much CPU as the request itself: the pool sends it.
            target = self._urls.get(path)
            if target is None:
                target = self._urls[path] = httpx.URL(url)
            if self._post_headers is None:
                # The client's defaults (accept, accept-encoding, user-agent) as it would send them.
                self._post_headers = {**pool.default_headers, **self._headers, "content-type": "application/json"}
            request = httpx.Request("POST", target, content=body, headers=self._post_headers, extensions=_TIMEOUTS)
            return await pool.fetch(request)

    @contextlib.asynccontextmanager
    async def stream(self, path: str, payload: Mapping[str, Any]) -> AsyncIterator[httpx.Response]:
        """POST `payload` as JSON and yield the response with its body unread (whatever its
        status), for reading as it arrives; transport failures, also those while the body is
        read inside, are mapped as in `post`."""
        url = self.base_url + path
        body = orjson.dumps(payload)
        headers = {**self._headers, "content-type": "application/json", "accept": "text/event-stream"}
        with self.transport_errors(url):
            async with self._current_client().stream("POST", url, content=body, headers=headers) as response:
                yield response

    @contextlib.contextmanager
    def transport_errors(self, url: str) -> Iterator[None]:
        """Map httpx transport failures inside onto typed model errors (see the class)."""
        try:
            yield
        except httpx.UnsupportedProtocol as exc:
            raise ModelNotFound(self._model, f"unusable URL {url}: {_describe(exc)}") from exc
        except httpx.ConnectTimeout as exc:
            raise ModelUnavailable(self._model, f"could not connect to {url} within {CONNECT_TIMEOUT_S:g}s") from exc
        except httpx.TimeoutException as exc:
            raise ModelTimeout(self._model, f"{url} timed out: {_describe(exc)}") from exc
        except httpx.ConnectError as exc:
            raise ModelUnavailable(self._model, f"cannot connect to {url}: {_describe(exc)}") from exc
        except httpx.TransportError as exc:
            raise ModelUnavailable(self._model, f"connection to {url} failed: {_describe(exc)}") from exc
        except httpx.InvalidURL as exc:
            raise ModelNotFound(self._model, f"invalid URL {url}: {_describe(exc)}") from exc
        except OSError as exc:
            # Before any byte is sent: the CA store cannot be read, or no socket can be opened
            # (a process out of descriptors). Retryable like a refused connection.
            raise ModelUnavailable(self._model, f"cannot call {url}: {_describe(exc)}") from exc

    async def aclose(self) -> None:
        """Let go of the loop's shared client (its pooled connections stay for the loop's other
        posters; an injected client is left to its owner)."""
        self._client = None


_SSL: ssl.SSLContext | None = None


def shared_ssl_context() -> ssl.SSLContext:
    """The process's one client SSL context (httpx's defaults: certifi's CA bundle, or
    SSL_CERT_FILE / SSL_CERT_DIR), made on first use: a context per provider would load the CA
    store each time (~0.1 s of CPU and ~1 MB per board resolving a model string)."""
    global _SSL
    if _SSL is None:
        _SSL = httpx.create_ssl_context()
    return _SSL


def _describe(exc: BaseException) -> str:
    """The failure's message, with the operating system's reason when a wrapper hides it
    ("All connection attempts failed" says nothing of a refused connection or of a process out of
    file descriptors)."""
    text = str(exc) or type(exc).__name__
    cause = _os_cause(exc)
    if cause is None:
        return text
    if cause.errno in (errno.EMFILE, errno.ENFILE):
        return f"{text}: {descriptor_shortage(cause)}"
    reason = cause.strerror or str(cause)
    return text if reason in text else f"{text} ({reason})"


def _os_cause(exc: BaseException) -> OSError | None:
    """The first OSError with an errno in `exc`, its causes and exception groups."""
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno is not None:
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                todo.append(linked)
    return None


def descriptor_shortage(exc: OSError) -> str:
    """What an EMFILE/ENFILE means, with the limit to raise."""
    if exc.errno == errno.ENFILE:
        return "the system is out of file descriptors"
    soft = descriptor_limit()
    return "the process is out of file descriptors" + (
        f" (RLIMIT_NOFILE soft limit {soft}: raise it with ulimit -n)" if soft is not None else ""
    )


def _check_base_url(model: str, base_url: str) -> None:
    """Refuse, before any call, a base URL no request could be sent to (the same URL would fail
    every call the same way: a usage error, not a failure of one call)."""
    try:
        parsed = httpx.URL(base_url)
    except (httpx.InvalidURL, TypeError) as exc:
        raise ModelConfigError(model, f"invalid base URL {base_url!r}: {_describe(exc)}") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ModelConfigError(model, f"unusable base URL {base_url!r}: expected http(s)://HOST[:PORT][/PATH]")


def parse_retry_after(headers: httpx.Headers, *, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait, from `retry-after-ms` or `retry-after` (seconds or an
    HTTP date); None when absent or unparseable. Never negative."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _server_message(response: httpx.Response) -> str:
    """The human message inside an error body, whichever common shape it uses."""
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return one_line(response.text) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            for key in ("message", "detail"):
                if isinstance(error.get(key), str | list):
                    return one_line(str(error[key]))
        elif isinstance(error, str):
            return one_line(error)
        if "detail" in data:
            return one_line(str(data["detail"]))
    return one_line(response.text)


def error_fields(response: httpx.Response) -> tuple[str | None, str | None]:
    """The provider's own `(code, param)` for an error reply (OpenAI's `error.code`/`error.param`,
    falling back to `error.type` for the code); None where the body does not say."""
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return None, None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    code = error.get("code")
    if not isinstance(code, str) or not code:
        code = error.get("type") if isinstance(error.get("type"), str) else None
    param = error.get("param")
    return code or None, param if isinstance(param, str) and param else None


# Error codes with which OpenAI-compatible servers refuse the reply schema itself.
SCHEMA_ERROR_CODES = frozenset({"invalid_json_schema", "invalid_schema", "unsupported_schema"})


def error_for_status(model: str, response: httpx.Response) -> ModelError:
    """The typed error for a non-2xx `response` (429 → rate limited, 5xx → server error,
    401/403 → `ModelAuthError`, 404 → `ModelNotFound`, other 4xx → request error, classified by the provider's
    error code: `ModelSchemaRefused` only when the code or the offending parameter names the
    schema / `response_format`, never guessed from the status alone)."""
    status = response.status_code
    where = f"HTTP {status} from {response.request.url}"
    message = _server_message(response)
    code, param = error_fields(response)
    if status == 429:
        retry_after = parse_retry_after(response.headers)
        return ModelRateLimited(model, f"rate limited ({where}): {message}", retry_after=retry_after)
    if status >= 500:
        return ModelServerError(model, f"server error ({where}): {message}", status=status)
    if status in (401, 403):
        return ModelAuthError(model, f"API key missing or rejected ({where}): {message}", status=status)
    if status == 404:
        return ModelNotFound(model, f"unknown model or endpoint ({where}): {message}", status=status)
    tag = f" [{code}{f' {param}' if param else ''}]" if code else ""
    if code in SCHEMA_ERROR_CODES or (param or "").startswith("response_format"):
        return ModelSchemaRefused(
            model, f"reply schema refused ({where}){tag}: {message}", status=status, code=code, param=param
        )
    return ModelRequestError(model, f"request refused ({where}){tag}: {message}", status=status, code=code, param=param)


def reply_json(model: str, response: httpx.Response) -> dict[str, Any]:
    """The JSON object of a 2xx `response`; raises the typed status error for any other status
    and `ModelBadResponse` when the body is not a JSON object."""
    if not response.is_success:
        raise error_for_status(model, response)
    try:
        data = orjson.loads(response.content)
    except orjson.JSONDecodeError as exc:
        kind = response.headers.get("content-type", "no content-type")
        raise ModelBadResponse(
            model,
            f"reply from {response.request.url} is not JSON ({kind}): {one_line(response.text, 120) or '(empty body)'}",
            status=response.status_code,
        ) from exc
    if not isinstance(data, dict):
        raise ModelBadResponse(
            model,
            f"reply from {response.request.url} is JSON {type(data).__name__}, not an object",
            status=response.status_code,
        )
    return data
