"""One mapping from a board's stored status and end reason to what a user is told."""

from __future__ import annotations

import pytest

from slateboard.runtime.result import RunResult
from slateboard.status import END_STATUSES, end_status, failure_kind


@pytest.mark.parametrize(
    ("status", "reason", "answered", "expected"),
    [
        ("running", None, None, "running"),
        (None, "", None, "running"),
        ("done", "done", True, "solved"),
        ("done", "terminated", None, "solved"),
        ("done", "max_steps", None, "exhausted"),
        ("done", "max_tokens", False, "exhausted"),
        ("done", "max_rounds", None, "solved"),  # a round-robin team that played its rounds (issue 28)
        ("done", "max_rounds", True, "solved"),
        ("done", "max_rounds", False, "exhausted"),
        ("failed", "circuit: step budget exhausted: 40 steps (max_steps=40)", None, "exhausted"),
        ("done", "agenda_empty", False, "exhausted"),
        ("done", "agenda_empty", True, "solved"),
        ("failed", "circuit: 3 consecutive invalid proposals by 'a'", None, "failed"),
        (
            "failed",
            "circuit: model unavailable: openai:m: cannot connect (3 consecutive model failures)",
            None,
            "failed",
        ),
        ("failed", "the run raised an exception", None, "failed"),
        ("paused", "paused: awaiting approval of record 4", None, "paused"),
        (None, "paused: awaiting approval of record 4", None, "paused"),
    ],
)
def test_end_status(status: str | None, reason: str | None, answered: bool | None, expected: str) -> None:
    assert end_status(status, reason, answered=answered) == expected
    assert expected in END_STATUSES


def test_failure_kind_names_the_model() -> None:
    assert failure_kind("circuit: model unavailable: x") == "model"
    assert failure_kind("circuit: 3 consecutive invalid proposals") == "circuit"
    assert failure_kind("circuit: token budget exhausted: 9 tokens") is None
    assert failure_kind("done") is None


def test_run_result_carries_the_end_status() -> None:
    def result(reason: str, answer: object) -> RunResult:
        return RunResult("b", {}, answer, reason, 0, 0, 0, 0, 0)

    assert result("done", "42").end_status == "solved"
    assert result("max_steps", None).end_status == "exhausted"
    assert result("max_steps", None).to_json()["end_status"] == "exhausted"
    assert result("circuit: model unavailable: boom", None).end_status == "failed"
