"""Helpers for the Team.blackboard tests: a fixed clock, event capture, log verification."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from slateboard.blueprint import compile_blueprint
from slateboard.kernel import ReplayReport, replay
from slateboard.runtime import RunEvent
from slateboard.stores.base import Store


def ticking_clock(start: datetime | None = None) -> Callable[[], datetime]:
    """A clock that advances one second per call (deterministic timestamps)."""
    state = {"t": start or datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)}

    def now() -> datetime:
        current = state["t"]
        state["t"] = current + timedelta(seconds=1)
        return current

    return now


def decision(terminate: bool = False, agent: str | None = None, instruction: str | None = None) -> str:
    """A coordinator answer as JSON text."""
    return json.dumps({"terminate": terminate, "next_agent": agent, "instruction": instruction})


class Events:
    """Collects events from an on_event callback."""

    def __init__(self) -> None:
        self.items: list[RunEvent] = []

    def __call__(self, event: RunEvent) -> None:
        self.items.append(event)

    @property
    def kinds(self) -> list[str]:
        return [e.kind for e in self.items]

    def of(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.items if e.kind == kind]


async def verify_log(store: Store, board_id: str, *, revalidate: bool = False) -> ReplayReport:
    """Replay the board's log from its stored blueprint and initial state."""
    loaded = await store.load_board(board_id)
    records = await store.read_records(board_id)
    return replay(compile_blueprint(loaded.blueprint), loaded.initial_state, records, revalidate=revalidate)


# -- loopback providers ----------------------------------------------------------------------------
Answer = Callable[[dict[str, Any]], Any]
"""Given a request body, what the fake provider answers: a text, or (Anthropic, when the request
forces the response tool) the tool's input object."""


class LoopbackProvider:
    """A fake provider on 127.0.0.1: ``kind="openai"`` answers ``POST /v1/chat/completions``,
    ``kind="anthropic"`` answers ``POST /v1/messages``, each with the body that API returns and
    the text ``answer(request_body)`` gives. Every request body is kept in ``requests``."""

    def __init__(self, kind: str, answer: Answer) -> None:
        import asyncio

        self.kind = kind
        self.answer = answer
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def base_url(self) -> str:
        """The base URL the provider's SDK variable takes (OPENAI_BASE_URL / ANTHROPIC_BASE_URL)."""
        return f"http://127.0.0.1:{self.port}" + ("/v1" if self.kind == "openai" else "")

    async def start(self) -> LoopbackProvider:
        import asyncio

        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def _body(self, request: dict[str, Any]) -> dict[str, Any]:
        reply = self.answer(request)
        usage_in, usage_out = 11, 7
        if self.kind == "anthropic":
            if "tool_choice" in request:
                tool = request["tools"][0]["name"]
                block: dict[str, Any] = {"type": "tool_use", "id": "toolu_1", "name": tool, "input": reply}
                stop = "tool_use"
            else:
                block, stop = {"type": "text", "text": str(reply)}, "end_turn"
            return {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": request.get("model"),
                "content": [block],
                "stop_reason": stop,
                "usage": {"input_tokens": usage_in, "output_tokens": usage_out},
            }
        text = reply if isinstance(reply, str) else json.dumps(reply)
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": request.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": usage_in, "completion_tokens": usage_out, "total_tokens": usage_in + usage_out},
        }

    async def _handle(self, reader: Any, writer: Any) -> None:
        import asyncio

        try:
            while True:
                line = await reader.readline()
                if not line.strip():
                    return
                headers: dict[str, str] = {}
                while (h := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = h.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                raw = await reader.readexactly(int(headers.get("content-length", "0")))
                request = json.loads(raw)
                self.requests.append(request)
                self.headers.append(headers)
                payload = json.dumps(self._body(request)).encode()
                head = f"HTTP/1.1 200 OK\r\ncontent-length: {len(payload)}\r\ncontent-type: application/json\r\n\r\n"
                writer.write(head.encode("latin-1") + payload)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()
