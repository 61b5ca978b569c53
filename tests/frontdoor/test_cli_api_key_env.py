"""`slateboard run --model openai:M@URL --api-key-env NAME`: the key reaches that endpoint (a
loopback server records the headers) and OPENAI_API_KEY never does."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slateboard.cli import app

BLUEPRINT = """\
name: one-answer
schema:
  type: object
  properties: {task: {type: string}, answer: {type: string}}
  required: [task]
initial_state: {task: ""}
workers:
  writer: {reads: ["/task"], writes: ["/answer"]}
rules: [{on: {op: start}, invoke: writer}]
done: has(state.answer)
answer: /answer
"""
REPLY = json.dumps({"patch": [{"op": "add", "path": "/answer", "value": "forty-two"}]})


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append({"headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
            out = json.dumps(
                {"choices": [{"message": {"role": "assistant", "content": REPLY}, "finish_reason": "stop"}]}
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", seen
    server.shutdown()
    server.server_close()


def test_api_key_env_keys_only_the_models_endpoint(
    tmp_path: Path, recorder: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = recorder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    monkeypatch.setenv("MY_ENDPOINT_KEY", "endpoint-key")
    monkeypatch.setenv("SLATEBOARD_API_KEY_127_0_0_1", "")  # restored after the test
    (tmp_path / "bp.yaml").write_text(BLUEPRINT)
    args = ["run", str(tmp_path / "bp.yaml"), "--task", "q", "--store", f"sqlite:///{tmp_path / 'b.db'}", "--json"]
    plain = CliRunner().invoke(app, [*args, "--model", f"openai:m@{url}"])
    assert plain.exit_code == 0, plain.output
    assert "authorization" not in seen[-1]["headers"]
    keyed = CliRunner().invoke(app, [*args, "--model", f"openai:m@{url}", "--api-key-env", "MY_ENDPOINT_KEY"])
    assert keyed.exit_code == 0, keyed.output
    assert seen[-1]["headers"]["authorization"] == "Bearer endpoint-key"
    assert json.loads(keyed.stdout)["answer"] == "forty-two"
    assert all("sk-must-not-leak" not in json.dumps(r["headers"]) for r in seen)
    missing = CliRunner().invoke(app, [*args, "--model", f"openai:m@{url}", "--api-key-env", "NOT_SET_HERE"])
    assert missing.exit_code != 0 and "NOT_SET_HERE" in missing.output
