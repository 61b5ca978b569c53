"""The ``slateboard`` command: the Typer app, its global options and its error handling."""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ..errors import InvalidInput
from . import _errors
from ._anchor import anchor_command
from ._engine import cancel_command
from ._errors import EXIT_USAGE, one_line, report
from ._extra import (
    PASS_THROUGH,
    approve_command,
    architect_command,
    bench_command,
    refuse_command,
    templates_command,
)
from ._follow import fork_command, watch_command
from ._help import tidy
from ._inspect import boards_command, log_command, replay_command, show_command
from ._ledger import ledger_app
from ._mcp import mcp_app
from ._memory import memory_app
from ._plugins import plugin_command, plugin_names
from ._run import resume_command, run_command
from ._scale import submit_command, wait_command, worker_command
from ._serve import serve_command
from ._tenant import tenant_app


def _split_debug(args: Sequence[str]) -> tuple[list[str], bool]:
    """Take ``--debug`` out of the arguments wherever it stands (before a ``--``)."""
    out: list[str] = []
    debug = False
    for i, arg in enumerate(args):
        if arg == "--":
            out.extend(args[i:])
            break
        if arg == "--debug":
            debug = True
        else:
            out.append(arg)
    return out, debug


def _split_tenant(args: Sequence[str]) -> tuple[list[str], str | None]:
    """Take ``--tenant T`` / ``--tenant=T`` out of the arguments wherever they stand (before a
    ``--``): every command acts in one tenant. The last one given wins; a ``--tenant`` without a
    value stays for click to report."""
    out: list[str] = []
    tenant: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            out.extend(args[i:])
            break
        if arg.startswith("--tenant="):
            tenant = arg.split("=", 1)[1]
        elif arg == "--tenant" and i + 1 < len(args) and args[i + 1] != "--":
            tenant = args[i + 1]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out, tenant


_CLICK_KINDS = ("NoArgsIsHelpError", "UsageError", "ClickException", "Abort")


def _click_kind(exc: BaseException) -> str | None:
    """Which click exception ``exc`` is (by class name, so both click and the copy of click that
    newer typer versions vendor are recognised), or None."""
    for cls in type(exc).__mro__:
        if cls.__name__ in _CLICK_KINDS and cls.__module__.split(".")[0] in ("click", "typer"):
            return cls.__name__
    return None


class SlateboardGroup(TyperGroup):
    """The top-level group: runs a command and turns every failure into one line and an exit
    code (see ``_errors``), for the entry point and for test runners alike."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """Run the command line ``args`` (default ``sys.argv[1:]``); exit (or, when not
        standalone, return) with its exit code."""
        argv, debug = _split_debug(sys.argv[1:] if args is None else list(args))
        argv, tenant = _split_tenant(argv)
        _errors.settings.debug = debug
        _errors.settings.tenant = tenant
        if debug:
            logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
            logging.getLogger("slateboard").setLevel(logging.DEBUG)
        code = self._run(argv, prog_name or "slateboard", complete_var, windows_expand_args, **extra)
        if standalone_mode:
            sys.exit(code)
        return code

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        """The core's command ``cmd_name``, else a plugin's (``slateboard.cli`` entry points, loaded
        only now); ``eval``/``faults`` without slateboard-eval raise the install hint. (``ctx`` and
        the command are click's, or the copy of click that newer typer versions vendor.)"""
        command = super().get_command(ctx, cmd_name)
        return tidy(command if command is not None else plugin_command(cmd_name))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """The group's help, its texts tidied first (``_help``: no mid-sentence breaks)."""
        tidy(self)
        for name in self.list_commands(ctx):
            self.get_command(ctx, name)
        super().format_help(ctx, formatter)

    def list_commands(self, ctx: Any) -> list[str]:
        """The core's commands, then the plugins' (for ``--help``)."""
        core = super().list_commands(ctx)
        return core + [name for name in plugin_names() if name not in core]

    def _run(
        self, argv: list[str], prog_name: str, complete_var: str | None, windows_expand_args: bool, **extra: Any
    ) -> int:
        try:
            rv = super().main(
                argv,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                windows_expand_args=windows_expand_args,
                **extra,
            )
        except (Exception, KeyboardInterrupt) as exc:
            kind = _click_kind(exc)
            if kind == "NoArgsIsHelpError":
                text = str(getattr(exc, "format_message", str)()).rstrip()
                if text:
                    sys.stdout.write(text + "\n")
                return EXIT_USAGE
            if kind in ("UsageError", "ClickException"):
                if _errors.settings.debug:
                    traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
                message = one_line(str(getattr(exc, "format_message", str)()))
                ctx = getattr(exc, "ctx", None)
                where = f" (see: {ctx.command_path} --help)" if kind == "UsageError" and ctx is not None else ""
                sys.stderr.write(f"error: {message}{where}\n")
                code = getattr(exc, "exit_code", EXIT_USAGE)
                return code if isinstance(code, int) else EXIT_USAGE
            if kind == "Abort":
                sys.stderr.write("error: aborted\n")
                return 1
            return report(exc)
        return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0


app = typer.Typer(
    cls=SlateboardGroup,
    name="slateboard",
    help=(
        "slateboard: LLM workers collaborate on a board whose state changes only through validated, "
        "authorised, logged JSON Patch proposals."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"slateboard {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks and debug logs (accepted anywhere on the line).")
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            metavar="TENANT",
            envvar="SLATEBOARD_TENANT",
            show_envvar=True,
            help="Act within this tenant: its boards, ledgers and memory only (accepted anywhere on the line).",
        ),
    ] = None,
) -> None:
    """Global options (before or after the command)."""
    if debug:
        _errors.settings.debug = True
    if tenant and _errors.settings.tenant is None:
        _errors.settings.tenant = tenant
    from .. import telemetry

    try:
        telemetry.enable_from_env()  # SLATEBOARD_OTEL=otlp|console: trace this command (issue 17)
    except InvalidInput as exc:  # a missing otel extra or an unknown value: the user's setting
        raise _errors.CliError(str(exc), code=_errors.EXIT_USAGE) from None


app.command("run")(run_command)
app.command("resume")(resume_command)
app.command("boards")(boards_command)
app.command("log")(log_command)
app.command("show")(show_command)
app.command("replay")(replay_command)
app.command("anchor")(anchor_command)
app.command("architect")(architect_command)
app.command("templates")(templates_command)
app.command("bench", context_settings=PASS_THROUGH)(bench_command)
app.command("approve")(approve_command)
app.command("refuse")(refuse_command)
app.command("serve")(serve_command)
app.add_typer(mcp_app, name="mcp")
app.add_typer(memory_app, name="memory")
app.add_typer(ledger_app, name="ledger")
app.add_typer(tenant_app, name="tenant")
app.command("worker")(worker_command)
app.command("submit")(submit_command)
app.command("wait")(wait_command)
app.command("cancel")(cancel_command)
app.command("watch")(watch_command)
app.command("fork")(fork_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The ``slateboard`` entry point: run ``argv`` (default: the process arguments) and exit."""
    command = typer.main.get_command(app)
    try:
        command.main(args=None if argv is None else list(argv), prog_name="slateboard")
    except SystemExit as exc:
        if "temporalio.bridge.client" in sys.modules:
            _exit_past_temporal(exc.code)
        raise


def _exit_past_temporal(code: object) -> None:
    """End a command that made a Temporal client without the interpreter's teardown: the SDK's
    native threads outlive the event loop, and finalising under them aborts the process
    (``Fatal Python error: PyGILState_Release``, SIGABRT; temporalio/sdk-python#300) after the
    command has finished cleanly. Its work is done and its output flushed, so nothing is lost."""
    if isinstance(code, str):
        sys.stderr.write(code + "\n")
    status = code if isinstance(code, int) else (0 if code is None else 1)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(status)
