"""The token rule: with a token every request must carry it (Bearer header or ?token=), else
401; without one only loopback Host names are answered."""

from __future__ import annotations

from collections.abc import AsyncIterator
from urllib.parse import urlencode

import httpx
import pytest
from web_testkit import Boards

from slateboard.stores import open_store
from slateboard.stores.base import Store
from slateboard.web import create_app, is_loopback

TOKEN = "s3cret-token-ü"
PATHS = ["/", "/static/app.js", "/static/style.css", "/api/info", "/api/boards", "/api/boards/{id}/state?version=1"]


@pytest.fixture
async def store(finished: Boards) -> AsyncIterator[Store]:
    s = await open_store(finished.url)
    yield s
    await s.close()


def client_for(store: Store, token: str | None, host: str = "127.0.0.1") -> httpx.AsyncClient:
    app = create_app(store, token=token)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=f"http://{host}")


@pytest.mark.parametrize("path", PATHS)
async def test_without_the_token_every_request_is_refused(store: Store, finished: Boards, path: str) -> None:
    async with client_for(store, TOKEN) as c:
        url = path.replace("{id}", finished.board_id)
        for headers, query in [
            ({}, {}),
            ({"Authorization": "Bearer wrong"}, {}),
            ({"Authorization": f"Basic {TOKEN}".encode()}, {}),
            ({}, {"token": TOKEN[:-1]}),
            ({}, {"token": ""}),
        ]:
            res = await c.get(url + ("&" if "?" in url else "?") + urlencode(query), headers=headers)  # type: ignore[arg-type]  # bytes on purpose
            assert res.status_code == 401, (headers, query)
            assert res.headers["www-authenticate"] == "Bearer"
            assert "token" in res.json()["error"]
            assert "s3cret" not in res.text


@pytest.mark.parametrize("path", PATHS)
async def test_with_the_token_every_request_is_answered(store: Store, finished: Boards, path: str) -> None:
    async with client_for(store, TOKEN, host="dashboard.example") as c:
        url = path.replace("{id}", finished.board_id)
        by_header = await c.get(url, headers={"Authorization": f"Bearer {TOKEN}".encode()})  # type: ignore[arg-type]
        by_query = await c.get(url + ("&" if "?" in url else "?") + urlencode({"token": TOKEN}))
        assert by_header.status_code == 200, by_header.text
        assert by_query.status_code == 200, by_query.text
        assert by_header.content == by_query.content or path == "/"


async def test_the_page_passes_the_token_on_to_its_assets(store: Store) -> None:
    async with client_for(store, TOKEN) as c:
        page = await c.get("/", params={"token": TOKEN})
        assert page.status_code == 200
        assert "/static/app.js?token=s3cret-token-%C3%BC" in page.text
        asset = await c.get("/static/app.js?token=s3cret-token-%C3%BC")
        assert asset.status_code == 200


async def test_the_event_streams_need_the_token_too(store: Store, finished: Boards) -> None:
    async with client_for(store, TOKEN) as c:
        for path in ("/api/events", f"/api/boards/{finished.board_id}/events"):
            res = await c.get(path)
            assert res.status_code == 401


async def test_without_a_token_only_loopback_hosts_are_answered(store: Store) -> None:
    for host, status in [("127.0.0.1", 200), ("localhost:8765", 200), ("[::1]:8765", 200), ("evil.example", 403)]:
        async with client_for(store, None, host=host) as c:
            res = await c.get("/api/boards")
            assert res.status_code == status, host
    async with client_for(store, None, host="127.0.0.1.evil.example") as c:
        assert (await c.get("/api/boards")).status_code == 403


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.5.6.7", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("example.com", False),
        ("localhost.example.com", False),
    ],
)
def test_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
