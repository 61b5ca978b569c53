"""``slateboard serve``: the real command in a subprocess on loopback, and its one-line errors."""

from __future__ import annotations

import signal
import socket
import sys
import threading

import httpx
import pytest
from typer.testing import CliRunner
from web_testkit import Boards, serve_cli

from slateboard.cli import app


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_serve_answers_on_loopback_with_the_token_and_stops_on_ctrl_c(finished: Boards) -> None:
    # The token comes from $SLATEBOARD_TOKEN here (the browser test passes --token).
    with serve_cli("--store", finished.url, env={"SLATEBOARD_TOKEN": "tok-from-env"}) as served:
        assert served.url.startswith("http://127.0.0.1:")
        assert "tok-from-env" not in served.first_line
        res = httpx.get(served.url + "/api/boards", headers={"Authorization": "Bearer tok-from-env"}, timeout=30)
        assert res.status_code == 200
        assert [b["board_id"] for b in res.json()["boards"]] == [finished.board_id]
        assert httpx.get(served.url + "/api/boards?token=tok-from-env", timeout=30).status_code == 200
        assert httpx.get(served.url + "/api/boards", timeout=30).status_code == 401
        # a page still following the store when Ctrl-C comes: its stream ends cleanly
        opened, lines = threading.Event(), []

        def follow() -> None:
            url = served.url + f"/api/boards/{finished.board_id}/events?token=tok-from-env"
            with httpx.stream("GET", url, timeout=30) as res:
                for line in res.iter_lines():
                    lines.append(line)
                    opened.set()

        reader = threading.Thread(target=follow)
        reader.start()
        assert opened.wait(30)
        served.proc.send_signal(signal.SIGINT)
        out, err = served.proc.communicate(timeout=20)
        reader.join(30)
    assert served.proc.returncode == 0, err
    assert "dashboard stopped" in out and "Traceback" not in err and "ERROR" not in err
    assert not reader.is_alive() and "event: record" in lines


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1", "example.com"])
def test_serve_refuses_a_non_loopback_host_without_a_token(host: str) -> None:
    code, _, err = invoke("serve", "--host", host, "--store", "memory://", env={"SLATEBOARD_TOKEN": ""})
    assert code == 2
    assert err.strip().splitlines() == [
        f"error: refusing to serve on {host} without a token: pass --token TOKEN or set SLATEBOARD_TOKEN"
    ]


def test_serve_reports_a_port_in_use() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code, _, err = invoke("serve", "--port", str(port), "--store", "memory://")
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: cannot listen on 127.0.0.1:{port}: ")


def test_serve_rejects_a_bad_port() -> None:
    code, _, err = invoke("serve", "--port", "70000")
    assert code == 2 and "--port" in err


def test_serve_without_the_web_extra_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sse_starlette", None)  # makes `import sse_starlette` fail
    code, _, err = invoke("serve", "--store", "memory://")
    assert code == 2
    assert err.strip().splitlines() == [
        "error: the dashboard needs the web extra (missing module sse_starlette): pip install 'slateboard[web]'"
    ]
