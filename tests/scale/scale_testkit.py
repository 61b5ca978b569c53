"""Helpers for the scale tests: PostgreSQL URLs and runner subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

HERE = Path(__file__).resolve().parent
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"
CLI = ["-c", "from slateboard.cli import main; main()"]
"""Run the real CLI entry point in a fresh interpreter (what the ``slateboard`` script runs)."""


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
