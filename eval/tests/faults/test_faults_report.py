"""The faults report keeps pip extras in brackets."""

from __future__ import annotations

import io

from slateboard_eval.faults import SuiteReport, render_table


def test_faults_prints_pip_extras_in_brackets() -> None:
    report = SuiteReport(
        1,
        0,
        [],
        [],
        "memory://",
        skipped={"loomflow": "loomflow is not installed (pip install 'slateboard-eval[peers]')"},
    )
    out = io.StringIO()
    render_table(report, out)
    assert "pip install 'slateboard-eval[peers]'" in out.getvalue()
