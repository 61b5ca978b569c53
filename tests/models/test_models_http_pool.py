"""The event loop's shared HTTP pool (`models/_http_pool.py`): connections reused across
providers, at most `max_connections` sockets with the rest of the calls queued, and a slot never
lost to a failed, cancelled or refused call."""

from __future__ import annotations

import asyncio
import resource
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from models_testkit import StartStub, StubReply, chat_completion

from slateboard.models import Message, OpenAICompatModel, RetryPolicy, resolve_model
from slateboard.models._http import shared_ssl_context
from slateboard.models._http_pool import (
    POOL_CONNECTIONS,
    POOL_MIN_CONNECTIONS,
    PooledTransport,
    loop_transport,
    pool_connections,
)

ASK = [Message.user("Say hi.")]
REPLY = httpx.Response(200, json=chat_completion("hi")).content


@dataclass
class CountingServer:
    """A keep-alive HTTP/1.1 server on loopback that answers every request after `latency_s`
    and counts the connections it was given and the most it held open at once."""

    latency_s: float = 0.0
    close_after_reply: bool = False
    hang: bool = False
    connections: int = 0
    open_now: int = 0
    peak_open: int = 0
    requests: int = 0
    port: int = 0
    _server: asyncio.Server | None = field(default=None, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.peak_open = max(self.peak_open, self.open_now)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                await reader.readexactly(length)
                self.requests += 1
                if self.hang:
                    await asyncio.Event().wait()
                await asyncio.sleep(self.latency_s)
                extra = b"connection: close\r\n" if self.close_after_reply else b""
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n%scontent-length: %d\r\n\r\n%s"
                    % (extra, len(REPLY), REPLY)
                )
                await writer.drain()
                if self.close_after_reply:
                    return
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        finally:
            self.open_now -= 1
            writer.close()


@pytest.fixture
async def counting() -> AsyncIterator[CountingServer]:
    server = CountingServer()
    server._server = await asyncio.start_server(server._handle, "127.0.0.1", 0)
    server.port = server._server.sockets[0].getsockname()[1]
    yield server
    server._server.close()


def provider(url: str) -> OpenAICompatModel:
    model = resolve_model(f"openai:stub-model@{url}/v1", retry=RetryPolicy(max_attempts=1))
    assert isinstance(model, OpenAICompatModel)
    return model


async def test_providers_on_one_loop_share_kept_alive_connections(counting: CountingServer) -> None:
    # A board resolving a model string gets its own provider: 20 of them, one call after
    # another, need one connection between them, not one each.
    models = [provider(counting.url) for _ in range(20)]
    for model in models:
        assert (await model.generate(ASK)).text == "hi"
    assert counting.requests == 20
    assert counting.connections == 1


async def test_concurrent_calls_beyond_the_bound_queue_and_all_complete(counting: CountingServer) -> None:
    counting.latency_s = 0.02
    async with httpx.AsyncClient(transport=PooledTransport(max_connections=3)) as client:
        replies = await asyncio.gather(
            *(client.post(counting.url + "/v1/chat/completions", json={}) for _ in range(30))
        )
        transport = client._transport
        assert isinstance(transport, PooledTransport)
        assert (transport.in_use, transport.waiting) == (0, 0)
        assert transport.idle == 3
    assert [r.status_code for r in replies] == [200] * 30
    assert counting.requests == 30
    assert counting.peak_open == 3  # never more sockets than the bound, whatever the demand
    assert counting.connections == 3


async def test_a_full_pool_times_out_naming_the_bound(counting: CountingServer) -> None:
    counting.hang = True
    transport = PooledTransport(max_connections=1)
    async with httpx.AsyncClient(transport=transport) as client:
        stuck = asyncio.create_task(client.post(counting.url + "/", json={}))
        while counting.requests == 0:
            await asyncio.sleep(0.005)
        with pytest.raises(httpx.PoolTimeout, match="all 1 of the pool's connections are in use"):
            await client.post(counting.url + "/", json={}, timeout=httpx.Timeout(None, pool=0.05))
        stuck.cancel()
        with pytest.raises(asyncio.CancelledError):
            await stuck
        # The cancelled call gave its connection slot back.
        assert (transport.in_use, transport.waiting) == (0, 0)
        counting.hang = False
        assert (await client.post(counting.url + "/", json={})).status_code == 200


async def test_a_connection_the_server_closed_is_not_reused(counting: CountingServer) -> None:
    counting.close_after_reply = True
    transport = PooledTransport(max_connections=2)
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(5):
            assert (await client.post(counting.url + "/", json={})).status_code == 200
        assert transport.in_use == 0
    assert counting.connections == 5


async def test_refused_connections_give_their_slot_back(closed_port: int) -> None:
    transport = PooledTransport(max_connections=1)
    async with httpx.AsyncClient(transport=transport) as client:
        for _ in range(3):
            with pytest.raises(httpx.ConnectError):
                await client.post(f"http://127.0.0.1:{closed_port}/", json={})
        assert (transport.in_use, transport.waiting, transport.idle) == (0, 0, 0)


async def test_unsupported_scheme_is_refused_before_any_connection() -> None:
    async with httpx.AsyncClient(transport=PooledTransport()) as client:
        with pytest.raises(httpx.UnsupportedProtocol, match="ftp"):
            await client.get("ftp://127.0.0.1/")


def test_a_pool_needs_a_connection() -> None:
    with pytest.raises(ValueError, match="max_connections must be at least 1, got 0"):
        PooledTransport(max_connections=0)


@pytest.mark.parametrize(
    ("soft", "expected"),
    [(64, 32), (10, POOL_MIN_CONNECTIONS), (1_000_000, POOL_CONNECTIONS), (resource.RLIM_INFINITY, POOL_CONNECTIONS)],
)
def test_the_pool_bound_follows_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch, soft: int, expected: int) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (soft, resource.RLIM_INFINITY))
    assert pool_connections() == expected


async def test_a_provider_post_sends_the_client_headers_through_the_pool(stub_server: StartStub) -> None:
    # The pooled path skips the client's per-request work, not what the client would send.
    server = await stub_server(StubReply(200, chat_completion("hi")))
    assert (await provider(server.url).generate(ASK)).text == "hi"
    headers = server.requests[0].headers
    assert headers["user-agent"].startswith("python-httpx/")
    assert headers["content-type"] == "application/json"
    assert "gzip" in headers["accept-encoding"]


def test_a_proxy_in_the_environment_routes_calls_through_the_client(monkeypatch: pytest.MonkeyPatch) -> None:
    # The client honours HTTPS_PROXY / NO_PROXY; the pool alone would bypass the proxy.
    async def pool() -> PooledTransport | None:
        return loop_transport(shared_ssl_context(), 30.0)

    monkeypatch.delenv("HTTPS_PROXY", raising=False)
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    assert isinstance(asyncio.run(pool()), PooledTransport)
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert asyncio.run(pool()) is None  # each asyncio.run is a new loop, so a new client
