"""A loopback HTTP server for streamed replies: each request is answered by a script that writes
its body in HTTP/1.1 chunks as it goes (``send``), can wait for the test between chunks, and
can drop the connection mid-body (an incomplete chunked body: a broken stream)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

Send = Callable[[bytes], Awaitable[None]]
Script = Callable[[dict[str, Any], Send], Awaitable[bool]]
"""``script(request_json, send)`` writes the body; returns False to drop the connection unfinished."""


def sse(data: Any) -> bytes:
    """One server-sent event carrying ``data`` as JSON (``[DONE]`` as is)."""
    text = data if isinstance(data, str) else json.dumps(data)
    return f"data: {text}\n\n".encode()


def openai_chunk(content: str | None = None, *, finish: str | None = None, usage: Any = None) -> bytes:
    """An OpenAI ``chat.completion.chunk`` event with one content delta (or none)."""
    delta = {"content": content} if content is not None else {}
    body: dict[str, Any] = {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "choices": [] if usage is not None else [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if usage is not None:
        body["usage"] = usage
    return sse(body)


class SSEServer:
    """Answers request n with ``scripts[n]`` (the last one once they run out); keeps each
    request's JSON body in ``requests``."""

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = scripts
        self.requests: list[dict[str, Any]] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> SSEServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readline()
            headers: dict[str, str] = {}
            while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                key, _, value = line.decode("latin-1").partition(":")
                headers[key.strip().lower()] = value.strip()
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))))
            self.requests.append(body)
            script = self.scripts[min(len(self.requests) - 1, len(self.scripts) - 1)]
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n"
                b"connection: close\r\n\r\n"
            )

            async def send(data: bytes) -> None:
                writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                await writer.drain()

            if await script(body, send):
                writer.write(b"0\r\n\r\n")
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
