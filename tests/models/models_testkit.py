"""Test helpers for the model-provider tests: a loopback HTTP stub server, canned OpenAI
bodies, and a recording stand-in for asyncio.sleep. Imported by conftest.py and the tests."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import Any


class RecordingSleep:
    """A stand-in for asyncio.sleep that records each requested delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)
        await asyncio.sleep(0)


@dataclass
class StubReply:
    """What the stub answers to one request; `hang=True` never answers."""

    status: int = 200
    body: Any = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False

    def encoded(self) -> tuple[bytes, str]:
        if isinstance(self.body, bytes):
            return self.body, "text/plain"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain"
        return json.dumps(self.body).encode(), "application/json"


@dataclass
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Responder = StubReply | Callable[[ReceivedRequest], StubReply]


class StubServer:
    """A minimal HTTP/1.1 server on 127.0.0.1 answering with scripted replies, in order.

    The last responder is reused once the script runs out. Every request is kept in `requests`.
    """

    def __init__(self, responders: list[Responder]) -> None:
        self._responders = responders
        self.requests: list[ReceivedRequest] = []
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> StubServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _next_reply(self, request: ReceivedRequest) -> StubReply:
        index = min(len(self.requests) - 1, len(self._responders) - 1)
        responder = self._responders[index]
        return responder(request) if callable(responder) else responder

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            while True:
                request_line = await reader.readline()
                if not request_line.strip():
                    return
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = line.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                request = ReceivedRequest(method, path, headers, body)
                self.requests.append(request)
                reply = self._next_reply(request)
                if reply.hang:
                    await asyncio.Event().wait()
                payload, content_type = reply.encoded()
                head = [
                    f"HTTP/1.1 {reply.status} {HTTPStatus(reply.status).phrase}",
                    f"content-length: {len(payload)}",
                    f"content-type: {content_type}",
                    *(f"{k}: {v}" for k, v in reply.headers.items()),
                ]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._tasks.discard(task)
            writer.close()


StartStub = Callable[..., Awaitable[StubServer]]


def free_port() -> int:
    """A loopback TCP port that nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def chat_completion(content: str | None = "hello", *, usage: dict[str, int] | None = None) -> dict[str, Any]:
    """A minimal OpenAI chat.completion body."""
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
    }
    if usage is not None:
        body["usage"] = usage
    return body


@dataclass(frozen=True)
class LlamaServer:
    """A running `llama_cpp.server`: its OpenAI base URL, how long it took to answer, its log."""

    base_url: str
    startup_s: float
    log: Path
