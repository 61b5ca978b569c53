"""Fork lineage on the CLI (issue 42): ``boards``, ``show`` and ``log`` name a fork's parent and
the version it was taken at, and a parent's forks."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from slateboard.runtime import Runner, create_board
from slateboard.runtime.fork import fork_board
from slateboard.stores import open_store

BLUEPRINT: dict[str, Any] = {
    "name": "notes3",
    "schema": {"type": "object", "properties": {"notes": {"type": "array", "items": {"type": "string"}}}},
    "initial_state": {"notes": []},
    "workers": {"writer": {"reads": ["/notes"], "writes": ["/notes/-"]}},
    "rules": [
        {"on": {"op": "start"}, "invoke": "writer"},
        {"on": {"op": "add", "path": "/notes/-"}, "when": "size(state.notes) < 3", "invoke": "writer"},
    ],
}


def _scripted(*texts: str) -> str:
    replies = [json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": t}]}) for t in texts]
    return f"scripted:{json.dumps(replies)}"


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str, str, str]:
    """A parent of three notes, a fork of it at version 1 and one at version 2, and a lone board."""
    url = f"sqlite:///{tmp_path_factory.mktemp('lineage') / 'b.db'}"

    async def build() -> tuple[str, str, str, str]:
        store = await open_store(url)
        try:
            parent = await create_board(store, BLUEPRINT)
            await Runner(store, parent, model=_scripted("p0", "p1", "p2")).run()
            first = await fork_board(store, parent, 1)
            second = await fork_board(store, parent, 2)
            await create_board(store, BLUEPRINT)
            return url, parent, first, second
        finally:
            await store.close()

    return asyncio.run(build())


def _cli(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", "from slateboard.cli import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "COLUMNS": "250"},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_boards_json_names_parents_versions_and_children(family: tuple[str, str, str, str]) -> None:
    url, parent, first, second = family
    listed = {b["board_id"]: b for b in json.loads(_cli("boards", "--json", "--store", url))}
    assert listed[parent]["parent"] is None
    assert listed[parent]["children"] == [{"board_id": first, "version": 1}, {"board_id": second, "version": 2}]
    assert listed[first]["parent"] == {"board_id": parent, "version": 1} and listed[first]["children"] == []
    assert listed[second]["parent"] == {"board_id": parent, "version": 2}
    lone = next(b for b in listed.values() if b["board_id"] not in (parent, first, second))
    assert (lone["parent"], lone["children"]) == (None, [])


def test_the_boards_table_has_a_fork_column(family: tuple[str, str, str, str]) -> None:
    url, parent, first, _ = family
    out = _cli("boards", "--store", url)
    assert "fork of" in out
    assert next(line for line in out.splitlines() if line.startswith(first)).count(f"{parent}@1") == 1


def test_show_names_the_parent_and_the_forks(family: tuple[str, str, str, str]) -> None:
    url, parent, first, second = family
    shown = json.loads(_cli("show", first, "--json", "--store", url))
    assert shown["parent"] == {"board_id": parent, "version": 1} and shown["state"] == {"notes": ["p0"]}
    assert json.loads(_cli("show", parent, "--json", "--store", url))["children"] == [
        {"board_id": first, "version": 1},
        {"board_id": second, "version": 2},
    ]
    assert f"fork of {parent} at version 2" in _cli("show", second, "--store", url)
    assert f"forked into {first} (at version 1), {second} (at version 2)" in _cli("show", parent, "--store", url)


def test_the_log_table_names_the_parent_and_the_forks(family: tuple[str, str, str, str]) -> None:
    url, parent, first, _ = family
    assert f"fork of {parent} at version 1" in _cli("log", first, "--store", url)
    assert f"forked into {first} (at version 1)" in _cli("log", parent, "--store", url)


def test_log_json_names_the_parent_and_the_forks(family: tuple[str, str, str, str]) -> None:
    url, parent, first, second = family
    child = json.loads(_cli("log", first, "--json", "--store", url))
    assert child["board_id"] == first and child["parent"] == {"board_id": parent, "version": 1}
    assert child["children"] == [] and all("seq" in r and "cost_usd" in r for r in child["records"])
    origin = json.loads(_cli("log", parent, "--json", "--store", url))
    assert origin["parent"] is None and origin["children"] == [
        {"board_id": first, "version": 1},
        {"board_id": second, "version": 2},
    ]
    # The records are the board's whole log (the parent ran three accepted proposals).
    assert [r["outcome"] for r in origin["records"] if r["kind"] == "proposal"] == ["accepted"] * 3
    assert len(origin["records"]) == origin["records"][-1]["seq"]
