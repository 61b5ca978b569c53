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
