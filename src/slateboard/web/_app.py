"""The dashboard's ASGI app: the JSON API, server-sent events, the page, and the token check.

Read-only: every route is a GET (or HEAD) and nothing writes to the store.

Security: when the app has a token, every request (page, static files, API, event streams)
must carry it, as ``Authorization: Bearer <token>`` or as ``?token=<token>`` (the page and
``EventSource`` cannot set headers); anything else gets 401. Tokens are compared in constant
time. Without a token the app answers only requests whose ``Host`` is a loopback name, so a
web page elsewhere cannot reach a loopback dashboard through DNS rebinding.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import InvalidInput
from ..httpguard import MIN_TOKEN_CHARS, TokenGuard, error_response
from ..redaction import redact
from ..stores.base import Store, StoreError, StoreUnavailable
from ..stores.tenancy import tenant_of_store
from ._data import Dashboard
from ._shapes import ApiError, parse_version
from ._tenants import TenantTokenGuard, dashboard_for

logger = logging.getLogger("slateboard.web")


STATIC = Path(__file__).resolve().parent / "static"
"""The page's HTML, JS and CSS (shipped inside the package)."""


def redact_url(url: str) -> str:
    """A store URL without its password (shown on the page and in logs): the one redaction."""
    return redact(url)


_PAGE_HEADERS = {
    "Cache-Control": "no-store",
    # Only this server's own script, styles and API: nothing inline, nothing from elsewhere.
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def create_app(
    store: Store | str | None,
    *,
    token: str | None = None,
    poll_s: float = 0.5,
    ping_s: float = 15.0,
    eval_dir: Path | str | None = None,
    anchor: tuple[bytes, Path] | None = None,
    tenant_tokens: bool = False,
) -> FastAPI:
    """The dashboard app over ``store``: a Store (left open: the caller owns it), or a URL (None:
    the default SQLite file) that the app opens at startup and closes at shutdown.

    ``token``: when set, every request must carry it (see the module docstring). ``poll_s``: how
    often the board list's stream reads the store, and the longest a board's stream waits on the
    store's wake-up before reading the board again (its records and end arrive as the store
    reports them: ``runtime.watch.wait_for_change``); ``ping_s``: keep-alive comments on idle streams.
    ``eval_dir``: where the evaluation page finds its reports (see ``slateboard.web._evaluation``).
    ``anchor``: (key, anchor file): each board says whether its log matches its signed
    checkpoints (see ``slateboard anchor``). ``tenant_tokens``: every request carries a tenant's
    token (``slateboard tenant add``), and sees that tenant's boards only; ``token``, if given,
    is then the operator's, who sees every board (see ``slateboard.web._tenants``). A store
    scoped to one tenant (``open_store(url, tenant=...)``) shows that tenant's boards to every
    request. Raises ValueError for a token shorter than MIN_TOKEN_CHARS.
    """
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(f"the dashboard token must have at least {MIN_TOKEN_CHARS} characters, got {len(token)}")
    if tenant_tokens and tenant_of_store(store) is not None:
        raise InvalidInput("tenant_tokens needs the shared store, not one tenant's scope of it")
    owned = not isinstance(store, Store)
    url = store.url if isinstance(store, Store) else store

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        opened: Store
        if isinstance(store, Store):
            opened = store
        else:
            from ..stores import open_store

            opened = await open_store(store)
        app.state.dashboard = Dashboard(opened, poll_s=poll_s, anchor=anchor)
        try:
            yield
        finally:
            if owned:
                await opened.close()

    app = FastAPI(title="slateboard dashboard", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    if isinstance(store, Store):
        # Transports that skip the lifespan (httpx's ASGITransport) still get a dashboard.
        app.state.dashboard = Dashboard(store, poll_s=poll_s, anchor=anchor)

    def dash(request: Request) -> Dashboard:
        return dashboard_for(request.app.state, request.scope)

    def _stream(events: AsyncIterator[ServerSentEvent], stop: anyio.Event) -> EventSourceResponse:
        # On server shutdown sse-starlette sets ``stop``: the stream then ends by itself (a
        # complete response) well inside the grace period, instead of being cancelled.
        return EventSourceResponse(
            events,
            ping=ping_s,
            headers={"Cache-Control": "no-store"},
            shutdown_event=stop,
            shutdown_grace_period=1.0,
        )

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return error_response(exc.status, exc.message)

    @app.exception_handler(StoreError)
    async def _store_error(request: Request, exc: StoreError) -> JSONResponse:
        status = 503 if isinstance(exc, StoreUnavailable) else 500
        # The detail names database paths and driver messages: it goes to the server's log,
        # never into a response body (I6).
        logger.error("store error on %s: %s", request.url.path, redact(" ".join(str(exc).split())))
        what = "the store is unavailable" if status == 503 else "store error"
        return error_response(status, f"{what} ({type(exc).__name__}); the details are in the server log")

    @app.exception_handler(RequestValidationError)
    async def _bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        parts = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err.get("loc", ()) if p not in ("query", "path"))
            parts.append(f"{where or 'request'}: {err.get('msg', 'invalid')}")
        return error_response(400, "bad request: " + "; ".join(parts))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return error_response(404, f"no such page or endpoint: {request.url.path}")
        if exc.status_code == 405:
            return error_response(
                405, f"the dashboard is read-only: {request.method} is not allowed on {request.url.path}"
            )
        return error_response(exc.status_code, str(exc.detail))

    # -- the page -----------------------------------------------------------------------------
    page = (STATIC / "index.html").read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index(request: Request) -> HTMLResponse:
        # Assets need the token too; the page was reached with it, so pass it on to them.
        given = request.query_params.get("token")
        suffix = f"?token={quote(given, safe='')}" if token and given else ""
        return HTMLResponse(page.replace("{{asset_query}}", suffix), headers=_PAGE_HEADERS)

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    from ._evaluation import add_evaluation_routes

    evaluation_page = (STATIC / "evaluation.html").read_text(encoding="utf-8")
    add_evaluation_routes(app, eval_dir, evaluation_page, _PAGE_HEADERS)

    # -- the API ------------------------------------------------------------------------------
    @app.get("/api/info")
    async def info(request: Request) -> dict[str, Any]:
        from .. import __version__

        tenant = tenant_of_store(dash(request).store)
        # A tenant is not told where the shared store lives, nor who else is in it.
        where = redact_url(url or "sqlite://") if tenant is None else f"tenant {tenant}"
        return {"store": where, "version": __version__, "poll_s": poll_s, "tenant": tenant}

    @app.get("/api/boards")
    async def boards(request: Request) -> dict[str, Any]:
        return {"boards": await dash(request).boards()}

    @app.get("/api/boards/{board_id}")
    async def board(request: Request, board_id: str) -> dict[str, Any]:
        return await dash(request).board(board_id)

    @app.get("/api/boards/{board_id}/records")
    async def records(request: Request, board_id: str, after: int = 0, limit: int | None = None) -> dict[str, Any]:
        return await dash(request).records(board_id, after=after, limit=limit)

    @app.get("/api/boards/{board_id}/state")
    async def state(request: Request, board_id: str, version: str | None = None) -> dict[str, Any]:
        return await dash(request).state(board_id, parse_version(version))

    @app.get("/api/boards/{board_id}/views/{view_hash}")
    async def view(request: Request, board_id: str, view_hash: str, seq: int | None = None) -> dict[str, Any]:
        return await dash(request).view(board_id, view_hash, seq)

    @app.get("/api/boards/{board_id}/events")
    async def board_events(request: Request, board_id: str, after: int | None = None) -> Response:
        if after is not None and after < 0:
            raise ApiError(400, f"after must be 0 or more, got {after}")
        # EventSource reconnects to the same URL with Last-Event-ID (the last record's seq it
        # got), which is newer than the ?after= the page first asked for: resume after it.
        last = request.headers.get("last-event-id", "").strip()
        # ASCII digits only, and short: str.isdigit() also accepts '²', and int() refuses
        # text over 4,300 digits; neither may become a 500 (D7). A seq never needs 19 digits.
        resume_at = int(last) if last.isascii() and last.isdigit() and len(last) <= 18 else 0
        after = max(after or 0, resume_at)
        dashboard = dash(request)
        await dashboard.board(board_id)  # 404 before the stream starts

        stop = anyio.Event()

        async def stream() -> AsyncIterator[ServerSentEvent]:
            async for kind, data, ident in dashboard.follow_board(board_id, after, stop):
                yield ServerSentEvent(data=json.dumps(data, ensure_ascii=False), event=kind, id=ident)

        return _stream(stream(), stop)

    @app.get("/api/events")
    async def events(request: Request) -> Response:
        dashboard = dash(request)

        stop = anyio.Event()

        async def stream() -> AsyncIterator[ServerSentEvent]:
            async for found in dashboard.follow_boards(stop):
                yield ServerSentEvent(data=json.dumps({"boards": found}, ensure_ascii=False), event="boards")

        return _stream(stream(), stop)

    if tenant_tokens:
        app.add_middleware(TenantTokenGuard, operator_token=token, name="this dashboard")
    else:
        app.add_middleware(TokenGuard, token=token, name="this dashboard")
    return app
