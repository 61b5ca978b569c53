"""One bounded HTTP/1.1 connection pool per event loop, shared by every HTTP provider in it.

httpx's own pool (httpcore's ``AsyncConnectionPool``) re-scans every connection and every
queued request on each request and each response close, and asks each connection whether its
socket is readable: shared by K boards that is O(K) work and K system calls per call (measured
with ``benchmarks/service.py``'s server: 4.8 ms of CPU per request at K = 100, 13.7 ms at
K = 1,000, against 0.4-0.6 ms with a client per board). A client per board avoids the scan but
keeps a socket per board until it is garbage-collected, so K boards need K descriptors.

``PooledTransport`` keeps, per origin, a stack of idle keep-alive connections (httpcore's own
``AsyncHTTPConnection``, so the HTTP/1.1 protocol, TLS and timeouts stay httpcore's): a request
pops the most recently used one that is still usable, or opens one; closing its response pushes
the connection back. That is O(1) per request. ``max_connections`` bounds the sockets open at
once: a request beyond it waits for a connection to be handed back (bounded queueing, in FIFO
order, under the request's ``pool`` timeout) instead of opening sockets until the process runs
out of file descriptors.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import ssl
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpcore
import httpx

from ..errors import InvalidInput

try:  # imported now: a process out of file descriptors could not load it when it needs it
    import resource
except ImportError:  # not POSIX
    resource = None  # type: ignore[assignment]

__all__ = [
    "KEEPALIVE_EXPIRY_S",
    "POOL_CONNECTIONS",
    "PooledTransport",
    "loop_client",
    "loop_transport",
    "pool_connections",
]

# Sockets one event loop keeps open to model servers at most: half the process's descriptor
# soft limit (the store, the loop, servers and files share the rest), at most 1,024 (a thousand
# boards each waiting on a model at once); further calls wait for a connection.
POOL_CONNECTIONS = 1024
POOL_MIN_CONNECTIONS = 8
KEEPALIVE_EXPIRY_S = 5.0  # httpx's default: servers commonly drop idle connections after 5-75 s

_Key = tuple[bytes, bytes, int]

_EXCEPTIONS: tuple[tuple[type[Exception], type[httpx.HTTPError]], ...] = (
    # Most specific first: the first match wins.
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as the httpx errors httpx's own transport maps them to."""
    try:
        yield
    except httpcore.ConnectionNotAvailable:
        raise
    except Exception as exc:
        for core, mapped in _EXCEPTIONS:
            if isinstance(exc, core):
                raise mapped(str(exc)) from exc
        raise


class PooledTransport(httpx.AsyncBaseTransport):
    """An httpx transport over a bounded pool of HTTP/1.1 keep-alive connections (see the module
    docstring). Guarantees: at most ``max_connections`` sockets open at once; a request beyond
    that waits its turn (first come, first served) and raises ``httpx.PoolTimeout`` if its
    ``pool`` timeout passes first; a connection is reused only once its previous response was
    read or closed, and never after it expired or the server closed it; httpcore's failures
    surface as the httpx exceptions ``httpx.AsyncHTTPTransport`` raises. One event loop only."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        max_connections: int = POOL_CONNECTIONS,
        keepalive_expiry: float = KEEPALIVE_EXPIRY_S,
    ) -> None:
        if max_connections < 1:
            raise InvalidInput(f"max_connections must be at least 1, got {max_connections}")
        self.max_connections = max_connections
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        self._idle: dict[_Key, collections.deque[httpcore.AsyncHTTPConnection]] = {}
        self._slots = asyncio.Semaphore(max_connections)
        self._busy = 0
        self._closed = False
        # The headers a client over this transport adds to every request (``loop_client`` sets
        # them), for requests sent with ``fetch``.
        self.default_headers: dict[str, str] = {}
        self.proxied = False  # the environment names a proxy: send through the client instead

    @property
    def in_use(self) -> int:
        """Connections lent to a request whose response is not closed yet."""
        return self._busy

    @property
    def waiting(self) -> int:
        """Requests waiting for a connection (the pool is at ``max_connections``)."""
        waiters = getattr(self._slots, "_waiters", None)
        return len(waiters) if waiters else 0

    @property
    def idle(self) -> int:
        """Open keep-alive connections waiting for a request."""
        return sum(len(stack) for stack in self._idle.values())

    def _checkout(self, key: _Key, origin: httpcore.Origin) -> httpcore.AsyncHTTPConnection:
        stack = self._idle.get(key)
        while stack:
            conn = stack.pop()  # the most recently used: the least likely to have expired
            if conn.is_available() and not conn.has_expired():
                return conn
            self._discard(conn)
        return httpcore.AsyncHTTPConnection(
            origin, ssl_context=self._ssl_context, keepalive_expiry=self._keepalive_expiry, http1=True, http2=False
        )

    def _discard(self, conn: httpcore.AsyncHTTPConnection) -> None:
        # Closing an HTTP/1.1 connection only closes its socket; do it in the background so a
        # request never waits on another connection's close.
        if not conn.is_closed():
            task = asyncio.get_running_loop().create_task(conn.aclose())
            _CLOSING.add(task)
            task.add_done_callback(_CLOSING.discard)

    def _checkin(self, key: _Key, conn: httpcore.AsyncHTTPConnection) -> None:
        self._busy -= 1
        self._slots.release()
        if self._closed or not conn.is_idle() or conn.is_closed():
            self._discard(conn)
            return
        stack = self._idle.setdefault(key, collections.deque())
        stack.append(conn)
        # The oldest idle connection is the first to expire: dropping it here keeps expired
        # sockets from piling up under a pool that never reaches the bottom of its stack.
        if len(stack) > 1 and stack[0].has_expired():
            self._discard(stack.popleft())

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` on a pooled connection; the connection goes back to the pool when
        the response is closed."""
        url = request.url
        if url.scheme not in ("http", "https"):
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{url.scheme}://'.")
        if self._closed:
            raise RuntimeError("the HTTP connection pool is closed")
        port = url.port or (443 if url.scheme == "https" else 80)
        key: _Key = (url.raw_scheme, url.raw_host, port)
        wait = request.extensions.get("timeout", {}).get("pool")
        if wait is None or not self._slots.locked():
            await self._slots.acquire()  # no timer (wait_for makes a task) when none is needed
        else:
            try:
                await asyncio.wait_for(self._slots.acquire(), wait)
            except TimeoutError:
                raise httpx.PoolTimeout(
                    f"no connection to {url.scheme}://{url.host}:{port} within {wait}s: "
                    f"all {self.max_connections} of the pool's connections are in use"
                ) from None
        self._busy += 1
        core = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,  # an httpx.AsyncByteStream: async-iterable, as httpcore wants
            extensions=request.extensions,
        )
        origin = httpcore.Origin(url.raw_scheme, url.raw_host, port)
        conn: httpcore.AsyncHTTPConnection | None = None
        try:
            with _httpx_errors():
                for _ in range(3):
                    conn = self._checkout(key, origin)
                    try:
                        response = await conn.handle_async_request(core)
                        break
                    except httpcore.ConnectionNotAvailable:
                        # Became busy or closed between the checks and the send: another one.
                        self._discard(conn)
                        conn = None
                else:
                    raise httpx.ConnectError(f"no usable connection to {url.scheme}://{url.host}:{port}")
        except BaseException:
            self._busy -= 1
            self._slots.release()
            if conn is not None:
                self._discard(conn)
            raise
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_Returning(response.stream, self, key, conn),
            extensions=response.extensions,
        )

    async def fetch(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and read the whole response (then closed, its connection back in the
        pool), without a client: what ``AsyncClient.post`` does for a request that needs no
        auth, redirects, cookies or proxy, at about half its CPU (``loop_transport``)."""
        response = await self.handle_async_request(request)
        response.request = request
        try:
            await response.aread()
        finally:
            await response.aclose()
        return response

    async def aclose(self) -> None:
        """Close the idle connections; connections still lent are closed when handed back."""
        self._closed = True
        stacks, self._idle = list(self._idle.values()), {}
        for stack in stacks:
            for conn in stack:
                with contextlib.suppress(Exception):
                    await conn.aclose()


_CLOSING: set[asyncio.Task[None]] = set()


class _Returning(httpx.AsyncByteStream):
    """A response body that hands its connection back to the pool once closed (exactly once)."""

    def __init__(self, stream: Any, pool: PooledTransport, key: _Key, conn: httpcore.AsyncHTTPConnection) -> None:
        self._stream = stream
        self._pool = pool
        self._key = key
        self._conn: httpcore.AsyncHTTPConnection | None = conn

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            with _httpx_errors():
                await self._stream.aclose()
        finally:
            self._pool._checkin(self._key, conn)


def descriptor_limit() -> int | None:
    """The process's soft RLIMIT_NOFILE now; None where there is none (unlimited, or not POSIX)."""
    if resource is None:
        return None
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return None
    return None if soft == resource.RLIM_INFINITY else int(soft)


def pool_connections() -> int:
    """How many connections a loop's shared pool may hold open: half the soft RLIMIT_NOFILE now,
    between ``POOL_MIN_CONNECTIONS`` and ``POOL_CONNECTIONS``."""
    soft = descriptor_limit()
    if soft is None:
        return POOL_CONNECTIONS
    return max(POOL_MIN_CONNECTIONS, min(POOL_CONNECTIONS, soft // 2))


_CLIENTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = weakref.WeakKeyDictionary()
_PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy")


def loop_transport(ssl_context: ssl.SSLContext, connect_timeout: float) -> PooledTransport | None:
    """The pool under the running loop's shared client, for ``PooledTransport.fetch``; None
    when the environment named a proxy as that client was made (the client routes through it,
    honouring NO_PROXY; httpx too reads the proxy variables once, when a client is made)."""
    transport = loop_client(ssl_context, connect_timeout)._transport
    return transport if isinstance(transport, PooledTransport) and not transport.proxied else None


def loop_client(ssl_context: ssl.SSLContext, connect_timeout: float) -> httpx.AsyncClient:
    """The running event loop's one shared client over a ``PooledTransport``, made on first use
    (connections belong to a loop, so each loop has its own). Headers, keys included, go with
    each request, never into the client, so providers with different keys share it."""
    loop = asyncio.get_running_loop()
    client = _CLIENTS.get(loop)
    if client is None or client.is_closed:
        transport = PooledTransport(ssl_context=ssl_context, max_connections=pool_connections())
        client = httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(None, connect=connect_timeout))
        transport.default_headers = dict(client.headers)
        transport.proxied = any(os.environ.get(name) or os.environ.get(name.upper()) for name in _PROXY_VARIABLES)
        _CLIENTS[loop] = client
    return client
