"""Ledgers in the default store (SQLite) and ``slateboard ledger show|set|reset`` (issue 33):
check-and-reserve is one ``BEGIN IMMEDIATE`` transaction, so several processes and threads on one
file never exceed a cap together; every ledger operation behaves alike on memory, SQLite and
PostgreSQL; bad input is one line naming the value, exit code 2."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from _support.boards import NOTE_REPLY, note_loop
from slateboard.errors import InvalidInput, UnknownName
from slateboard.runtime.ledger import Ledger, MemoryLedger, PostgresLedger, SqliteLedger, ledger_for
from slateboard.stores import open_store

PG = os.environ.get("SLATEBOARD_TEST_PG")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def ledger(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Ledger]:
    if request.param == "memory":
        yield MemoryLedger()
    elif request.param == "sqlite":
        yield SqliteLedger(tmp_path / "l.db")
    else:
        if not PG:
            pytest.skip("SLATEBOARD_TEST_PG not set")
        table = f"ledger_c_{uuid.uuid4().hex[:10]}"
        yield PostgresLedger(PG, table=table)
        import psycopg

        async with await psycopg.AsyncConnection.connect(PG, autocommit=True) as conn:
            await conn.execute(f"DROP TABLE IF EXISTS {table}")


async def test_every_ledger_store_reserves_settles_lists_and_resets_alike(ledger: Ledger) -> None:
    assert await ledger.names() == []
    with pytest.raises(UnknownName, match="'day'"):
        await ledger.state("day")
    await ledger.set_cap("day", 1.0)
    await ledger.set_cap("all", None)
    assert await ledger.names() == ["all", "day"]
    assert [await ledger.reserve("day", 0.3) for _ in range(4)] == [True, True, True, False]
    await ledger.settle("day", 0.3, 0.1)
    state = await ledger.state("day")
    assert state.cap == 1.0 and state.spent == pytest.approx(0.1) and state.reserved == pytest.approx(0.6)
    assert await ledger.reserve("all", 1e6)  # uncapped: counts only
    await ledger.reset("day")
    state = await ledger.state("day")
    assert (state.cap, state.spent, state.reserved) == (1.0, 0.0, 0.0)
    with pytest.raises(UnknownName, match="'nope'"):
        await ledger.reset("nope")
    with pytest.raises(UnknownName, match="'nope'"):
        await ledger.reserve("nope", 0.1)


def test_reads_of_a_file_without_ledgers_create_nothing(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "empty.db"
    sqlite3.connect(path).close()
    assert asyncio.run(SqliteLedger(path).names()) == []
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT name FROM sqlite_master").fetchall() == []


_WORKER = textwrap.dedent(
    """
    import asyncio, sys
    from slateboard.runtime.ledger import SqliteLedger
    async def main():
        ledger = SqliteLedger(sys.argv[1])
        got = 0
        for _ in range(25):
            if await ledger.reserve("shared", 0.07):
                got += 1
                await ledger.settle("shared", 0.07, 0.05)
        print(got)
    asyncio.run(main())
    """
)


def test_processes_and_threads_on_one_sqlite_ledger_never_exceed_it(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    ledger = SqliteLedger(path)
    asyncio.run(ledger.set_cap("shared", 1.0))
    script = tmp_path / "worker.py"
    script.write_text(_WORKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [
        subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(3)
    ]
    # threads of this process, each with its own event loop, reserve at the same time
    thread_counts: list[int] = []

    def worker() -> None:
        async def go() -> int:
            got = 0
            for _ in range(25):
                if await ledger.reserve("shared", 0.07):
                    got += 1
                    await ledger.settle("shared", 0.07, 0.05)
            return got

        thread_counts.append(asyncio.run(go()))

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = [int(p.communicate(timeout=120)[0].strip()) for p in procs] + thread_counts
    state = asyncio.run(ledger.state("shared"))
    # each call reserves 0.07 and spends 0.05: calls stop once spent + 0.07 > 1.0, i.e. after 19
    assert sum(counts) == 19 and len(counts) == 6
    assert state.spent == pytest.approx(0.95) and state.reserved == 0.0


async def test_ledger_for_a_store(tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 's.db'}")
    try:
        found = ledger_for(store)
        assert isinstance(found, SqliteLedger) and found.path == tmp_path / "s.db"
    finally:
        await store.close()
    memory = await open_store("memory://")
    with pytest.raises(InvalidInput, match="SQLite or PostgreSQL"):
        ledger_for(memory)
    await memory.close()


# -- the command ------------------------------------------------------------------------------
def _cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from slateboard.cli import main; main()", "ledger", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
    )
    return proc.returncode, proc.stdout, proc.stderr


def test_set_show_reset_on_the_sqlite_store(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'cli.db'}"
    asyncio.run(_create(store))
    assert _cli("show", "--store", store)[1].startswith("no ledgers in")
    code, out, _ = _cli("set", "daily", "2.5", "--store", store)
    assert code == 0 and out.strip() == "ledger daily: cap $2.5000, spent $0.0000, reserved $0.0000"
    asyncio.run(_spend(tmp_path / "cli.db"))
    code, out, _ = _cli("show", "--json", "--store", store)
    assert code == 0 and json.loads(out) == [
        {"name": "daily", "cap_usd": 2.5, "spent_usd": 0.4, "reserved_usd": 0.0, "held_by": {}}
    ]
    code, out, _ = _cli("reset", "daily", "--json", "--store", store)
    assert code == 0 and json.loads(out)["spent_usd"] == 0.0 and json.loads(out)["cap_usd"] == 2.5
    code, out, _ = _cli("set", "daily", "none", "--store", store)
    assert code == 0 and "cap none" in out


async def _create(url: str) -> None:
    store = await open_store(url)  # opening creates the store file
    await store.close()


async def _spend(path: Path) -> None:
    ledger = SqliteLedger(path)
    assert await ledger.reserve("daily", 0.5)
    await ledger.settle("daily", 0.5, 0.4)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["set", "daily", "-1"], "'-1'"),
        (["set", "daily", "abc"], "'abc'"),
        (["set", "daily", "0"], "'0'"),
        (["set", "daily", "inf"], "'inf'"),
        (["show", "nope"], "'nope'"),
        (["reset", "nope"], "'nope'"),
    ],
)
def test_bad_input_is_one_line_naming_the_value_exit_2(tmp_path: Path, args: list[str], named: str) -> None:
    store = f"sqlite:///{tmp_path / 'bad.db'}"
    asyncio.run(_create(store))
    code, out, err = _cli(*args, "--store", store)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and named in err and err.startswith("error: ")


def test_a_store_without_ledgers_is_refused(tmp_path: Path) -> None:
    code, _, err = _cli("set", "x", "1", "--store", "memory://")
    assert code == 2 and "SQLite or PostgreSQL" in err and err.count("\n") == 1


# -- run --ledger on the default store (SQLite) ---------------------------------------------------
async def test_run_reserves_against_a_ledger_of_the_sqlite_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
    from models_testkit import StubReply, StubServer, chat_completion

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    usage = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=usage))]).start()
    bp = tmp_path / "bp.json"
    limits = {"prices": {"*": {"input": 1.0, "output": 1.0}}, "max_steps": 60}
    bp.write_text(json.dumps(note_loop("capped", until=30, limits=limits)))
    url = f"sqlite:///{tmp_path / 'run.db'}"
    await _create(url)
    await SqliteLedger(tmp_path / "run.db").set_cap("tenant", 0.003)

    async def run(*extra: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            "from slateboard.cli import main; main()",
            *("run", str(bp), "--model", f"openai:stub-model@{server.url}/v1", "--store", url, "--json", *extra),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        out, err = await proc.communicate()
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    try:
        code, out, err = await run("--ledger", "tenant")
        assert code == 2 and err.count("\n") == 1 and "budget:tenant" in err, err  # stopped at the cap (issue 47)
        data = json.loads(out)
        assert data["end_reason"] == "budget:tenant" and data["end_status"] == "exhausted"
        state = await SqliteLedger(tmp_path / "run.db").state("tenant")
        assert state.spent <= 0.003 and state.reserved == 0
        assert state.spent == pytest.approx(len(server.requests) * 320 / 1e6) == pytest.approx(data["cost_usd"])
        sent = len(server.requests)
        code, out, err = await run("--ledger", "nope")
        assert code == 2 and "'nope'" in err and err.count("\n") == 1 and len(server.requests) == sent
    finally:
        await server.close()


def test_set_show_reset_on_a_postgresql_store() -> None:
    if not PG:
        pytest.skip("SLATEBOARD_TEST_PG not set")
    name = f"cli_{uuid.uuid4().hex[:10]}"
    try:
        code, out, err = _cli("set", name, "3", "--store", PG)
        assert code == 0, err
        assert out.strip() == f"ledger {name}: cap $3.0000, spent $0.0000, reserved $0.0000"
        code, out, _ = _cli("show", name, "--json", "--store", PG)
        assert json.loads(out) == [{"name": name, "cap_usd": 3.0, "spent_usd": 0.0, "reserved_usd": 0.0, "held_by": {}}]
        code, _, err = _cli("reset", f"{name}-missing", "--store", PG)
        assert code == 2 and f"'{name}-missing'" in err
    finally:

        async def drop() -> None:
            import psycopg

            async with await psycopg.AsyncConnection.connect(PG, autocommit=True) as conn:
                await conn.execute("DELETE FROM slateboard_ledger WHERE name = %s", (name,))

        asyncio.run(drop())


async def test_reset_keeps_what_was_spent_in_the_ledger_history(ledger: Ledger) -> None:
    """Issue 45: a reset zeroes the counters but never erases spend from view."""
    await ledger.set_cap("day", 1.0)
    with pytest.raises(UnknownName, match="'night'"):
        await ledger.history("night")
    assert await ledger.history("day") == []
    await ledger.reserve("day", 0.5)
    await ledger.settle("day", 0.5, 0.25)
    await ledger.reserve("day", 0.125)
    await ledger.reset("day")
    await ledger.reserve("day", 0.5)
    await ledger.settle("day", 0.5, 0.375)
    await ledger.reset("day")
    resets = await ledger.history("day")
    assert [(r.spent, r.reserved) for r in resets] == [(0.25, 0.125), (0.375, 0.0)]
    assert resets[0].at <= resets[1].at
    assert "spent $0.2500" in resets[0].line()
    state = await ledger.state("day")
    assert (state.spent, state.reserved) == (0.0, 0.0)


def test_ledger_history_command_lists_what_each_reset_zeroed(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'cli.db'}"
    asyncio.run(_create(store))
    assert _cli("set", "daily", "2.5", "--store", store)[0] == 0
    assert _cli("history", "daily", "--store", store)[1].strip() == "ledger daily: never reset"
    asyncio.run(_spend(tmp_path / "cli.db"))
    assert _cli("reset", "daily", "--store", store)[0] == 0
    code, out, _ = _cli("history", "daily", "--json", "--store", store)
    assert code == 0 and [(r["name"], r["spent_usd"]) for r in json.loads(out)] == [("daily", 0.4)]
    code, out, err = _cli("history", "nope", "--store", store)
    assert code == 2 and "'nope'" in err + out


async def test_release_gives_back_only_what_an_owner_still_holds(ledger: Ledger) -> None:
    """Issue 45: reservations are owned; ``release`` frees a dead run's, never another's."""
    await ledger.set_cap("day", 1.0)
    assert await ledger.reserve("day", 0.3, owner="b1")
    assert await ledger.reserve("day", 0.2, owner="b1")
    assert await ledger.reserve("day", 0.1, owner="b2")
    await ledger.settle("day", 0.3, 0.25, owner="b1")  # settled: no longer held by b1
    assert await ledger.holders("day") == {"b1": pytest.approx(0.2), "b2": pytest.approx(0.1)}
    await ledger.release("b1")
    state = await ledger.state("day")
    assert state.spent == pytest.approx(0.25) and state.reserved == pytest.approx(0.1)
    await ledger.release("b1")  # nothing left: a second release changes nothing
    await ledger.release("b2")
    assert (await ledger.state("day")).reserved == 0
