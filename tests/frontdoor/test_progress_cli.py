"""Every long command shows what it is doing and the elapsed time on stderr (forced on here with
SLATEBOARD_PROGRESS=1, since the test runner is no terminal), and its stdout, JSON included,
stays exactly what it was."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner, Result

from slateboard.cli import app
from slateboard.progress import PROGRESS_ENV

ELAPSED = "0:00:0"  # rich's elapsed-time column, for a command that takes under ten seconds


def invoke(args: list[str], *, forced: bool = True, **env: str) -> Result:
    environment = {"COLUMNS": "200", PROGRESS_ENV: "1" if forced else "", **env}
    return CliRunner().invoke(app, args, env=environment, catch_exceptions=False)


def test_bench_shows_progress_passes_stderr_and_keeps_stdout_as_written(tmp_path: Path) -> None:
    script = tmp_path / "kernel.py"
    script.write_text(
        "import json, sys\n"
        "print('warming up', file=sys.stderr, flush=True)\n"
        "print(json.dumps({'args': sys.argv[1:], 'ops_per_s': 12345}))\n"
        "sys.exit(3 if '--fail' in sys.argv else 0)\n",
        encoding="utf-8",
    )
    result = invoke(["bench", "kernel", "--json", "--proposals", "10"], SLATEBOARD_BENCHMARKS=str(tmp_path))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"args": ["--json", "--proposals", "10"], "ops_per_s": 12345}
    assert "bench kernel" in result.stderr and ELAPSED in result.stderr
    assert "warming up" in result.stderr
    failed = invoke(["bench", "kernel", "--fail"], SLATEBOARD_BENCHMARKS=str(tmp_path))
    assert failed.exit_code == 3


def test_the_helper_is_the_one_the_architect_uses() -> None:
    from slateboard.cli import _extra
    from slateboard.progress import progress

    assert _extra.progress is progress  # type: ignore[attr-defined]  # imported there, not exported
