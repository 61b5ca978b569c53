"""What the spend tests of a board share (issue 45): one call's usage and price, the CLI run as a
subprocess, a ``run``/``resume`` killed with SIGKILL mid-call, and a ``resume`` run to its end."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY
from slateboard.stores import open_store

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
CALL = 320 / 1e6  # one call's cost at a dollar per million tokens
LIMITS = {"prices": {"*": {"input": 1.0, "output": 1.0}}, "max_steps": 60}
OK = StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))


async def cli(env: dict[str, str], *args: str) -> asyncio.subprocess.Process:
    """``slateboard ARGS`` started as a subprocess (stdout and stderr piped)."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from slateboard.cli import main; main()",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )


async def killed_mid_call(
    env: dict[str, str], servers: list[StubServer], url: str, *args: str, answers: int = 2
) -> str:
    """Run the command ``args`` (``run BP ...`` or ``resume BOARD``) against a model that answers
    ``answers`` times and then never; SIGKILL it during the next call. Returns the board's id."""
    hanging = await StubServer([*[OK] * answers, StubReply(hang=True)]).start()
    servers.append(hanging)
    proc = await cli(env, *args, "--model", f"openai:m@{hanging.url}/v1", "--store", url, "--json")
    for _ in range(1200):  # polls, not a timing claim: the call arrives when it arrives
        if len(hanging.requests) > answers or proc.returncode is not None:
            break
        await asyncio.sleep(0.1)
    if proc.returncode is None:
        proc.kill()
    _, err = await proc.communicate()
    assert len(hanging.requests) > answers, f"the run never reached its model call {answers + 1}: {err.decode()}"
    return await only_board(url)


async def only_board(url: str) -> str:
    """The id of the one board of the store at ``url``."""
    store = await open_store(url)
    try:
        (board,) = await store.list_boards()
    finally:
        await store.close()
    return board.board_id


async def resumed(
    env: dict[str, str], servers: list[StubServer], url: str, board: str, *extra: str, code: int = 0
) -> tuple[dict[str, object], str]:
    """``resume BOARD --json EXTRA`` against a model that always answers; its result and stderr
    (the exit code must be ``code``)."""
    answering = await StubServer([OK]).start()
    servers.append(answering)
    proc = await cli(env, "resume", board, "--model", f"openai:m@{answering.url}/v1", "--store", url, "--json", *extra)
    out, err = await proc.communicate()
    assert proc.returncode == code, (proc.returncode, out.decode()[-800:], err.decode())
    data: dict[str, object] = json.loads(out) if out.strip() else {}
    return data, err.decode()
