"""Issue 29, R16: after a SIGKILL, a resume says what it waits for, and a same-host resume of a
dead process's lease goes on at once.

Fails on ec36c64: lease owners were ``runner-<id>`` (no host, no pid) and the store could not
report leases, so a resume waited out the whole lease of a killed runner (an hour here: the
test's deadline ends it) without a word. Now owners are ``runner-<id>@<host>:<pid>``; a lease of
a process of this host that no longer exists is given back at once; any other lease is waited
for, and the log names the invocation, the owner and how long.

The deadline (``asyncio.wait_for``) only stops a hang; nothing here measures speed.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from slateboard.runtime import Runner, create_board
from slateboard.runtime.owners import dead_on_this_host, host_name, runner_owner
from slateboard.stores import open_store
from slateboard.stores.base import ReportsLeases, supports

BLUEPRINT: dict[str, Any] = {
    "name": "resume-after-kill",
    "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}},
    "initial_state": {"notes": []},
    "workers": {"a": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}],
}
DEADLINE_S = 120.0  # far below the hour-long leases below: reaching it means the resume waited


def note(view: Any) -> Any:
    return [{"op": "add", "path": "/notes/-", "value": "done"}]


def _gone_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_owner_names_say_host_and_pid() -> None:
    me = runner_owner()
    assert me.endswith(f"@{host_name()}:{os.getpid()}")
    assert not dead_on_this_host(me)  # this process
    assert dead_on_this_host(f"runner-x@{host_name()}:{_gone_pid()}")
    assert not dead_on_this_host(f"runner-x@another-host-{os.getpid()}:1")
    assert not dead_on_this_host("runner-1234abcd")  # an old owner name: waited for


PG = os.environ.get("SLATEBOARD_TEST_PG")


@pytest.mark.parametrize("url", ["sqlite", "memory", "postgresql"])
async def test_a_dead_local_lease_is_given_back_at_once(
    tmp_path: Path, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    if url == "postgresql" and not PG:
        pytest.skip("SLATEBOARD_TEST_PG is not set (a PostgreSQL server)")
    urls = {
        "sqlite": f"sqlite:///{tmp_path / 'b.db'}",
        "memory": "memory://",
        "postgresql": f"{PG}?schema=r16_{uuid.uuid4().hex[:10]}",
    }
    store = await open_store(urls[url])
    try:
        assert supports(store, ReportsLeases)
        board = await create_board(store, BLUEPRINT)
        dead = f"runner-dead@{host_name()}:{_gone_pid()}"
        claim = await store.claim(board, owner=dead, lease_s=3600)
        assert claim is not None
        assert [x.owner for x in await store.leases(board)] == [dead]  # type: ignore[attr-defined]  # supports() above
        with caplog.at_level(logging.WARNING, logger="slateboard"):
            result = await asyncio.wait_for(Runner(store, board, functions={"a": note}).run(), DEADLINE_S)
        assert result.state["notes"] == ["done"]
        assert any("no longer exists" in r.getMessage() and dead in r.getMessage() for r in caplog.records)
    finally:
        if url == "postgresql":
            await store.drop_schema()  # type: ignore[attr-defined]
        await store.close()


async def test_another_hosts_lease_is_waited_for_and_the_wait_is_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'b.db'}")
    try:
        board = await create_board(store, BLUEPRINT)
        other = "runner-live@elsewhere-host:4242"
        assert await store.claim(board, owner=other, lease_s=1.5) is not None
        with caplog.at_level(logging.WARNING, logger="slateboard"):
            result = await asyncio.wait_for(Runner(store, board, functions={"a": note}).run(), DEADLINE_S)
        assert result.state["notes"] == ["done"]
        said = [r.getMessage() for r in caplog.records if "waiting" in r.getMessage()]
        assert len(said) == 1, said
        assert other in said[0] and "leased by" in said[0] and " s for invocation " in said[0]
    finally:
        await store.close()


HANGING_RUNNER = """
import asyncio, sys
from slateboard.runtime import Runner
from slateboard.stores import open_store

async def hang(view):
    print("claimed", flush=True)
    await asyncio.sleep(3600)

async def main():
    store = await open_store(sys.argv[1])
    await Runner(store, sys.argv[2], functions={"a": hang}, lease_s=3600).run()

asyncio.run(main())
"""


async def test_resume_after_sigkill_on_this_host_goes_on_at_once(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'b.db'}"
    store = await open_store(url)
    board = await create_board(store, BLUEPRINT)
    await store.close()
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2] / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-c", HANGING_RUNNER, url, board], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), DEADLINE_S)
        assert line.strip() == "claimed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    store = await open_store(url)
    try:
        (lease,) = await store.leases(board)  # type: ignore[attr-defined]  # supports() above
        assert lease.owner.endswith(f"@{host_name()}:{proc.pid}")  # an hour-long lease of the dead runner
        result = await asyncio.wait_for(Runner(store, board, functions={"a": note}).run(), DEADLINE_S)
        assert result.state["notes"] == ["done"]
    finally:
        await store.close()
