"""Bad money input on the command line (issue 42): a blueprint whose ``limits.prices`` holds a
negative, NaN, infinite, huge or non-numeric price is rejected naming the value's path, before
any board exists; a model string with a key in its URL never prints the key, not in the run's
rejection, its cost rows, nor ``log`` and ``boards``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_testkit import Invoke, assert_no_boards

NOTES = """\
name: priced
schema: {type: object, properties: {notes: {type: array, items: {type: string}}}}
initial_state: {notes: []}
workers: {writer: {reads: ["/notes"], writes: ["/notes/-"]}}
rules: [{on: {op: start}, invoke: writer}]
done: "size(state.notes) >= 1"
"""
KEY = "sk-cli-leak-0123456789abcdef"


@pytest.mark.parametrize(
    ("price", "why"),
    [
        (".nan", "finite number"),
        (".inf", "finite number"),
        ("-1", "greater than or equal to 0"),
        ("1e300", "less than or equal to"),
        ('"cheap"', "valid number"),
    ],
)
def test_a_bad_blueprint_price_is_rejected_naming_it(
    invoke: Invoke, write_file: Any, db_path: Path, price: str, why: str
) -> None:
    path = write_file("priced.yaml", NOTES + f'limits:\n  prices: {{"m": {{"input": {price}, "output": 1}}}}\n')
    result = invoke("run", str(path), "--model", 'scripted:["{}"]')
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    head, *issues = result.stderr.splitlines()
    assert head == f"error: blueprint {path} rejected (1 issue):"
    assert len(issues) == 1 and issues[0].startswith("  - /limits/prices/m/input: ") and why in issues[0], issues
    assert_no_boards(invoke, db_path)


def test_a_key_in_the_model_url_is_never_printed(invoke: Invoke, write_file: Any) -> None:
    # no list price for this model: --max-cost refuses its first call, before any request
    model = f"openai:no-such-model-anywhere@http://user:{KEY}@127.0.0.1:9/v1"
    path = write_file("notes.yaml", NOTES)
    refused = invoke("run", str(path), "--model", model, "--max-cost", "1")
    assert refused.exit_code == 2, refused.output
    as_json = invoke("run", str(path), "--model", model, "--max-cost", "1", "--json")
    assert as_json.exit_code == 2, as_json.output
    shown = json.loads(as_json.stdout)
    assert shown["end_reason"] == "budget:board"
    outputs = [refused.output, as_json.output]
    board = shown["board_id"]
    for args in (("log", board), ("log", board, "--json"), ("show", board), ("boards",), ("boards", "--json")):
        result = invoke(*args)
        assert result.exit_code == 0, result.output
        outputs.append(result.output)
    assert all(KEY not in out for out in outputs)
    assert "user:***@127.0.0.1:9" in outputs[0] and "no price" in outputs[0]
