"""``slateboard faults`` from the command line: JSON, the table, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from slateboard.cli import app


def invoke(*args: str) -> Result:
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"}, catch_exceptions=False)


def test_faults_json_parses_and_is_written_to_out(tmp_path: Path) -> None:
    out = tmp_path / "faults.json"
    result = invoke("faults", "--n", "5", "--json", "--systems", "slateboard,json_control", "--out", str(out))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data == json.loads(out.read_text(encoding="utf-8"))
    assert data["n"] == 5 and data["systems"] == ["slateboard", "json_control"]
    slate = data["results"]["slateboard"]
    for fault in ("invalid_json", "bad_path_type", "unauthorised", "false_claim"):
        assert (slate[fault]["k"], slate[fault]["n"], slate[fault]["metric"]) == (0, 5, "contamination")
        assert slate[fault]["ci95"][0] == 0.0 and 0 < slate[fault]["ci95"][1] < 1
    assert (slate["cycle"]["k"], slate["cycle"]["metric"]) == (5, "halt")
    assert data["results"]["json_control"]["unauthorised"]["k"] == 5


def test_faults_prints_the_table() -> None:
    result = invoke("faults", "--n", "2", "--systems", "json_control", "--faults", "invalid_json,false_claim")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Invalid JSON" in text and "0/2 = 0.00" in text
    assert "False claim" in text and "2/2 = 1.00" in text


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--bogus"], "--bogus"),
        (["--systems", "slateboard,nope"], "nope"),
        (["--faults", "cycles"], "cycles"),
        (["--n", "0"], "--n"),
        (["--n", "many"], "--n"),
    ],
)
def test_faults_bad_flags_are_one_line_errors(args: list[str], needle: str) -> None:
    result = invoke("faults", *args)
    assert result.exit_code == 2
    err = result.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and needle in err[0], err
    assert result.stdout == ""
