"""Issue 29, R3 and I8: a key in a model URL, or a password in ``--store``, never reaches a record,
span, dashboard response, error message or the next prompt.

Each test fails on ec36c64: there the model's name was the raw string (``meta.model``, the span
``chat openai:M@http://user:KEY@...`` and ``gen_ai.request.model`` held the key), a provider error
body that echoed the key became the rejection reason and was re-sent as feedback, and the CLI's
"inspect with" hint and ``no board ... in URL`` errors printed the store URL with its password.
The model is served over real HTTP on loopback; the board store is real SQLite (PostgreSQL for
``--store`` with a password, where the test server is reachable).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from reliability_testkit import Invoke

from slateboard import telemetry
from slateboard.models import resolve_model
from slateboard.models.errors import ModelRequestError
from slateboard.redaction import MASK, redact
from slateboard.runtime import Runner, create_board
from slateboard.stores import open_store
from slateboard.web import create_app

KEY = "sk-leak-" + uuid.uuid4().hex
PASSWORD = "pw-" + uuid.uuid4().hex

BLUEPRINT: dict[str, Any] = {
    "name": "secrets",
    "schema": {
        "type": "object",
        "properties": {"task": {"type": "string"}, "notes": {"type": "array", "items": {"type": "string"}}},
    },
    "initial_state": {"task": "write one note", "notes": []},
    "workers": {"a": {"reads": ["/task", "/notes"], "writes": ["/notes/-"]}},
    "rules": [{"on": {"op": "start"}, "invoke": "a"}],
    "done": "size(state.notes) >= 1",
}


class _Provider(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint: the first call fails with a body that echoes the key (as
    some gateways do), every later one returns a patch."""

    bodies: ClassVar[list[bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        type(self).bodies.append(body)
        if len(type(self).bodies) == 1:
            status = 400
            reply: dict[str, Any] = {
                "error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error"}
            }
        else:
            status = 200
            patch = json.dumps({"patch": [{"op": "add", "path": "/notes/-", "value": "a note"}]})
            reply = {
                "id": "c1",
                "object": "chat.completion",
                "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": patch}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
            }
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def provider() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback provider: (base URL without credentials, the request bodies it received)."""
    handler = type("Provider", (_Provider,), {"bodies": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}/v1", handler.bodies  # type: ignore[attr-defined]  # set by type()
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def spans() -> Iterator[Any]:
    """Tracing on, into an in-memory exporter."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable(tp)
    try:
        yield exporter
    finally:
        telemetry.disable()


def _span_text(exporter: Any) -> str:
    parts = []
    for sp in exporter.get_finished_spans():
        parts.append(sp.name)
        parts.append(json.dumps({k: str(v) for k, v in (sp.attributes or {}).items()}))
        parts.extend(str(ev.attributes) for ev in sp.events)
    return "\n".join(parts)


def test_redact_masks_url_credentials_and_registered_values() -> None:
    assert redact(f"openai:m@http://user:{KEY}@h/v1") == f"openai:m@http://user:{MASK}@h/v1"
    assert redact(f"openai:m@https://{KEY}@h/v1") == f"openai:m@https://{MASK}@h/v1"
    assert redact("postgresql://postgres@127.0.0.1:5432/test") == "postgresql://postgres@127.0.0.1:5432/test"
    assert redact("qwen2.5:0.5b and ordinary text") == "qwen2.5:0.5b and ordinary text"
    resolve_model(f"openai:m@http://user:{KEY}@127.0.0.1:9/v1")  # registers the key
    assert KEY not in redact(f"the server said: bad key {KEY}.")


async def test_model_url_key_reaches_no_record_span_prompt_or_page(
    tmp_path: Path, provider: tuple[str, list[bytes]], spans: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    where, bodies = provider
    model = f"openai:m@http://user:{KEY}@{where}"
    url = f"sqlite:///{tmp_path / 'b.db'}"
    store = await open_store(url)
    try:
        board = await create_board(store, BLUEPRINT)
        result = await Runner(store, board, model=model, parallel=1).run()
        assert result.end_reason == "done"
        records = await store.read_records(board)
        proposals = [r for r in records if r.kind == "proposal"]
        # the first call failed with the echoing body, the second was accepted
        assert [(r.outcome, r.stage) for r in proposals] == [("rejected", "model"), ("accepted", None)]
        assert "Incorrect API key provided" in (proposals[0].reason or "")
        assert proposals[0].meta.get("model") == f"openai:m@http://user:{MASK}@{where}"
        stored = json.dumps([r.to_json() for r in records])
        assert KEY not in stored
        # the rejection was re-sent as feedback in the next prompt, without the key
        assert len(bodies) == 2 and b"Incorrect API key provided" in bodies[1]
        assert KEY.encode() not in bodies[1]
        # spans: names, gen_ai.request.model, the reason attribute
        text = _span_text(spans)
        assert "chat openai:m@http://user:***@" in text
        assert KEY not in text
        # the dashboard's records API (and its board and info endpoints)
        app = create_app(store)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            for path in (f"/api/boards/{board}/records", f"/api/boards/{board}", "/api/info"):
                r = await http.get(path)
                assert r.status_code == 200, r.text
                assert KEY not in r.text
            assert "user:***@" in (await http.get(f"/api/boards/{board}/records")).text
    finally:
        await store.close()
    # the CLI's log of that board
    invoke = Invoke({"SLATEBOARD_STORE": url, "COLUMNS": "300"})
    shown = await asyncio.to_thread(invoke, "log", board)  # the CLI runs its own event loop
    assert shown.exit_code == 0, shown.output
    assert KEY not in shown.output


def test_model_error_messages_are_redacted() -> None:
    err = ModelRequestError(f"openai:m@http://u:{KEY}@h/v1", f"400: the key {KEY} is wrong", status=400)
    assert KEY not in str(err) and KEY not in err.model and KEY not in err.detail


def test_cli_model_configuration_error_hides_the_key(tmp_path: Path) -> None:
    invoke = Invoke({"SLATEBOARD_STORE": f"sqlite:///{tmp_path / 'b.db'}", "COLUMNS": "300"})
    res = invoke("run", "qa", "--model", f"openai:@http://u:{KEY}@127.0.0.1:9/v1")
    assert res.exit_code != 0
    assert KEY not in res.output


PG = os.environ.get("SLATEBOARD_TEST_PG")


@pytest.mark.skipif(not PG, reason="SLATEBOARD_TEST_PG is not set (a PostgreSQL server for the store)")
def test_store_password_is_not_echoed_by_the_cli(tmp_path: Path) -> None:
    assert PG is not None
    # the test server trusts every login, so any password opens it: the URL carries one here
    with_password = PG.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@", 1)
    assert PASSWORD in with_password, "SLATEBOARD_TEST_PG must be postgresql://postgres@HOST..."
    invoke = Invoke({"COLUMNS": "300", "XDG_DATA_HOME": str(tmp_path / "xdg")})
    blueprint = tmp_path / "bp.yaml"
    replies = [json.dumps([{"op": "add", "path": "/notes/-", "value": "n"}])]
    bp = dict(BLUEPRINT, name=f"secrets-{uuid.uuid4().hex[:8]}")
    bp["workers"] = {
        "a": {"reads": ["/task", "/notes"], "writes": ["/notes/-"], "model": "scripted:" + json.dumps(replies)}
    }
    blueprint.write_text(json.dumps(bp), encoding="utf-8")
    ran = invoke("run", str(blueprint), "--store", with_password)
    assert ran.exit_code == 0, ran.output
    assert "inspect with" in ran.output and "postgres:***@" in ran.output
    assert PASSWORD not in ran.output
    missing = invoke("show", "no-such-board-" + uuid.uuid4().hex[:6], "--store", with_password)
    assert missing.exit_code != 0 and "no board" in missing.output
    assert PASSWORD not in missing.output
