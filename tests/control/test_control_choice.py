"""Issue 18: control units chosen by name (the Runner's ``control="..."``, the CLI's
``--control agenda|round-robin|coordinator``)."""

from __future__ import annotations

from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app
from slateboard.runtime import Runner, create_board
from slateboard.scheduling.control import AgendaOrder, RoundRobin
from slateboard.scheduling.units import make_control
from slateboard.stores import open_store

BP: dict[str, Any] = {
    "name": "choice",
    "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}},
    "initial_state": {"notes": []},
    "workers": {"a": {"reads": ["/**"], "writes": ["/notes/-"]}, "b": {"reads": ["/**"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "b", "priority": 5}, {"on": {"op": "start"}, "invoke": "a"}],
}


def note(name: str) -> Any:
    return lambda view: [{"op": "add", "path": "/notes/-", "value": name}]


@pytest.mark.parametrize(("control", "order"), [("agenda", ["b", "a"]), ("round-robin", ["a", "b"])])
async def test_the_named_control_unit_decides_the_order(control: str, order: list[str]) -> None:
    store = await open_store("memory://")
    board = await create_board(store, BP)
    runner = Runner(store, board, functions={"a": note("a"), "b": note("b")}, control=control)
    result = await runner.run()
    assert result.state["notes"] == order
    assert isinstance(runner.control, RoundRobin if control == "round-robin" else AgendaOrder)
    await store.close()


def test_unknown_or_incomplete_control_units_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown control unit"):
        Runner(None, "b", control="random")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="needs a model"):
        make_control("coordinator", ["a"])
    assert isinstance(make_control("round-robin", ["a", "b"]), RoundRobin)


def test_the_cli_offers_and_checks_control() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["run", "--help"], terminal_width=200)
    assert "--control" in shown.output
    resumed = runner.invoke(app, ["resume", "--help"], terminal_width=200)
    assert "--control" in resumed.output
