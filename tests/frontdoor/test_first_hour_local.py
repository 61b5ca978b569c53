"""The tutorial's blueprint and the README's ``Team.blackboard`` example, as written, on the
default local model (issue 48): a run either gives a short, checked answer or ends with an
honest non-solved status; never ``solved`` with a degenerate answer (it once ended ``solved``
with 300 digits), and the team's replies are bounded (unbounded, it took five minutes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _support.probes import local_model_problem

ROOT = Path(__file__).resolve().parents[2]
_REASON = local_model_problem()
pytestmark = [pytest.mark.slow, pytest.mark.skipif(_REASON is not None, reason=_REASON or "")]
LETTERS = re.compile(r"^[A-Za-z][A-Za-z ]*$")


def _block(page: str, pattern: str) -> str:
    found = re.search(pattern, (ROOT / page).read_text(encoding="utf-8"), re.S)
    assert found is not None, f"{page} lost the block {pattern!r}"
    return found.group(1)


def test_the_tutorial_blueprint_never_ends_solved_with_garbage(tmp_path: Path) -> None:
    yaml_text = _block("docs/tutorial.md", r"<!-- doc-test: file first_team\.yaml -->\s*```yaml\n(.*?)```")
    (tmp_path / "first_team.yaml").write_text(yaml_text, encoding="utf-8")
    env = {**os.environ, "SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'boards.db'}"}
    env.setdefault("SLATEBOARD_LOCAL_THREADS", "1")
    args = ["run", "first_team.yaml", "--task", "Name a snack for a picnic", "--json"]
    done = subprocess.run(
        [sys.executable, "-m", "slateboard", *args], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    status, answer = result["end_status"], result["answer"]
    if status == "solved":
        assert isinstance(answer, str) and LETTERS.match(answer) and 3 <= len(answer) <= 40, answer
        assert answer in result["state"]["ideas"]
    else:  # the honest ending: the circuit policy halted what the board kept refusing
        assert status == "failed" and done.returncode == 1 and answer is None, result
        assert result["rejected"] > 0


def test_the_readme_team_example_is_bounded_on_the_local_model(monkeypatch: pytest.MonkeyPatch) -> None:
    code = _block("README.md", r"## Team\.blackboard\n.*?```python\n(.*?)```")
    assert 'model="local"' in code and "max_tokens" in code
    monkeypatch.setenv("SLATEBOARD_LOCAL_THREADS", os.environ.get("SLATEBOARD_LOCAL_THREADS", "1"))
    namespace: dict[str, Any] = {"__name__": "readme_team"}
    exec(compile(code, "README.md", "exec"), namespace)
    result = namespace["result"]
    team = namespace["team"]
    assert result.end_reason in ("terminated", "max_rounds"), result.end_reason
    assert result.rounds <= 3
    for name in (*team.agents, "decider"):
        usage = result.usage.get(name)
        if usage is not None:  # every free-text reply stops at its agent's cap
            assert usage.tokens_out <= 48 * usage.calls, (name, usage)
    assert isinstance(result.output, str) and result.output.strip()
