"""What a CLI plugin may use: the public, stable part of ``slateboard``'s command-line plumbing.

A plugin is a distribution that adds commands to ``slateboard`` through the ``slateboard.cli``
entry-point group (``GROUP``)::

    [project.entry-points."slateboard.cli"]
    hello = "my_plugin:register"

The object the entry point names is a ``typer.Typer`` (added as the command group ``hello``) or a
function ``register(app: typer.Typer) -> None`` that adds its commands to ``app``. The core loads
plugins on first need (a command it does not have, or the command list of ``--help``), never on
``import slateboard.cli``; a plugin that fails to load is skipped and the core's commands still
work. ``slateboard-eval`` (``slateboard eval``, ``slateboard faults``) is such a plugin and uses
only this module.

Everything here behaves as it does for the core's own commands: ``CliError`` (exit 1) and
``CliUsageError`` (exit 2) print ``error: MESSAGE`` on one line, with no traceback unless
``--debug``; any other exception becomes one ``internal error`` line; a store URL's password
never reaches an error line. ``run_plugin`` runs a plugin's commands under that same handling
without installing it, for its tests. See docs/plugins.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import typer

from ._common import (
    STORE_ENV,
    JsonOption,
    StoreOption,
    cell,
    console,
    console_err,
    opened_store,
    print_json,
    run_async,
    short,
    store_hint,
    store_label,
)
from ._errors import EXIT_ERROR, EXIT_OK, EXIT_USAGE, CliError, one_line
from ._plugins import GROUP

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_USAGE",
    "GROUP",
    "STORE_ENV",
    "CliError",
    "CliUsageError",
    "JsonOption",
    "StoreOption",
    "cell",
    "console",
    "console_err",
    "one_line",
    "opened_store",
    "print_json",
    "run_async",
    "run_plugin",
    "short",
    "store_hint",
    "store_label",
]


class CliUsageError(CliError):
    """Bad arguments: ``slateboard`` prints ``error: MESSAGE`` on one line and exits 2
    (``EXIT_USAGE``), as for the core's own usage errors. Name the option and the value that was
    wrong in the message, e.g. ``--steps: must be >= 1, got 0``; its whitespace runs (newlines
    included, e.g. from a wrapped library message) are collapsed to one space."""

    def __init__(self, message: str, *, details: Sequence[str] = ()) -> None:
        super().__init__(one_line(message), code=EXIT_USAGE, details=details)


def run_plugin(plugin: Any, args: Sequence[str], *, name: str = "plugin") -> int:
    """Run the command line ``args`` against ``plugin`` alone (what an entry point of ``GROUP``
    names: a ``typer.Typer``, added as the group ``name``, or a ``register(app)`` function) with
    the core's error handling, and return the exit code instead of exiting: 0 on success, 1 for a
    ``CliError``, 2 for a ``CliUsageError`` or a bad option, each with one ``error:`` line on
    stderr. Output goes to the current ``sys.stdout``/``sys.stderr``.

    It needs no installed entry point, so a plugin's tests (and docs/plugins.md) run its commands
    exactly as ``slateboard`` would; only ``plugin``'s commands are there (no installed plugin
    is loaded beside it). Raises ``TypeError`` when ``plugin`` is neither kind."""
    from typer.core import TyperGroup

    from ._app import SlateboardGroup
    from ._plugins import attach

    class Alone(SlateboardGroup):
        # the core's error handling, but only this plugin's commands: no installed plugin is
        # loaded or listed beside it
        def get_command(self, ctx: Any, cmd_name: str) -> Any:
            return TyperGroup.get_command(self, ctx, cmd_name)

        def list_commands(self, ctx: Any) -> list[str]:
            return TyperGroup.list_commands(self, ctx)

    holder = typer.Typer(cls=Alone, name="slateboard", add_completion=False, pretty_exceptions_enable=False)
    attach(holder, name, plugin, f"plugin {name}")
    group = typer.main.get_group(holder)
    code = group.main(args=list(args), prog_name="slateboard", standalone_mode=False)
    return code if isinstance(code, int) else EXIT_OK
