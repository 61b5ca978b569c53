"""Commands that other distributions add to ``slateboard``: the ``slateboard.cli`` entry points.

A distribution declares, in its ``pyproject.toml``::

    [project.entry-points."slateboard.cli"]
    eval = "slateboard_eval.cli:register"

The object an entry point names is either a ``typer.Typer`` (added as a command group named after
the entry point) or a callable ``register(app: typer.Typer) -> None`` that adds its commands to
``app``. Plugins load on first need (a command the core does not have, or the command list of
``--help``), never on ``import slateboard.cli``, so the core's start-up does not pay for them.

``slateboard-eval`` is also found without its entry-point metadata (a source checkout on
``PYTHONPATH``): when no entry point names ``slateboard_eval.cli``, that module is imported if it
exists. Without it, ``slateboard eval`` and ``slateboard faults`` fail with one line naming the
package to install (exit 2).

What a plugin may import from the core's CLI is ``slateboard.cli.plugin`` (options, errors, output
helpers, ``run_plugin`` for its tests); this module is the loader and is not part of that API.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

import typer

from ._errors import EXIT_USAGE, CliError, one_line

GROUP = "slateboard.cli"
"""The entry-point group that plugin distributions register their commands under."""

EVAL_MODULE = "slateboard_eval.cli"
"""The evaluation distribution's CLI module (imported directly when its metadata is missing)."""

EVAL_COMMANDS = ("eval", "faults")
"""The commands that come with ``slateboard-eval``: without it they print the install hint."""

EVAL_HINT = "`slateboard {name}` comes with the evaluation package: pip install slateboard-eval"


@dataclass
class _Loaded:
    # click commands (or commands of the click copy that newer typer versions vendor)
    commands: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)


_loaded: _Loaded | None = None


def attach(holder: typer.Typer, name: str, obj: Any, where: str) -> None:
    """Add what an entry point named to ``holder``: a sub-app under ``name``, or a register function."""
    if isinstance(obj, typer.Typer):
        holder.add_typer(obj, name=name)
    elif callable(obj):
        register: Callable[[typer.Typer], object] = obj
        register(holder)
    else:
        raise TypeError(f"{where} is a {type(obj).__name__}, not a typer.Typer or a register(app) function")


def _collect() -> _Loaded:
    """Load every plugin once: its commands as click commands, or why it failed (per plugin)."""
    found = _Loaded()
    sources: list[tuple[str, str, Callable[[], Any]]] = []
    modules: set[str] = set()
    for ep in entry_points(group=GROUP):
        sources.append((ep.name, f"entry point {ep.name} = {ep.value}", ep.load))
        modules.add(ep.module)
    if EVAL_MODULE not in modules:
        # a source checkout on PYTHONPATH: the module is there, its distribution metadata is not
        try:
            module = importlib.import_module(EVAL_MODULE)
        except ModuleNotFoundError as exc:
            if exc.name not in ("slateboard_eval", EVAL_MODULE):  # present, but a dependency is missing
                found.errors[EVAL_MODULE] = f"{EVAL_MODULE}: {one_line(str(exc))}"
        else:
            sources.append(("eval", f"module {EVAL_MODULE}", lambda: module.register))
    for name, where, load in sources:
        holder = typer.Typer()
        try:
            attach(holder, name, load(), where)
            group = typer.main.get_group(holder)
        except Exception as exc:  # one broken plugin must not take the core's commands down
            found.errors[name] = f"{where}: {type(exc).__name__}: {one_line(str(exc))}"
            continue
        for command_name, command in group.commands.items():
            found.commands.setdefault(command_name, command)
    return found


def plugins() -> _Loaded:
    """The plugins' commands and load errors (loaded on the first call, then kept)."""
    global _loaded
    if _loaded is None:
        _loaded = _collect()
    return _loaded


def plugin_command(name: str) -> Any:
    """The plugin command called ``name``, or None; for ``eval``/``faults`` without slateboard-eval,
    the one-line install hint as a ``CliError`` (exit 2)."""
    loaded = plugins()
    command = loaded.commands.get(name)
    if command is None and name in EVAL_COMMANDS:
        broken = "; ".join(loaded.errors.values())
        raise CliError(EVAL_HINT.format(name=name) + (f" (plugin errors: {broken})" if broken else ""), code=EXIT_USAGE)
    return command


def plugin_names() -> list[str]:
    """The names of every plugin command (for the command list of ``--help``)."""
    return sorted(plugins().commands)
