"""The first hour's rough edges (issue 48): hints after an in-memory run, a missing otel extra,
help texts as a reader sees them, and ``bench NAME --help`` outside a checkout."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import typer
from cli_testkit import Invoke

from slateboard.cli import app
from slateboard.cli._errors import CliError

ROOT = Path(__file__).resolve().parents[2]


def test_an_in_memory_sqlite_run_points_no_command_at_its_gone_store(invoke: Invoke, notes_file: Path) -> None:
    result = invoke("run", str(notes_file), "--task", "write notes", "--store", "sqlite:///:memory:")
    assert result.exit_code == 0, result.output
    assert "--store sqlite:///:memory:" not in result.output
    assert "inspect with:" not in result.output
    assert "sqlite:///:memory:, in this process's memory: it is gone now" in " ".join(result.output.split())


def test_otel_without_its_extra_is_one_line_naming_the_extra(tmp_path: Path) -> None:
    # The otel extra is installed here: a meta-path finder makes its modules missing in the child.
    script = tmp_path / "no_otel.py"
    script.write_text(
        textwrap.dedent(
            """
            import sys

            class NoOtel:
                def find_spec(self, name, path=None, target=None):
                    if name == "opentelemetry" or name.startswith("opentelemetry."):
                        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
                    return None

            sys.meta_path.insert(0, NoOtel())
            from slateboard.cli import main
            main(["templates"])
            """
        )
    )
    env = {**os.environ, "SLATEBOARD_OTEL": "console"}
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'slateboard[otel]'" in lines[0] and "SLATEBOARD_OTEL=console" in lines[0]
    assert "internal error" not in done.stderr


def _commands(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import click

    ctx = click.Context(group)
    found: list[tuple[str, ...]] = [path]
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or getattr(command, "hidden", False):
            continue
        if hasattr(command, "list_commands"):
            found += _commands(command, (*path, name))
        else:
            found.append((*path, name))
    return found


ALL = _commands(typer.main.get_command(app))


@pytest.mark.parametrize("path", ALL, ids=[" ".join(p) or "slateboard" for p in ALL])
def test_every_help_page_reads_as_prose(invoke: Invoke, path: tuple[str, ...]) -> None:
    result = invoke(*path, "--help", env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "``" not in text
    assert "<bool>" not in text
    # a sentence broken by the docstring's own line end shows a short line inside a box row:
    # "│            an                    │" (a word alone on a line, then the sentence goes on)
    for line in text.splitlines():
        cell = line.strip("│ ").strip()
        if line.startswith("│") and cell and len(cell.split()) == 1 and cell.islower() and cell.isalpha():
            raise AssertionError(f"help of {' '.join(path)!r} breaks mid-sentence at {line!r}\n{text}")


def test_the_help_tidying_joins_wrapped_lines_and_keeps_lists() -> None:
    from slateboard.cli._help import prose

    assert prose("One sentence\nwrapped in ``code``.\n\nNext:\n  - a\n  - b") == (
        "One sentence wrapped in `code`.\n\nNext:\n  - a\n  - b"
    )


def test_bench_help_is_answered_outside_a_checkout(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    from slateboard.cli import _extra

    def nowhere() -> Path:
        raise CliError("no benchmarks directory found: run from a slateboard source checkout")

    monkeypatch.setattr(_extra, "find_benchmarks", nowhere)
    result = invoke("bench", "peers", "--help")
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and "no benchmarks directory found" in result.output
    assert invoke("bench", "peers").exit_code != 0  # running it still needs the scripts


def test_the_api_page_shows_class_constructor_signatures() -> None:
    import yaml

    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=yaml.BaseLoader)
    (plugin,) = [p for p in config["plugins"] if isinstance(p, dict) and "mkdocstrings" in p]
    options = plugin["mkdocstrings"]["handlers"]["python"]["options"]
    # Runner is documented by its class docstring; its signature is __init__'s
    assert options.get("merge_init_into_class") == "true"
