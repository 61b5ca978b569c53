"""Helpers for the scale tests (and tests/follow): the NOTES_PAIR blueprint, PostgreSQL URLs,
the CLI in-process and in subprocesses, and runner subprocesses."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from typer.testing import CliRunner

from _support.boards import notes_blueprint
from slateboard.cli import app

HERE = Path(__file__).resolve().parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
CLI = ["-c", "from slateboard.cli import main; main()"]
"""Run the real CLI entry point in a fresh interpreter (what the ``slateboard`` script runs)."""

NOTES_TARGET = 6
# The replies of scale_models fit this blueprint; that module is loaded by runner subprocesses,
# which have only this folder on their path, so the blueprint lives here.
NOTES_PAIR: dict[str, Any] = notes_blueprint(
    name="notes-pair",
    max_text=None,
    workers={
        # Writers read only the task, so two of them appending at once never make each other stale.
        "a": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "b": {"instruction": "Add one note.", "reads": ["/task"], "writes": ["/notes/-"], "ops": ["add"]},
        "decider": {"instruction": "Answer.", "reads": ["/**"], "writes": ["/answer"], "ops": ["add"]},
    },
    rules=[
        {"on": {"op": "start"}, "invoke": "a"},
        {"on": {"op": "start"}, "invoke": "b"},
        *(
            {
                "on": {"op": "add", "path": "/notes/-"},
                "when": f"value.author == '{writer}' && size(state.notes) < {NOTES_TARGET}",
                "invoke": writer,
            }
            for writer in ("a", "b")
        ),
        {"on": {"op": "add", "path": "/notes/-"}, "when": f"size(state.notes) >= {NOTES_TARGET}", "invoke": "decider"},
    ],
)
"""Two writers, ``a`` and ``b``, both started at once, each appending notes until there are
``NOTES_TARGET``; then the ``decider`` answers (the replies of scale_models)."""


def invoke(*args: str) -> Any:
    """The CLI in-process with a 1 ms model latency; exceptions propagate."""
    return CliRunner().invoke(app, list(args), env={"SLATEBOARD_SOAK_LATENCY_MS": "1"}, catch_exceptions=False)


def one_line_error(result: Any, code: int) -> str:
    """Asserts that the command exited with ``code`` and wrote exactly one ``error: `` line to
    stderr, and returns that line."""
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return str(lines[0])


@pytest.fixture
def blueprint_file(tmp_path: Path) -> Path:
    """NOTES_PAIR written to a JSON file (import it into a conftest to use it)."""
    path = tmp_path / "pair.json"
    path.write_text(json.dumps(NOTES_PAIR), encoding="utf-8")
    return path


def pg_dsn() -> str:
    """The PostgreSQL DSN tests use: $SLATEBOARD_TEST_PG or the local default."""
    return os.environ.get("SLATEBOARD_TEST_PG") or DEFAULT_PG


_STATE: dict[str, str | None] = {}


def pg_skip_reason() -> str | None:
    """None when the test PostgreSQL server answers, else why the test is skipped."""
    if "reason" not in _STATE:
        try:
            import psycopg

            with psycopg.connect(pg_dsn(), connect_timeout=3) as conn:
                conn.execute("SELECT 1")
            _STATE["reason"] = None
        except Exception as exc:  # any failure means: no server for these tests
            _STATE["reason"] = f"PostgreSQL at {pg_dsn()} does not answer ({type(exc).__name__}: {exc})"
    return _STATE["reason"]


def pg_url(schema: str) -> str:
    """The test database with the store's tables in ``schema``."""
    dsn = pg_dsn()
    return f"{dsn}{'&' if '?' in dsn else '?'}schema={schema}"


def private_pg_url(prefix: str) -> Iterator[str]:
    """For a fixture to yield from: the URL of a fresh schema ``prefix_<random>`` of the test
    database, dropped afterwards; skips the test when the server does not answer."""
    if reason := pg_skip_reason():
        pytest.skip(reason)
    schema = f"{prefix}_{uuid.uuid4().hex[:12]}"
    yield pg_url(schema)
    drop_schema(schema)


def drop_schema(schema: str) -> None:
    """Drop a test schema with everything in it."""
    import psycopg

    with psycopg.connect(pg_dsn(), autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this directory importable (scale_models)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env.pop("SLATEBOARD_STORE", None)
    env.update(extra)
    return env


def run_cli(*args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """Run one CLI command in a subprocess to its end."""
    return subprocess.run(
        [sys.executable, *CLI, *args], capture_output=True, text=True, timeout=timeout, env=cli_env(**env)
    )


class Worker:
    """One ``slateboard worker`` subprocess, its output going to a log file."""

    def __init__(self, path: Path, args: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.path = path
        self._log: IO[str] = path.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, *CLI, "worker", *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=cwd,
        )

    def output(self) -> str:
        """Everything the process printed so far."""
        return self.path.read_text(encoding="utf-8")

    def wait_for(self, text: str, limit: float = 60.0) -> bool:
        """Wait until the output contains ``text`` (False if the process exited first)."""
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if text in self.output():
                return True
            if self.proc.poll() is not None:
                return text in self.output()
            time.sleep(0.05)
        raise AssertionError(f"worker output never showed {text!r}:\n{self.output()[-2000:]}")

    def signal(self, sig: int) -> None:
        """Send a signal (if still running)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)

    def finish(self, limit: float = 60.0) -> int:
        """Wait for the exit code."""
        code = self.proc.wait(timeout=limit)
        self._log.close()
        return code


class Workers:
    """Starts runner subprocesses for a test and cleans them up."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.started: list[Worker] = []

    def start(self, url: str, *args: str, cwd: Path | None = None, **env: str) -> Worker:
        """``slateboard worker --store URL ARGS`` with this directory on PYTHONPATH (run in
        ``cwd``, default the test's own working directory)."""
        path = self.tmp / f"worker-{len(self.started)}.log"
        worker = Worker(path, ["--store", url, *args], cli_env(**env), cwd)
        self.started.append(worker)
        return worker

    def kill_all(self) -> None:
        """SIGKILL every worker still running (test tear-down)."""
        for w in self.started:
            if w.proc.poll() is None:
                w.proc.send_signal(signal.SIGKILL)
                w.proc.wait(timeout=30)
