"""Helpers shared by the tests in this directory (kept out of conftest.py so that test modules
import them by a unique module name: several conftest.py files are all called ``conftest``)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))


pytest.importorskip("fastapi", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("uvicorn", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")
pytest.importorskip("sse_starlette", reason="the dashboard tests need the web extra (pip install 'slateboard[web]')")


@dataclass
class Boards:
    """A SQLite store file and the id of one board run to its end in it."""

    url: str
    board_id: str


class ThreadServer:
    """The dashboard app served by uvicorn on a free loopback port, in a thread of its own."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> ThreadServer:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the dashboard server did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(15)
        self.sock.close()


async def sse_events(response: httpx.Response) -> AsyncIterator[tuple[str, Any, str | None]]:
    """(event, parsed data, id) for each server-sent event of a streaming response."""
    data: list[str]
    ident: str | None
    kind, data, ident = "message", [], None
    async for line in response.aiter_lines():
        if line == "":
            if data:
                yield kind, json.loads("\n".join(data)), ident
            kind, data, ident = "message", [], None
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                kind = value
            elif field == "data":
                data.append(value)
            elif field == "id":
                ident = value


@dataclass
class Served:
    """A ``slateboard serve`` subprocess and the URL it printed."""

    proc: subprocess.Popen[str]
    url: str
    first_line: str


@contextlib.contextmanager
def serve_cli(*args: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """Run ``slateboard serve --port 0 ARGS`` in a subprocess until the block ends (then SIGINT)."""
    code = "from slateboard.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "--port", "0", "--no-open", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        line = proc.stdout.readline() if ready else ""
        if "http://" not in line:
            proc.kill()
            _, err = proc.communicate(timeout=10)
            raise RuntimeError(f"slateboard serve did not start: {line!r} {err!r}")
        url = line.split(" on ", 1)[1].split(" ", 1)[0].rstrip("/")
        yield Served(proc, url, line)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


@contextlib.contextmanager
def browser_page(playwright: Any, chromium: Path) -> Iterator[tuple[Any, list[str]]]:
    """A page of a headless ``chromium`` (1400x1050) and the list its page errors and console
    errors are collected into (a test asserts it stays empty); the browser closes on exit."""
    browser = playwright.chromium.launch(executable_path=str(chromium), headless=True)
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1050})
        problems: list[str] = []
        page.on("pageerror", lambda exc: problems.append(str(exc)))
        page.on("console", lambda msg: problems.append(msg.text) if msg.type == "error" else None)
        yield page, problems
    finally:
        browser.close()


def playwright_or_skip() -> tuple[Any, Path]:
    """Playwright's sync API and the Chromium the browser tests drive (``SLATEBOARD_CHROMIUM``,
    else Debian's); called at a test module's top, it skips that module, saying which is missing."""
    chromium = Path(os.environ.get("SLATEBOARD_CHROMIUM", "/usr/bin/chromium"))
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    if not chromium.exists():
        pytest.skip(f"no Chromium at {chromium} (apt-get install chromium)", allow_module_level=True)
    return sync_api, chromium
