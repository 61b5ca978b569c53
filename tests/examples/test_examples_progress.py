"""The examples say what they are doing while a board runs (a progress line on stderr, forced
on here with SLATEBOARD_PROGRESS=1 as the test runner is no terminal); stdout is unchanged."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from slateboard.progress import PROGRESS_ENV

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def patch(path: str, value: object) -> str:
    return json.dumps({"patch": [{"op": "add", "path": path, "value": value}]})


def test_data_discovery_shows_progress_on_stderr(tmp_path: Path) -> None:
    replies = [
        patch("/answers/-", {"id": "a1", "text": "Price", "cites": ["subscriptions.csv:cancel_reason"]}),
        patch("/critiques/-", {"answer": "a1", "verdict": "sound", "text": "price leads the reasons"}),
        patch("/answer", "Price."),
    ]
    model = "scripted:" + json.dumps(replies)
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "data_discovery" / "main.py"), "--model", model, "--store", "memory://"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, PROGRESS_ENV: "1"},
    )
    assert done.returncode == 0, done.stderr
    # the last decision shown is the decider's answer
    assert re.search(r"data discovery board: \d+ proposal\(s\), last decider accepted", done.stderr), done.stderr
    assert "0:00:0" in done.stderr
    assert done.stdout.startswith("answer:     Price.\n"), done.stdout
