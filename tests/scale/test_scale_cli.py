"""``slateboard submit``, ``wait`` and ``worker`` from the command line, and their errors."""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import pytest
from scale_testkit import Workers, invoke, one_line_error

from slateboard.runtime import Runner, resolve_runner_model
from slateboard.stores import open_store

MODEL = "python:scale_models:fixed_model"


def test_submit_and_wait_on_sqlite(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    submitted = invoke("submit", str(blueprint_file), "--task", "count", "--model", MODEL, "--store", url)
    assert submitted.exit_code == 0, submitted.output
    board = submitted.stdout.strip()
    assert len(board) == 32 and "\n" not in board

    still = invoke("wait", board[:8], "--store", url, "--timeout", "0.2")  # a prefix is enough
    assert "still running after 0.2 s" in one_line_error(still, 1)

    async def run_it() -> None:
        store = await open_store(url)
        try:
            info = await store.board_info(board)
            assert info.meta["model"] == MODEL
            await Runner(store, board, model=resolve_runner_model(str(info.meta["model"]))).run()
        finally:
            await store.close()

    asyncio.run(run_it())
    done = invoke("wait", board, "--store", url)
    assert done.exit_code == 0, done.output
    head, answer = done.stdout.strip().splitlines()
    assert head == f"board {board} done: done"
    assert answer.startswith("answer: ") and answer.endswith(" notes")
    data = json.loads(invoke("wait", board, "--store", url, "--json").stdout)
    assert data["status"] == "done" and data["end_reason"] == "done" and data["answer"].endswith(" notes")


def test_wait_on_a_halted_board_exits_1(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    garbage = 'scripted:["not a patch"]'
    board = invoke("submit", str(blueprint_file), "--model", garbage, "--store", url).stdout.strip()

    async def run_it() -> None:
        store = await open_store(url)
        try:
            await Runner(store, board, model=garbage).run()
        finally:
            await store.close()

    asyncio.run(run_it())
    result = invoke("wait", board, "--store", url)
    assert result.exit_code == 1
    assert result.stdout.startswith(f"board {board} failed: circuit:")
    assert result.stderr.strip() == result.stdout.splitlines()[0]


def test_submit_worker_wait_on_postgresql(pg_schema_url: str, blueprint_file: Path, workers: Workers) -> None:
    boards = [
        invoke("submit", str(blueprint_file), "--task", f"t{i}", "--model", MODEL, "--store", pg_schema_url).stdout
        for i in range(3)
    ]
    runner = workers.start(pg_schema_url, "--concurrency", "2", SLATEBOARD_SOAK_LATENCY_MS="5")
    for board in (b.strip() for b in boards):
        result = invoke("wait", board, "--store", pg_schema_url, "--timeout", "120", "--json")
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["board_id"] == board and data["status"] == "done" and data["answer"].endswith(" notes")
    runner.wait_for("started")
    runner.signal(signal.SIGTERM)
    assert runner.finish() == 0
    out = runner.output()
    assert out.count(" ended: done") == 3
    commits = [line for line in out.splitlines() if line.startswith("commit board=")]
    assert len(commits) >= 3 * 7 and all(" accepted " in line or "rejected" in line for line in commits)


def test_worker_needs_postgresql(tmp_path: Path) -> None:
    line = one_line_error(invoke("worker", "--store", f"sqlite:///{tmp_path / 'b.db'}"), 2)
    assert "needs a postgresql:// store" in line and "sqlite:///" in line


def test_worker_with_an_unreachable_store() -> None:
    line = one_line_error(invoke("worker", "--store", "postgresql://postgres@127.0.0.1:1/none"), 1)
    assert line.startswith("error: the store cannot be opened") and "127.0.0.1:1" in line


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (("worker", "--store", "postgresql://x@127.0.0.1:1/db", "--workers", "a,,b"), 2, "--workers"),
        (("worker", "--store", "postgresql://x@127.0.0.1:1/db", "--model", "nope:x"), 2, "model configuration"),
        (("worker", "--store", "postgresql://x@127.0.0.1:1/db", "--concurrency", "0"), 2, "--concurrency"),
        (("wait", "nope", "--store", "memory://"), 1, "no board 'nope'"),
        (("wait", "x", "--store", "mysql://db"), 1, "unknown store URL"),
        (("submit", "no-such-template", "--store", "memory://"), 1, "neither a blueprint file nor a known template"),
    ],
)
def test_bad_arguments_are_one_line_errors(args: tuple[str, ...], code: int, needle: str) -> None:
    assert needle in one_line_error(invoke(*args), code)


def test_submit_with_a_bad_model_creates_no_board(tmp_path: Path, blueprint_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 'boards.db'}"
    line = one_line_error(
        invoke("submit", str(blueprint_file), "--model", "python:no_such_module:x", "--store", url), 2
    )
    assert "model configuration" in line and "no_such_module" in line
    assert invoke("boards", "--store", url, "--json").stdout.strip() == "[]"


BESIDE = """\
def write(view):
    notes = view.data.get("/notes") or []
    return [{"op": "add", "path": "/notes/-", "value": f"note {len(notes) + 1}"}]
"""


def test_worker_imports_function_workers_beside_the_blueprint(
    tmp_path: Path, pg_schema_url: str, workers: Workers
) -> None:
    """``submit`` from one directory, ``slateboard worker`` from another: the worker imports the
    blueprint's function module from the directory the blueprint was submitted from (recorded
    with the board), as ``run`` and ``resume`` do, and the board ends done."""
    import subprocess
    import sys
    import uuid

    from scale_testkit import CLI, cli_env

    module = f"beside_{uuid.uuid4().hex[:8]}"  # a name no other test (or sys.modules) has
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / f"{module}.py").write_text(BESIDE, encoding="utf-8")
    blueprint = {
        "name": "beside",
        "schema": {
            "type": "object",
            "properties": {"notes": {"type": "array", "items": {"type": "string"}}, "answer": {"type": "string"}},
        },
        "initial_state": {"notes": []},
        "workers": {"writer": {"function": f"{module}:write", "reads": ["/notes"], "writes": ["/notes/-"]}},
        "rules": [
            {"on": {"op": "start"}, "invoke": "writer"},
            {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) < 2", "invoke": "writer"},
        ],
        "done": "size(state.notes) >= 2",
    }
    (project / "bp.json").write_text(json.dumps(blueprint), encoding="utf-8")
    env = cli_env()
    submitted = subprocess.run(
        [sys.executable, *CLI, "submit", "project/bp.json", "--store", pg_schema_url],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    board = submitted.stdout.strip()
    runner = workers.start(pg_schema_url, cwd=elsewhere)
    runner.wait_for(f"board {board} ", limit=120)  # its end: "ended: ..." or "failed: ..."
    runner.signal(signal.SIGTERM)
    assert runner.finish() == 0
    out = runner.output()
    assert f"board {board} ended: done" in out and "cannot import" not in out, out[-2000:]
    waited = invoke("wait", board, "--store", pg_schema_url, "--json")
    assert json.loads(waited.stdout)["status"] == "done"
