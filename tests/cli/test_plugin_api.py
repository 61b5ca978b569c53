"""``slateboard.cli.plugin``: a plugin's commands fail the way the core's do (one line, exit
1 or 2, no traceback) and ``run_plugin`` runs both kinds of plugin object without installing."""

from __future__ import annotations

import pytest
import typer

from slateboard.cli.plugin import EXIT_ERROR, EXIT_USAGE, CliError, CliUsageError, run_plugin


def _register(app: typer.Typer) -> None:
    @app.command("ok")
    def ok() -> None:
        typer.echo("fine")

    @app.command("usage")
    def usage() -> None:
        raise CliUsageError("--x: must be >= 1,\n got 0")

    @app.command("fail")
    def fail() -> None:
        raise CliError("no board 'b1' in postgresql://u:hunter2@db/x")

    @app.command("crash")
    def crash() -> None:
        raise ZeroDivisionError("boom")


@pytest.mark.parametrize(
    ("command", "code", "stderr"),
    [
        ("ok", 0, ""),
        ("usage", EXIT_USAGE, "error: --x: must be >= 1, got 0\n"),
        ("crash", EXIT_ERROR, "error: internal error: ZeroDivisionError: boom (run with --debug for the traceback)\n"),
        ("nope", EXIT_USAGE, "error: No such command 'nope'. (see: slateboard --help)\n"),
    ],
)
def test_a_plugin_command_fails_like_a_core_command(
    command: str, code: int, stderr: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_plugin(_register, [command]) == code
    captured = capsys.readouterr()
    assert captured.err == stderr
    assert captured.out == ("fine\n" if command == "ok" else "")


def test_a_plugin_error_never_shows_a_store_password(capsys: pytest.CaptureFixture[str]) -> None:
    from slateboard.redaction import register_url_secrets

    register_url_secrets(["postgresql://u:hunter2@db/x"])
    assert run_plugin(_register, ["fail"]) == EXIT_ERROR
    err = capsys.readouterr().err
    assert "hunter2" not in err and err.startswith("error: no board 'b1' in postgresql://u:")


def test_a_typer_app_is_added_as_a_group_under_its_name(capsys: pytest.CaptureFixture[str]) -> None:
    group = typer.Typer()
    _register(group)
    assert run_plugin(group, ["tools", "ok"], name="tools") == 0
    assert capsys.readouterr().out == "fine\n"


def test_anything_else_is_refused() -> None:
    with pytest.raises(TypeError, match=r"plugin x is a int, not a typer\.Typer or a register"):
        run_plugin(42, ["x"], name="x")


def test_only_the_plugins_own_commands_are_there(capsys: pytest.CaptureFixture[str]) -> None:
    # slateboard-eval is importable in this checkout: the core would list its eval and faults
    assert run_plugin(_register, ["--help"]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in ("ok", "usage", "fail", "crash"))
    assert "faults" not in out and "eval" not in out
    assert run_plugin(_register, ["faults"]) == EXIT_USAGE
    assert capsys.readouterr().err.startswith("error: No such command 'faults'.")
