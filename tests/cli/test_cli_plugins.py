"""Commands from other distributions: the ``slateboard.cli`` entry points (slateboard.cli._plugins).

A plugin is a ``typer.Typer`` (a command group named after its entry point) or a
``register(app)`` function; plugins load on the first command the core does not have, one broken
plugin never takes the core's commands down, and ``eval``/``faults`` without slateboard-eval are
one line naming the package to install, exit 2.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import typer
from typer.testing import CliRunner, Result

from slateboard.cli import _plugins, app


@dataclass
class FakeEntryPoint:
    """What ``importlib.metadata.entry_points`` yields, as far as the loader reads it."""

    name: str
    value: str
    loader: Callable[[], Any]

    @property
    def module(self) -> str:
        return self.value.split(":", 1)[0]

    def load(self) -> Any:
        return self.loader()


def _hello_app() -> typer.Typer:
    sub = typer.Typer(help="A plugin group.", no_args_is_help=True)

    @sub.command("there")
    def there(name: str = "world") -> None:
        """Say hello."""
        typer.echo(f"hello {name}")

    @sub.command("again")
    def again() -> None:
        """Say hello twice."""
        typer.echo("hello hello")

    return sub


def _register(holder: typer.Typer) -> None:
    @holder.command("greet")
    def greet() -> None:
        """Greet from a register function."""
        typer.echo("greetings")

    @holder.command("run")
    def not_the_core_run() -> None:
        """A plugin must not replace a core command."""
        typer.echo("plugin run")


def _broken() -> Any:
    raise ImportError("cannot import name 'gone' from 'broken_plugin'")


def _no_eval(monkeypatch: pytest.MonkeyPatch, points: list[FakeEntryPoint]) -> None:
    """Only ``points`` as entry points, slateboard-eval not importable, and nothing cached."""
    monkeypatch.setattr(_plugins, "_loaded", None)
    monkeypatch.setattr(_plugins, "entry_points", lambda group: points if group == _plugins.GROUP else [])
    for name in ("slateboard_eval", _plugins.EVAL_MODULE):  # importing them fails, loaded before or not
        monkeypatch.setitem(sys.modules, name, None)


def _invoke(args: list[str]) -> Result:
    return CliRunner().invoke(app, args, env={"COLUMNS": "200"})


def test_entry_point_commands_join_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_eval(
        monkeypatch,
        [
            FakeEntryPoint("hello", "hello_plugin.cli:app", _hello_app),
            FakeEntryPoint("more", "more_plugin:register", lambda: _register),
        ],
    )
    result = _invoke(["hello", "there", "--name", "board"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello board\n"
    assert _invoke(["greet"]).stdout == "greetings\n"
    listed = _invoke(["--help"]).stdout
    assert "hello" in listed and "greet" in listed
    # the core's `run` stays the core's
    assert "Usage: slateboard run" in _invoke(["run", "--help"]).stdout


def test_a_broken_plugin_leaves_the_core_and_the_other_plugins_working(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_eval(
        monkeypatch,
        [
            FakeEntryPoint("broken", "broken_plugin:register", _broken),
            FakeEntryPoint("junk", "junk_plugin:THING", lambda: 42),
            FakeEntryPoint("hello", "hello_plugin.cli:app", _hello_app),
        ],
    )
    assert _invoke(["hello", "again"]).stdout == "hello hello\n"
    assert _invoke(["--help"]).exit_code == 0
    errors = _plugins.plugins().errors
    assert "ImportError: cannot import name 'gone'" in errors["broken"]
    assert "is a int, not a typer.Typer or a register(app) function" in errors["junk"]


def test_eval_without_slateboard_eval_is_one_line_naming_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_eval(monkeypatch, [])
    for command in (["eval", "textworld", "--games", "1"], ["faults", "--n", "2"], ["eval"]):
        result = _invoke(command)
        assert result.exit_code == 2, result.output
        assert result.stdout == ""
        assert (
            result.stderr
            == f"error: `slateboard {command[0]}` comes with the evaluation package: pip install slateboard-eval\n"
        )
    # an unknown command is still click's usage error, not the hint
    other = _invoke(["evaluate"])
    assert other.exit_code == 2 and "slateboard-eval" not in other.stderr


def test_the_hint_names_a_broken_slateboard_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    _no_eval(monkeypatch, [FakeEntryPoint("eval", "slateboard_eval.cli:register", _broken)])
    result = _invoke(["faults"])
    assert result.exit_code == 2
    assert (
        "pip install slateboard-eval (plugin errors: entry point eval = slateboard_eval.cli:register" in result.stderr
    )
    assert len(result.stderr.splitlines()) == 1


def test_plugins_load_only_when_a_command_needs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def counted() -> typer.Typer:
        calls.append("load")
        return _hello_app()

    _no_eval(monkeypatch, [FakeEntryPoint("hello", "hello_plugin.cli:app", counted)])
    assert "Usage: slateboard run" in _invoke(["run", "--help"]).stdout
    assert calls == []  # a core command never loads a plugin
    _invoke(["hello", "again"])
    _invoke(["hello", "again"])
    assert calls == ["load"]  # loaded once, then kept
