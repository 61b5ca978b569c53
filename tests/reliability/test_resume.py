"""D4, D13, D16, D17: ``slateboard resume`` on ended boards and boards with function workers.

Before: resuming a board that ended at max_steps hung forever (its pending invocation was
selected, ``claim`` needs a running board, the retry loop never ended); resuming a finished
board appended one more run-end record each time; and resume did not put the blueprint's
directory on ``sys.path`` as ``run`` does, so its function workers could not be imported. A run/resume that lost its compare-and-set to
another one on the same board exited 1 with a raw "store error" (D13): it is a busy board.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from reliability_testkit import Invoke

from slateboard.blueprint import load_blueprint
from slateboard.cli._errors import describe
from slateboard.kernel import Record
from slateboard.runtime import create_board
from slateboard.stores import open_store
from slateboard.stores.base import AppendResult, Conflict, LeaseLost
from slateboard.stores.sqlite import SqliteStore

WORKERS = """
def note(view):
    notes = view.data.get("/notes") or []
    return [{"op": "add", "path": "/notes/-", "value": f"note {len(notes)}"}]
"""

BLUEPRINT = """\
name: counter
schema: {type: object, properties: {task: {type: string}, notes: {type: array, items: {type: string}}}}
initial_state: {task: "", notes: []}
workers:
  a: {function: "rel_counter_workers:note", reads: [/notes], writes: [/notes/-]}
rules:
  - {"on": {op: start}, invoke: a}
  - {"on": {op: add, path: /notes/-}, when: "size(state.notes) < 10", invoke: a}
"""

CLI = "import sys; from slateboard.cli import main; sys.argv[0] = 'slateboard'; sys.exit(main())"


def _cli(*args: str, cwd: Path, store: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLATEBOARD_STORE": store, "COLUMNS": "200"}
    try:
        return subprocess.run(
            [sys.executable, "-c", CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"slateboard {' '.join(args)} did not finish (hang)")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    d = tmp_path / "project"
    d.mkdir()
    (d / "rel_counter_workers.py").write_text(WORKERS)
    (d / "counter.yaml").write_text(BLUEPRINT)
    (tmp_path / "elsewhere").mkdir()
    return d


def test_d4_d16_resume_of_a_board_ended_at_max_steps(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    run = _cli("run", str(project / "counter.yaml"), "--max-steps", "2", "--json", cwd=project, store=store)
    assert run.returncode == 0, run.stderr
    board = json.loads(run.stdout)["board_id"]
    log = _cli("log", board, "--json", cwd=project, store=store)
    before = json.loads(log.stdout)["records"]
    for _ in range(2):
        resumed = _cli("resume", board, "--json", cwd=project, store=store)
        assert resumed.returncode == 0, resumed.stderr
        assert json.loads(resumed.stdout)["resumed"] is False
    after = json.loads(_cli("log", board, "--json", cwd=project, store=store).stdout)["records"]
    assert after == before  # no run-end record appended per resume


def test_d17_resume_imports_function_workers_from_the_blueprint_directory(project: Path, tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    run = _cli("run", str(project / "counter.yaml"), "--max-steps", "1", "--json", cwd=project, store=store)
    board = json.loads(run.stdout)["board_id"]

    # A second board of the same blueprint left running (as after a crash), created the way
    # `run` creates one, then resumed from another directory.
    async def make() -> str:
        st = await open_store(store)
        try:
            info = await st.board_info(board)
            return await create_board(st, load_blueprint(project / "counter.yaml"), meta=info.meta)
        finally:
            await st.close()

    sys.path.insert(0, str(project))
    try:
        second = asyncio.run(make())
    finally:
        sys.path.remove(str(project))
    resumed = _cli("resume", second, "--json", cwd=tmp_path / "elsewhere", store=store)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["version"] == 10  # the start note and nine more, all committed


def test_d17_the_blueprint_directory_is_a_search_path_never_the_contract(project: Path, tmp_path: Path) -> None:
    """The directory kept in board meta is not covered by the hash chain (a path on one machine,
    and the code files in it are not hashed either): resume only searches it for function
    workers. The contract is the stored blueprint, bound in the genesis: a blueprint file edited
    in that directory afterwards changes nothing."""
    store = f"sqlite:///{tmp_path / 'boards.db'}"

    async def make() -> str:
        st = await open_store(store)
        try:
            meta = {"blueprint_dir": str(project)}  # what `run` records
            return await create_board(st, load_blueprint(project / "counter.yaml"), meta=meta)
        finally:
            await st.close()

    sys.path.insert(0, str(project))
    try:
        board = asyncio.run(make())
    finally:
        sys.path.remove(str(project))
    edited = BLUEPRINT.replace("size(state.notes) < 10", "size(state.notes) < 3")
    (project / "counter.yaml").write_text(edited + "invariants: [{at: /notes, rule: 'size(self) <= 3'}]\n")
    resumed = _cli("resume", board, "--json", cwd=tmp_path / "elsewhere", store=store)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["version"] == 10  # the stored contract, not the edited file
    verified = _cli("replay", board, "--verify", cwd=tmp_path / "elsewhere", store=store)
    assert verified.returncode == 0, verified.stderr


def test_d13_a_board_that_moved_on_is_reported_busy_not_a_store_error() -> None:
    # What a second run/resume raised when another one appended first (reproduced by hand with
    # two `slateboard resume` processes on one board: "error: store error: board ...: record 2
    # was prepared after record 1, but the log ends at 5"). The race itself is not scheduled
    # here: a test that depends on which process wins would be flaky.
    err = describe(Conflict("b1", "record 2 was prepared after record 1, but the log ends at 5"))
    assert err.code == 1 and err.message.startswith("the board is busy: another run or resume")
    assert "store error" not in err.message
    lost = describe(LeaseLost("b1: the claim of invocation i1 expired and was taken by another runner"))
    assert lost.code == 1 and lost.message.startswith("the board is busy") and "store error" not in lost.message


def test_d13_resume_that_loses_every_append_to_another_writer_says_busy(
    project: Path, tmp_path: Path, invoke: Invoke, store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole path, deterministically: every append of this resume loses the compare-and-set
    (as when another process keeps committing to the board first). The command exits 1 saying
    the board is busy, never "store error" or "internal error", and the log is unchanged."""

    async def make() -> tuple[str, int]:
        st = await open_store(store_url)
        try:
            meta = {"blueprint_dir": str(project)}  # what `run` records
            board = await create_board(st, load_blueprint(project / "counter.yaml"), meta=meta)
            return board, (await st.board_info(board)).seq
        finally:
            await st.close()

    sys.path.insert(0, str(project))
    try:
        board, seq = asyncio.run(make())
    finally:
        sys.path.remove(str(project))

    async def lose(self: SqliteStore, board_id: str, record: Record, **_: object) -> AppendResult:
        raise Conflict(
            board_id, f"record {record.seq} was prepared after record {record.seq - 1}, but the log moved on"
        )

    monkeypatch.setattr(SqliteStore, "append", lose)
    result = invoke("resume", board)
    assert result.exit_code == 1, result.output
    assert "the board is busy: another run or resume" in result.stderr, result.stderr
    assert "store error" not in result.stderr and "internal error" not in result.stderr
    monkeypatch.undo()

    async def now() -> int:
        st = await open_store(store_url)
        try:
            return (await st.board_info(board)).seq
        finally:
            await st.close()

    assert asyncio.run(now()) == seq
