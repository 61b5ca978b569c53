"""Long commands say what they are doing: a rich progress line on a terminal, nothing elsewhere."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from slateboard.progress import progress


def test_progress_on_a_terminal_shows_what_and_elapsed_time() -> None:
    buffer = io.StringIO()
    err = Console(file=buffer, force_terminal=True, width=100)
    with progress("architect: asking local for a blueprint [peers]", err=err):
        pass
    shown = buffer.getvalue()
    assert "architect: asking local for a blueprint [peers]" in shown  # markup off: brackets kept
    assert "0:00:0" in shown  # the elapsed-time column


def test_progress_off_a_terminal_writes_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    with progress("bench kernel"):
        print("the output")
    captured = capsys.readouterr()
    assert captured.out == "the output\n" and captured.err == ""


def test_run_with_progress_says_how_far_the_board_is() -> None:
    import asyncio
    import json

    from slateboard.blueprint.templates import load_template
    from slateboard.progress import run_with_progress
    from slateboard.runtime import Runner, create_board
    from slateboard.stores import open_store

    pick = {"patch": [{"op": "add", "path": "/hypotheses/-", "value": {"id": "h1", "fact": "f1"}}]}
    buffer = io.StringIO()
    err = Console(file=buffer, force_terminal=True, width=200)

    async def go() -> str:
        store = await open_store("memory://")
        try:
            board = await create_board(store, load_template("retention"), inputs={"question": "Why in March?"})
            runner = Runner(store, board, model="scripted:" + json.dumps([json.dumps(pick)]))
            result = await run_with_progress(runner, "retention demo", err=err)
            return result.end_status
        finally:
            await store.close()

    assert asyncio.run(go()) == "solved"
    shown = buffer.getvalue()
    assert "retention demo" in shown and "0:00:0" in shown
    # the last decision is the decider's answer, the sixth proposal (analyst, screen x2,
    # hypothesis, checker, decider)
    assert "retention demo: 6 proposal(s), last decider accepted" in shown
