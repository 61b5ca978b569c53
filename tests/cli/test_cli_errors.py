"""Every failure is one line on stderr with a non-zero exit code and no traceback, unless --debug."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import INVALID_YAML, NOTES_YAML, Invoke, assert_no_boards


def one_line_error(result: Any, code: int = 1) -> str:
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    return str(lines[0])


def test_missing_blueprint_file(invoke: Invoke, tmp_path: Path) -> None:
    line = one_line_error(invoke("run", str(tmp_path / "nope.yaml")))
    assert "no such blueprint file" in line and "nope.yaml" in line


def test_invalid_blueprint_lists_its_issues(invoke: Invoke, write_file: Any) -> None:
    result = invoke("run", str(write_file("invalid.yaml", INVALID_YAML)))
    assert result.exit_code == 1 and "Traceback" not in result.output
    head, *issues = result.stderr.splitlines()
    assert head.startswith("error: blueprint") and "rejected" in head
    assert issues and all(line.startswith("  - ") for line in issues)
    assert any("ghost" in line for line in issues)
    assert any("/nowhere" in line for line in issues)


def test_unparseable_blueprint(invoke: Invoke, write_file: Any) -> None:
    result = invoke("run", str(write_file("broken.yaml", "name: [unclosed\n")))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "not valid YAML" in result.stderr


def test_unknown_template_lists_the_known_ones(invoke: Invoke) -> None:
    from slateboard.cli._common import template_entries, templates_module

    line = one_line_error(invoke("run", "no_such_template"))
    module = templates_module()
    if module is None:
        assert "no such blueprint file" in line
    else:
        assert "neither a blueprint file nor a known template" in line
        assert all(name in line for name, _ in template_entries(module))


def test_unknown_board(invoke: Invoke, store_url: str) -> None:
    import asyncio

    from slateboard.stores import open_store

    async def create() -> None:  # read-only commands refuse a store that does not exist yet
        await (await open_store(store_url)).close()

    asyncio.run(create())
    for command in ("log", "show", "replay"):
        line = one_line_error(invoke(command, "deadbeef"))
        assert "no board 'deadbeef'" in line


def test_corrupt_database_file(invoke: Invoke, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all " * 200)
    for args in (("boards",), ("log", "x"), ("show", "x"), ("replay", "x")):
        line = one_line_error(invoke(*args, "--store", str(garbage)))
        assert "the store is damaged" in line and str(garbage) in line


def test_corrupt_database_on_run(invoke: Invoke, notes_file: Path, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"\x00garbage" * 500)
    line = one_line_error(invoke("run", str(notes_file), "--store", f"sqlite:///{garbage}"))
    assert "the store is damaged" in line


def test_unknown_store_url(invoke: Invoke) -> None:
    line = one_line_error(invoke("boards", "--store", "ftp://example"))
    assert "unknown store URL" in line


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "x.yaml", "--parallel", "0"), "--parallel"),
        (("run", "x.yaml", "--max-steps", "0"), "--max-steps"),
        (("run",), "Missing argument"),
        (("frobnicate",), "No such command"),
        (("show", "b", "--at", "-1"), "--at"),
        (("bench", "nope"), "kernel"),
    ],
)
def test_bad_arguments(invoke: Invoke, args: tuple[str, ...], needle: str) -> None:
    line = one_line_error(invoke(*args), code=2)
    assert needle in line


def test_bad_model_string(invoke: Invoke, notes_file: Path, db_path: Path) -> None:
    line = one_line_error(invoke("run", str(notes_file), "--model", "nosuchprovider:x"), code=2)
    assert "model configuration" in line and "nosuchprovider" in line
    assert_no_boards(invoke, db_path)


def test_unresolvable_function_worker(invoke: Invoke, write_file: Any, db_path: Path) -> None:
    path = write_file("missing-fn.yaml", NOTES_YAML.replace("cli_workers:note_a", "cli_workers:no_such_fn"))
    line = one_line_error(invoke("run", str(path)))
    assert "worker configuration" in line and "no_such_fn" in line
    assert_no_boards(invoke, db_path)


def test_debug_shows_the_traceback(invoke: Invoke, tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not sqlite " * 100)
    result = invoke("--debug", "boards", "--store", str(garbage))
    assert result.exit_code == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("error: the store is damaged")
    after = invoke("boards", "--store", str(garbage), "--debug")  # accepted after the command too
    assert after.exit_code == 1 and "Traceback" in after.stderr
    quiet = invoke("boards", "--store", str(garbage))
    assert "Traceback" not in quiet.output


def test_architect_unavailable(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "slateboard.architect", None)  # makes the import fail
    line = one_line_error(invoke("architect", "a board that sorts numbers"), code=2)
    assert "Architect is not available" in line


def test_templates_unavailable(invoke: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "slateboard.blueprint.templates", None)
    line = one_line_error(invoke("templates"), code=2)
    assert "templates are not available" in line
    line = one_line_error(invoke("run", "investigation"))
    assert "no such blueprint file: investigation" in line and "no templates" in line


def test_bench_without_a_benchmarks_dir(invoke: Invoke, tmp_path: Path) -> None:
    line = one_line_error(invoke("bench", "kernel", env={"SLATEBOARD_BENCHMARKS": str(tmp_path / "none")}))
    assert "SLATEBOARD_BENCHMARKS" in line
    empty = tmp_path / "empty"
    empty.mkdir()
    line = one_line_error(invoke("bench", "store", env={"SLATEBOARD_BENCHMARKS": str(empty)}))
    assert "benchmark script not found" in line
