"""The token rule of slateboard's HTTP servers (the dashboard, ``slateboard mcp serve``):
anything but loopback needs a token; without a token only loopback ``Host`` names are answered.
Needs ``starlette`` (the web and mcp extras have it).
"""

from __future__ import annotations

import hmac
import ipaddress
from urllib.parse import parse_qsl

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from .errors import InvalidInput

__all__ = ["MIN_TOKEN_CHARS", "TokenGuard", "error_response", "is_loopback", "presented_token"]

MIN_TOKEN_CHARS = 12
"""Shortest token accepted, as for the dashboard: a guessable token is no access control."""


def is_loopback(host: str) -> bool:
    """True for a host name or address that only this machine can reach (127.0.0.0/8, ::1,
    localhost). Anything else, 0.0.0.0 and :: included, is reachable from other machines."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def error_response(status: int, message: str) -> JSONResponse:
    """The JSON error body every slateboard server answers with (one line; 401 asks for a bearer token)."""
    message = " ".join(message.split())
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message, "status": status}, status_code=status, headers=headers)


def presented_token(scope: Scope) -> bytes | None:
    """The token a request carries (``Authorization: Bearer`` first, then ``?token=``), as
    bytes: a header carries the token's UTF-8 bytes as they are, a query string percent-escapes
    them. None when it carries none."""
    auth = next((v for k, v in scope.get("headers", []) if k.lower() == b"authorization"), None)
    if auth is not None:
        scheme, _, value = auth.partition(b" ")
        if scheme.lower() == b"bearer":
            return bytes(value.strip())
    query = scope.get("query_string", b"").decode("latin-1")
    found = next((v for k, v in parse_qsl(query, keep_blank_values=True) if k == "token"), None)
    return found.encode("utf-8") if found is not None else None


class TokenGuard:
    """ASGI middleware: the token check, or (without a token) the loopback Host check.

    With a token every HTTP request must carry it (``Authorization: Bearer TOKEN`` or
    ``?token=TOKEN``; compared in constant time), else 401; without one only requests whose
    ``Host`` is a loopback name are answered, else 403 (no DNS rebinding onto a loopback server).
    Other ASGI scopes (lifespan, ...) pass through."""

    def __init__(self, app: ASGIApp, token: str | None, name: str = "this server") -> None:
        if token is not None and len(token) < MIN_TOKEN_CHARS:
            raise InvalidInput(f"the token must have at least {MIN_TOKEN_CHARS} characters, got {len(token)}")
        self.app = app
        self.token = token.encode("utf-8") if token else None
        self.name = name  # how refusals name the server ("this dashboard", ...)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        problem = self._problem(scope, headers)
        if problem is not None:
            await error_response(*problem)(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _problem(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        if self.token is None:
            host = headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if host and not is_loopback(name):
                return 403, f"{self.name} serves loopback only, not Host {host[:100]!r} (start it with --token)"
            return None
        given = presented_token(scope)
        if given is None:
            return 401, f"{self.name} needs its token: send 'Authorization: Bearer <token>' or add ?token=<token>"
        if not hmac.compare_digest(given, self.token):
            return 401, "wrong token"
        return None
