"""Small front-door fixes: the faults report keeps pip extras in brackets; the LICENSE ships."""

from __future__ import annotations

import io
from pathlib import Path

from slateboard.eval.faults import SuiteReport, render_table

ROOT = Path(__file__).resolve().parents[2]


def test_faults_prints_pip_extras_in_brackets() -> None:
    report = SuiteReport(
        1, 0, [], [], "memory://", skipped={"loomflow": "loomflow is not installed (pip install 'slateboard[peers]')"}
    )
    out = io.StringIO()
    render_table(report, out)
    assert "pip install 'slateboard[peers]'" in out.getvalue()


def test_license_is_apache_2() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()
