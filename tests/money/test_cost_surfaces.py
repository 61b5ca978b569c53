"""Cost everywhere tokens are (issue 33): the ``run`` summary, ``log`` (each record and the
board), ``boards``, the dashboard's board list, board and records, and every ``--json`` give the
same figure, the log priced with the board's own price table; a model without a price shows as
unknown, never a guess; a key in a model URL reaches none of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "models"))
from models_testkit import StubReply, StubServer, chat_completion

from _support.boards import NOTE_REPLY, note_loop
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.web._data import Dashboard

USAGE = {"prompt_tokens": 300, "completion_tokens": 20, "total_tokens": 320}
CALL = (300 * 2.0 + 20 * 8.0) / 1e6  # $2 in, $8 out per million tokens
SECRET = "sk-urlsecret-9f8e7d"


def _bp(name: str, prices: dict[str, Any]) -> dict[str, Any]:
    return note_loop(name, until=3, limits={"prices": prices})


@pytest.fixture
async def fake(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StubServer]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    server = await StubServer([StubReply(200, chat_completion(NOTE_REPLY, usage=USAGE))]).start()
    yield server
    await server.close()


@pytest.fixture
async def boards(fake: StubServer, tmp_path: Path) -> dict[str, Any]:
    """Two boards in one SQLite store: ``priced`` (every model $2/$8 per million tokens) and
    ``unpriced`` (no price for the model); the model string carries a key in its URL."""
    url = f"sqlite:///{tmp_path / 'cost.db'}"
    model = f"openai:stub-model@http://user:{SECRET}@{fake.url.split('://', 1)[1]}/v1"
    store = await open_store(url)
    out: dict[str, Any] = {"url": url}
    for name, prices in (("priced", {"*": {"input": 2.0, "output": 8.0}}), ("unpriced", {})):
        board = await create_board(store, _bp(name, prices))
        out[name] = (board, await Runner(store, board, model=model, parallel=1).run())
    await store.close()
    return out


def _cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-c", "from slateboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "250"},
        timeout=120,
    )
    assert SECRET not in proc.stdout + proc.stderr
    return proc.returncode, proc.stdout, proc.stderr


def test_results_price_the_log_and_unknown_stays_unknown(boards: dict[str, Any]) -> None:
    _, priced = boards["priced"]
    _, unpriced = boards["unpriced"]
    assert priced.cost_usd == pytest.approx(3 * CALL) and priced.cost_by_worker == {"a": pytest.approx(3 * CALL)}
    assert unpriced.cost_usd is None and unpriced.total_tokens == 3 * 320


def test_log_and_boards_show_the_same_cost(boards: dict[str, Any]) -> None:
    url = boards["url"]
    priced, result = boards["priced"]
    unpriced, _ = boards["unpriced"]
    code, out, _ = _cli("log", priced, "--json", "--store", url)
    records = json.loads(out)["records"]
    assert code == 0
    assert sum(r["cost_usd"] for r in records) == pytest.approx(result.cost_usd)
    assert [r["cost_usd"] for r in records if r["usage"]["tokens_in"]] == [pytest.approx(CALL)] * 3
    code, out, _ = _cli("log", priced, "--store", url)
    assert code == 0 and f"cost ${3 * CALL:.4f}" in out and f"${CALL:.4f}" in out
    code, out, _ = _cli("log", unpriced, "--store", url)
    assert code == 0 and "cost unknown" in out
    code, out, _ = _cli("log", unpriced, "--json", "--store", url)
    assert [r["cost_usd"] for r in json.loads(out)["records"] if r["usage"]["tokens_in"]] == [None] * 3

    code, out, _ = _cli("boards", "--json", "--store", url)
    listed = {b["board_id"]: b["cost_usd"] for b in json.loads(out)}
    assert listed == {priced: pytest.approx(result.cost_usd), unpriced: None}
    code, out, _ = _cli("boards", "--store", url)
    assert code == 0 and f"${3 * CALL:.4f}" in out and "unknown" in out


async def test_the_dashboard_shows_the_same_cost(boards: dict[str, Any]) -> None:
    priced, result = boards["priced"]
    unpriced, _ = boards["unpriced"]
    store = await open_store(boards["url"])
    try:
        dash = Dashboard(store)
        listed = {b["board_id"]: b["cost_usd"] for b in await dash.boards()}
        assert listed == {priced: pytest.approx(result.cost_usd), unpriced: None}
        assert {b["board_id"]: b["cost_usd"] for b in await dash.boards()} == listed  # the cached pass
        board = await dash.board(priced)
        assert board["cost_usd"] == pytest.approx(result.cost_usd)
        assert board["usage"]["by_worker"]["a"]["cost_usd"] == pytest.approx(result.cost_usd)
        assert (await dash.board(unpriced))["cost_usd"] is None
        records = (await dash.records(priced))["records"]
        assert sum(r["cost_usd"] for r in records) == pytest.approx(result.cost_usd)
        shown = json.dumps([await dash.boards(), board, records, (await dash.records(unpriced))["records"]])
        assert SECRET not in shown
    finally:
        await store.close()


async def test_the_dashboard_list_prices_new_records_as_they_come(fake: StubServer, tmp_path: Path) -> None:
    store = await open_store(f"sqlite:///{tmp_path / 'grow.db'}")
    try:
        dash = Dashboard(store)
        board = await create_board(store, _bp("grow", {"*": {"input": 2.0, "output": 8.0}}))
        assert [b["cost_usd"] for b in await dash.boards()] == [0.0]
        await Runner(store, board, model=f"openai:stub-model@{fake.url}/v1", parallel=1).run()
        assert [b["cost_usd"] for b in await dash.boards()] == [pytest.approx(3 * CALL)]
    finally:
        await store.close()


async def test_the_run_summary_gives_the_cost_per_component_and_worker(fake: StubServer, tmp_path: Path) -> None:
    import asyncio

    bp = tmp_path / "priced.yaml"
    bp.write_text(json.dumps(_bp("priced", {"*": {"input": 2.0, "output": 8.0}})), encoding="utf-8")
    model = f"openai:stub-model@http://user:{SECRET}@{fake.url.split('://', 1)[1]}/v1"
    args = ["run", str(bp), "--model", model, "--store", "memory://", "--parallel", "1"]
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from slateboard.cli import main; main()",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "COLUMNS": "200"},
    )
    out, err = (b.decode() for b in await proc.communicate())
    assert proc.returncode == 0, err
    assert SECRET not in out + err
    lines = out.splitlines()
    worker = lines[next(i for i, line in enumerate(lines) if "tokens by worker" in line) + 2]
    assert worker.split() == ["a", "900", "60", "3", f"${3 * CALL:.4f}"]
    assert any(line.strip("│ ").split()[:2] == ["cost", f"${3 * CALL:.4f}"] for line in lines)
