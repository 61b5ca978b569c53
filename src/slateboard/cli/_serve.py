"""``slateboard serve``: the web dashboard over a store (see slateboard.web)."""

from __future__ import annotations

import importlib
import socket
import sys
from pathlib import Path
from typing import Annotated

import typer

from ._anchor import AnchorOption, KeyFileOption, read_key
from ._common import StoreOption, cli_tenant, opened_store, run_async
from ._errors import EXIT_USAGE, CliError

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
_WEB_MODULES = ("fastapi", "uvicorn", "sse_starlette")


def _need_web_extra() -> None:
    """A one-line error naming the install command when the ``web`` extra is missing."""
    for name in _WEB_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            raise CliError(
                f"the dashboard needs the web extra (missing module {name}): pip install 'slateboard[web]'",
                code=EXIT_USAGE,
            ) from None


def _listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: any free one), or a one-line CliError."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CliError(f"--host {host!r} cannot be resolved: {exc.strerror or exc}", code=EXIT_USAGE) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        # Listen now, so a browser opened before uvicorn starts waits in the backlog.
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock.setblocking(False)
    return sock


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}/"


def serve_command(
    store: StoreOption = None,
    host: Annotated[
        str,
        typer.Option(
            "--host",
            metavar="HOST",
            help="Address to listen on. Anything but loopback (127.0.0.1, ::1, localhost) needs --token.",
        ),
    ] = DEFAULT_HOST,
    port: Annotated[
        int,
        typer.Option("--port", min=0, max=65535, metavar="PORT", help="Port to listen on (0: any free port, printed)."),
    ] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="TOKEN",
            envvar="SLATEBOARD_TOKEN",
            show_envvar=True,
            help="Require this token on every request: 'Authorization: Bearer TOKEN', or open the page with ?token=TOKEN.",
        ),
    ] = None,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="Open the dashboard in a web browser once it listens.")
    ] = False,
    poll: Annotated[
        float,
        typer.Option(
            "--poll",
            min=0.05,
            metavar="SECONDS",
            help="How often the board list is read again (a board's records arrive as its store reports them).",
        ),
    ] = 0.5,
    anchor: AnchorOption = None,
    key_file: KeyFileOption = None,
    tenant_tokens: Annotated[
        bool,
        typer.Option(
            "--tenant-tokens",
            help=(
                "Every request carries a tenant's token (slateboard tenant add) and sees that tenant's boards"
                " only; --token, if given, is the operator's and sees every board."
            ),
        ),
    ] = False,
) -> None:
    """Serve the web dashboard: boards, states at any version, the record timeline, the views
    workers saw, tokens per worker and component, and live updates while a run goes on.
    With --anchor FILE each board shows whether its log matches its signed checkpoints."""
    _need_web_extra()
    anchored = (read_key(key_file), anchor) if anchor is not None else None
    from ..web import MIN_TOKEN_CHARS, is_loopback

    token = token or None
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise CliError(
            f"the token has {len(token)} characters; use at least {MIN_TOKEN_CHARS}"
            ' (e.g. --token "$(openssl rand -hex 16)")',
            code=EXIT_USAGE,
        )
    if tenant_tokens and cli_tenant() is not None:
        raise CliError(
            "--tenant-tokens serves every tenant, each through its own token: drop --tenant (or $SLATEBOARD_TENANT)",
            code=EXIT_USAGE,
        )
    if token is None and not tenant_tokens and not is_loopback(host):
        raise CliError(
            f"refusing to serve on {host} without a token: pass --token TOKEN or set SLATEBOARD_TOKEN",
            code=EXIT_USAGE,
        )
    sock = _listen(host, port)
    try:
        run_async(lambda: _serve(store, sock, host, token, open_browser, poll, anchored, tenant_tokens))
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    sys.stdout.write("dashboard stopped\n")


async def _serve(
    store: str | None,
    sock: socket.socket,
    host: str,
    token: str | None,
    open_browser: bool,
    poll: float,
    anchor: tuple[bytes, Path] | None = None,
    tenant_tokens: bool = False,
) -> None:
    """Open the store, then serve the dashboard on ``sock`` until a signal stops uvicorn."""
    import uvicorn

    from ..web import create_app, redact_url

    # Read-only: a store that does not exist is refused, not created (issue 20, D14).
    async with opened_store(store, create=False) as st:
        app = create_app(st, token=token, poll_s=poll, anchor=anchor, tenant_tokens=tenant_tokens)
        config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2, lifespan="on")
        server = uvicorn.Server(config)
        url = _url(host, sock.getsockname()[1])
        sys.stdout.write(f"slateboard dashboard on {url} (store {redact_url(st.url)}); Ctrl-C stops it\n")
        if tenant_tokens:
            sys.stdout.write(
                "every request needs a tenant's token (or the operator's): open the page with ?token=TOKEN\n"
            )
        elif token:
            sys.stdout.write("every request needs the token: open the page with ?token=TOKEN\n")
        sys.stdout.flush()
        if open_browser:
            import webbrowser
            from urllib.parse import quote

            webbrowser.open(url + (f"?token={quote(token, safe='')}" if token else ""))
        await server.serve(sockets=[sock])
