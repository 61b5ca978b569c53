"""Issue 29, R6 and R7: compiling a blueprint touches no network and is bounded in bytes.

R6: on ec36c64 a remote ``$schema`` in the state schema was fetched while compiling (the
meta-schema check of the "name every invalid keyword" pass retrieved it): a blind SSRF. The test
counts GETs on a loopback server: one per root ``$schema`` there, zero now, and each remote
reference is a blueprint issue in the one report.

R7: on ec36c64 a 1 MB YAML string alias used a thousand times expanded to 1 GB (the node budget
counted 1,000 nodes) and failed later as a false "store is damaged"; the YAML loader now bounds
the expanded bytes too, and ``compile_blueprint`` bounds the initial state's size.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from reliability_testkit import Invoke

from slateboard.blueprint import BlueprintError, compile_blueprint
from slateboard.blueprint.loading import MAX_EXPANDED_BYTES, MAX_INITIAL_STATE_BYTES, parse_blueprint_text


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        body = b'{"type": "object"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/schema+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    """A loopback HTTP server that serves a schema and records every GET."""
    hits: list[str] = []
    handler = type("Handler", (_Counter,), {"hits": hits})
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_port}", hits
    finally:
        srv.shutdown()
        srv.server_close()


def _schemas(url: str) -> dict[str, tuple[dict[str, Any], str]]:
    """Schemas with a remote reference, and the pointer the issue must name."""
    return {
        "root $schema": ({"$schema": f"{url}/a", "type": "object"}, "/$schema"),
        "nested $schema": ({"type": "object", "properties": {"x": {"$schema": f"{url}/b"}}}, "/properties/x/$schema"),
        "root $ref": ({"$ref": f"{url}/c"}, "/$ref"),
        "nested $ref": ({"type": "object", "properties": {"x": {"$ref": f"{url}/d"}}}, "/properties/x/$ref"),
        "$dynamicRef": (
            {"type": "object", "properties": {"x": {"$dynamicRef": f"{url}/e"}}},
            "/properties/x/$dynamicRef",
        ),
        "relative $ref under a remote $id": (
            {"$id": f"{url}/base/", "type": "object", "properties": {"x": {"$ref": "f"}}},
            "/properties/x/$ref",
        ),
        "$schema beside an invalid keyword": (
            {"$schema": f"{url}/g", "type": "object", "properties": {"x": {"type": "nope"}}},
            "/$schema",
        ),
    }


@pytest.mark.parametrize("broken_shape", [False, True], ids=["valid-shape", "shape-errors"])
def test_r6_no_request_leaves_while_compiling(server: tuple[str, list[str]], broken_shape: bool) -> None:
    url, hits = server
    for name, (schema, where) in _schemas(url).items():
        workers: dict[str, Any] = {"w": {"reads": 5}} if broken_shape else {"w": {"reads": ["/**"]}}
        with pytest.raises(BlueprintError) as caught:
            compile_blueprint({"schema": schema, "initial_state": {}, "workers": workers})
        text = str(caught.value)
        assert f"{where}:" in text and "refers outside itself" in text, (name, text)
        if broken_shape:
            assert "/workers/w/reads" in text  # the other issues are in the same report
    # The server is still there to answer: nothing asked it.
    assert hits == []


def test_r6_an_invalid_keyword_beside_a_remote_schema_is_still_named(server: tuple[str, list[str]]) -> None:
    url, hits = server
    schema = {"$schema": f"{url}/g", "type": "object", "properties": {"x": {"type": "nope"}}}
    with pytest.raises(BlueprintError) as caught:
        compile_blueprint({"schema": schema, "initial_state": {}, "workers": {"w": {}}})
    assert len(caught.value.issues) == 2, caught.value
    assert hits == []


def _alias_bomb(uses: int) -> str:
    big = "x" * (1 << 20)
    return (
        "name: bomb\nschema: {type: object}\n"
        f'initial_state:\n  a: &s "{big}"\n  b: [{", ".join(["*s"] * uses)}]\n'
        "workers:\n  w: {reads: [/**], writes: [/**]}\n"
    )


def test_r7_a_1mb_string_alias_bomb_is_a_blueprint_error(invoke: Invoke, tmp_path: Path) -> None:
    text = _alias_bomb(1000)
    assert len(text) < 1_100_000
    with pytest.raises(ValueError, match=f"expands to more than {MAX_EXPANDED_BYTES} bytes"):
        parse_blueprint_text(text)
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    result = invoke("submit", str(path))
    assert result.exit_code != 0
    assert f"expands to more than {MAX_EXPANDED_BYTES} bytes" in result.stderr
    assert "damaged" not in result.output and "internal error" not in result.output
    # A few uses of the same large string stay fine.
    assert len(parse_blueprint_text(_alias_bomb(3))["initial_state"]["b"]) == 3


def test_r7_the_initial_state_is_bounded() -> None:
    blob = "y" * (MAX_INITIAL_STATE_BYTES // 4)
    with pytest.raises(BlueprintError) as caught:
        compile_blueprint({"schema": {"type": "object"}, "initial_state": {"a": [blob] * 5}, "workers": {"w": {}}})
    assert "/initial_state: the initial state is over the limit" in str(caught.value)
