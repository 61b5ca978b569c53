"""Long commands say what they are doing: a rich progress line on a terminal, nothing elsewhere."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from slateboard.cli._common import progress


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
