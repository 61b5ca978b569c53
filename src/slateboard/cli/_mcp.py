"""``slateboard mcp serve``: an external agent works on a board as one worker, over MCP."""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

from ._common import StoreOption, add_board_import_paths, opened_store, resolve_board, run_async
from ._errors import EXIT_USAGE, CliError

mcp_app = typer.Typer(help="Model Context Protocol: serve a board's worker to an external agent.", no_args_is_help=True)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8766


def _need_mcp_extra() -> None:
    try:
        importlib.import_module("mcp.server.mcpserver")
    except ImportError:
        raise CliError("MCP needs the mcp extra: pip install 'slateboard[mcp]'", code=EXIT_USAGE) from None


@mcp_app.command("serve")
def serve_command(
    board: Annotated[str, typer.Option("--board", "-b", help="The board (id or unique id prefix).")],
    worker: Annotated[str, typer.Option("--worker", "-w", help="The blueprint worker the external agent becomes.")],
    store: StoreOption = None,
    transport: Annotated[
        str,
        typer.Option("--transport", help="stdio (the default; for Claude Desktop, IDEs) or http (streamable HTTP)."),
    ] = "stdio",
    host: Annotated[
        str,
        typer.Option(
            "--host", help="HTTP address to listen on. Anything but loopback (127.0.0.1, ::1, localhost) needs --token."
        ),
    ] = DEFAULT_HOST,
    port: Annotated[int, typer.Option("--port", help="HTTP port (0: any free one).")] = DEFAULT_PORT,
    token: Annotated[
        str | None,
        typer.Option("--token", envvar="SLATEBOARD_TOKEN", help="Require 'Authorization: Bearer TOKEN' over HTTP."),
    ] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model for the board's other LLM workers.")] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", min=1.0, help="Seconds the board waits for the agent's patch.")
    ] = 3600.0,
    parallel: Annotated[
        int,
        typer.Option(
            "--parallel",
            min=1,
            help="How many of the worker's invocations may wait at once, one per MCP session (several agents).",
        ),
    ] = 1,
) -> None:
    """Serve WORKER of BOARD over MCP: the external agent waits for invocations, reads its view,
    and proposes patches that the kernel decides and logs like any worker's. The board's other
    workers run here as the blueprint says."""
    _need_mcp_extra()
    if transport not in ("stdio", "http"):
        raise CliError(f"--transport must be stdio or http, not {transport!r}", code=EXIT_USAGE)
    from ..httpguard import MIN_TOKEN_CHARS, is_loopback

    token = token or None
    if transport == "http" and token is not None and len(token) < MIN_TOKEN_CHARS:
        raise CliError(f"--token must have at least {MIN_TOKEN_CHARS} characters", code=EXIT_USAGE)
    if transport == "http" and token is None and not is_loopback(host):
        raise CliError(
            f"refusing to serve on {host} without a token: pass --token TOKEN or set SLATEBOARD_TOKEN", code=EXIT_USAGE
        )
    sock = None
    if transport == "http":
        from ._serve import _listen, _url

        sock = _listen(host, port)
        url = _url(host, sock.getsockname()[1]) + "mcp"

    async def go() -> object:
        from ..mcp import serve_board

        async with opened_store(store) as st:
            info = await resolve_board(st, board, store)
            add_board_import_paths(info.meta)

            def ready() -> None:
                # stdout is the protocol's channel on stdio: say where we are on stderr
                sys.stderr.write(
                    f"slateboard mcp: worker {worker!r} of board {info.board_id}"
                    + (f" on {url}" if sock is not None else " on stdio")
                    + "\n"
                )
                sys.stderr.flush()

            return await serve_board(
                st,
                info.board_id,
                worker,
                transport="http" if transport == "http" else "stdio",
                sock=sock,
                host=host,
                token=token,
                model=model,
                timeout=timeout,
                ready=ready,
                parallel=parallel,
            )

    try:
        ended = run_async(go)
    except KeyboardInterrupt:
        ended = None
    except ValueError as exc:
        raise CliError(str(exc), code=EXIT_USAGE) from None
    finally:
        if sock is not None:
            sock.close()
    sys.stderr.write(f"slateboard mcp: stopped{f' (the run ended: {ended})' if ended else ''}\n")
