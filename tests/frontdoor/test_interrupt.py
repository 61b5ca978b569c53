"""Issue 28: Ctrl-C (SIGINT) stops a run with exit 130, marks the board ``interrupted`` (the one
word ``boards``, ``log`` and the result share) and prints the exact ``resume`` command, which
then goes on to the board's end. A real ``slateboard run`` subprocess gets a real SIGINT."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from slateboard.status import end_status
from slateboard.stores import open_store
from slateboard.stores.base import BoardInfo

ROOT = Path(__file__).resolve().parents[2]
SLATEBOARD = [sys.executable, "-c", "from slateboard.cli import main; raise SystemExit(main())"]

BLUEPRINT = """\
name: slow-count
schema:
  type: object
  properties:
    n: {type: array, items: {type: integer}}
    answer: {type: string}
initial_state: {n: []}
workers:
  count: {function: "slow_workers:count", reads: ["/n"], writes: ["/n/-"]}
  answer: {function: "slow_workers:answer", reads: ["/n"], writes: ["/answer"]}
rules:
  - {"on": {op: start}, invoke: count}
  - {"on": {op: add, path: "/n/-"}, when: "size(state.n) < 12", invoke: count}
  - {"on": {op: add, path: "/n/-"}, when: "size(state.n) >= 12", invoke: answer}
done: "has(state.answer)"
answer: /answer
limits: {max_steps: 100}
"""

WORKERS = """\
import os, time

def count(view):
    n = view.data.get("/n") or []
    if os.environ.get("SLOW_COUNT"):
        time.sleep(0.4)
    return [{"op": "add", "path": "/n/-", "value": len(n)}]

def answer(view):
    return [{"op": "add", "path": "/answer", "value": f"counted {len(view.data.get('/n') or [])}"}]
"""


async def listed(store: str) -> list[BoardInfo]:
    st = await open_store(store)
    try:
        return await st.list_boards()
    finally:
        await st.close()


def cli(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SLATEBOARD, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child needs POSIX")
def test_ctrl_c_marks_the_board_interrupted_and_resume_finishes_it(tmp_path: Path) -> None:
    (tmp_path / "bp.yaml").write_text(BLUEPRINT)
    (tmp_path / "slow_workers.py").write_text(textwrap.dedent(WORKERS))
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "SLOW_COUNT": "1", "NO_COLOR": "1", "COLUMNS": "200"}
    env.pop("SLATEBOARD_STORE", None)
    proc = subprocess.Popen(
        [*SLATEBOARD, "run", "bp.yaml", "--store", store],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        boards: list[BoardInfo] = []
        for _ in range(600):  # until the run has committed a few records (no wall-clock assertion)
            time.sleep(0.1)
            assert proc.poll() is None, proc.communicate()
            boards = asyncio.run(listed(store)) if (tmp_path / "boards.db").exists() else []
            if boards and boards[0].seq >= 3:
                break
        assert boards, "the run never committed a record"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    board_id = boards[0].board_id
    assert proc.returncode == 130, err
    assert f"slateboard resume {board_id} --store {store}" in err

    shown = json.loads(cli("boards", "--store", store, "--json", cwd=tmp_path, env=env).stdout)
    assert [(b["status"], b["end_status"], b["reason"]) for b in shown] == [("running", "interrupted", "interrupted")]
    log = cli("log", board_id, "--store", store, cwd=tmp_path, env=env)
    assert log.returncode == 0 and "interrupted: interrupted" in log.stdout.splitlines()[0]
    assert "(vV fF iI)" in log.stdout  # the legend line explains the columns

    env.pop("SLOW_COUNT")
    resumed = cli("resume", board_id, "--store", store, "--json", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["end_status"] == "solved" and result["answer"] == "counted 12"
    shown = json.loads(cli("boards", "--store", store, "--json", cwd=tmp_path, env=env).stdout)
    assert shown[0]["end_status"] == "solved"


def test_the_interrupted_status_is_one_mapping() -> None:
    assert end_status("running", "interrupted") == "interrupted"
    assert end_status(None, "interrupted") == "interrupted"
    assert end_status("running", None) == "running"
    assert end_status("done", "done") == "solved"


BLOCKING_WORKERS = """\
import os, threading
from pathlib import Path

def count(view):
    n = view.data.get("/n") or []
    if os.environ.get("BLOCK_AT") == str(len(n)):
        Path(os.environ["STARTED"]).write_text("started")
        threading.Event().wait()  # never returns: only abandoning the call ends the run
    return [{"op": "add", "path": "/n/-", "value": len(n)}]

def answer(view):
    return [{"op": "add", "path": "/answer", "value": f"counted {len(view.data.get('/n') or [])}"}]
"""


@pytest.mark.skipif(os.name != "posix", reason="SIGINT delivery to a child needs POSIX")
def test_ctrl_c_while_a_sync_function_worker_blocks(tmp_path: Path) -> None:
    """A plain function worker runs in a daemon thread: Ctrl-C while it blocks forever ends the
    run ``interrupted`` (exit 130) without waiting for it; the abandoned thread does not keep the
    process alive, and ``resume`` runs the lost invocation again."""
    (tmp_path / "bp.yaml").write_text(BLUEPRINT)
    (tmp_path / "slow_workers.py").write_text(textwrap.dedent(BLOCKING_WORKERS))
    store = f"sqlite:///{tmp_path / 'boards.db'}"
    started = tmp_path / "started"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "BLOCK_AT": "3", "STARTED": str(started), "NO_COLOR": "1"}
    env.pop("SLATEBOARD_STORE", None)
    proc = subprocess.Popen(
        [*SLATEBOARD, "run", "bp.yaml", "--store", store],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        for _ in range(1200):  # until the function is inside its endless wait
            if started.exists():
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        assert started.exists(), "the function worker never started blocking"
        proc.send_signal(signal.SIGINT)
        # A run that waited for the function would never end: this timeout only bounds a failure.
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    board_id = asyncio.run(listed(store))[0].board_id
    assert f"slateboard resume {board_id} --store {store}" in err
    shown = json.loads(cli("boards", "--store", store, "--json", cwd=tmp_path, env=env).stdout)
    assert [(b["status"], b["end_status"]) for b in shown] == [("running", "interrupted")]
    assert shown[0]["version"] == 3  # the abandoned call committed nothing

    env.pop("BLOCK_AT")
    resumed = cli("resume", board_id, "--store", store, "--json", cwd=tmp_path, env=env)
    assert resumed.returncode == 0, resumed.stderr
    result = json.loads(resumed.stdout)
    assert result["end_status"] == "solved" and result["answer"] == "counted 12"


def test_a_sync_function_runs_off_the_event_loop_and_a_timeout_abandons_it() -> None:
    """The loop stays free while a plain function runs (the worker timeout fires although the
    function never returns); the abandoned function's later result is dropped."""
    import threading

    from slateboard.runtime import Runner, create_board

    release = threading.Event()
    threads: list[str] = []
    bp = {
        "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "initial_state": {},
        "workers": {"w": {"reads": ["/n"], "writes": ["/n"]}},
        "rules": [{"on": {"op": "start"}, "invoke": "w"}],
        "done": "has(state.n)",
        "circuit": {"max_consecutive_invalid": 1, "retries": 0, "on_invalid": "halt"},
    }

    def w(view: object) -> object:
        threads.append(threading.current_thread().name)
        release.wait()
        return [{"op": "add", "path": "/n", "value": 1}]

    async def go() -> object:
        store = await open_store("memory://")
        try:
            board = await create_board(store, bp)
            return await Runner(store, board, functions={"w": w}, worker_timeout=0.2).run()
        finally:
            await store.close()

    result = asyncio.run(go())
    release.set()
    assert threads and all(t.startswith("slateboard-function-") for t in threads)
    assert threading.main_thread().name not in threads
    assert result.end_status == "failed" and result.state == {}  # type: ignore[attr-defined]
    assert "worker timed out after 0.2 s" in result.end_reason  # type: ignore[attr-defined]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_runs_plain_functions_on_threads_of_its_own() -> None:
    from slateboard.workers.function import run_in_thread

    assert asyncio.run(run_in_thread(lambda: 1)) == 1  # the parent's pool now has an idle thread
    pid = os.fork()
    if pid == 0:  # the child: exits 0 only if its call is served
        code = 1
        try:
            code = 0 if asyncio.run(asyncio.wait_for(run_in_thread(lambda: 2), 30)) == 2 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
