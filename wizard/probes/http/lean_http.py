"""The timing client's lean streaming path: HTTP/1.1 by h11 on connections it owns, no pool lock.

httpcore's pool and connection take anyio locks and events before a request is written; each
yields to the loop, and at 64 streams each yield waited for one loop iteration: a request was
written 15-89 ms (p50) after it was started (benchmarks/results/client_cpu.md). Here a request
takes an idle connection of its own origin (a list pop: one asyncio thread, nothing to lock) or
opens one, and its headers and body leave in one write with nothing awaited between its start
and that write except a connect.

What stays the same as httpx: the request (``client.build_request``: headers, JSON body, the
API key in ``Authorization``), h11's framing with httpcore's limits, the connections (the
Protocol backend, TLS by ``loop.start_tls``), the trace events httpcore emits (so the sample's
stamps mean the same), keep-alive reuse and expiry, and the errors: httpcore's exception for the
same failure, mapped to httpx's as httpx maps them, so ``measure_stream`` sorts them into the same
kinds with the same words. The response is an ``httpx.Response`` over this connection's bytes;
an encoded body (gzip) is decoded by httpx itself.
"""

from __future__ import annotations

import contextlib
import functools
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import h11
import httpcore
import httpx
from httpx._transports.default import map_httpcore_exceptions

from wizard.probes.http.protocol_backend import ProtocolBackend, ProtocolStream

# httpcore's own limits for HTTP/1.1 (AsyncHTTP11Connection): a header block past this is refused.
READ_NUM_BYTES = 64 * 1024
MAX_INCOMPLETE_EVENT_SIZE = 100 * 1024
DEFAULT_PORTS = {b"http": 80, b"https": 443}


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for every client of the process, made as httpx makes its own (certifi's
    bundle, or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``): each one built reads the CA bundle again,
    ~17 ms, and a round built two."""
    return httpx.create_ssl_context()


Origin = tuple[bytes, bytes, int]
Trace = Callable[[str, dict[str, Any]], Awaitable[None]]


def timing_client(**kwargs: Any) -> TimingClient:
    """A ``TimingClient`` (``httpx.AsyncClient``'s arguments)."""
    return TimingClient(**kwargs)


class TimingClient(httpx.AsyncClient):
    """An ``httpx.AsyncClient`` whose timed streams take the lean path, and whose other requests
    go through httpx on the Protocol backend.

    A proxy taken from the environment is mounted by httpx with a transport of its own: requests
    it applies to stay on httpx's stock path entirely.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # httpx offers no argument for httpcore's network_backend; its pool reads the attribute
        # each time it opens a connection, so setting it before the first request is enough.
        pool = self._transport._pool  # type: ignore[attr-defined]
        pool._network_backend = ProtocolBackend()
        # The same TLS context (verify=, cert=) and keep-alive expiry as httpx's own pool.
        self.lean = LeanConnections(pool._ssl_context, pool._keepalive_expiry)

    def takes_lean_path(self, url: httpx.URL) -> bool:
        """True unless a proxy applies to ``url`` (httpx mounted a transport for it)."""
        return self._transport_for_url(url) is self._transport

    async def aclose(self) -> None:
        await self.lean.aclose()
        await super().aclose()

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.lean.aclose()
        await super().__aexit__(*exc_info)


def open_stream(
    client: httpx.AsyncClient, request: httpx.Request
) -> contextlib.AbstractAsyncContextManager[httpx.Response]:
    """``request`` sent and its response streamed: the lean path where it applies, else httpx."""
    if isinstance(client, TimingClient) and client.takes_lean_path(request.url):
        return client.lean.stream(request)
    return _httpx_stream(client, request)


@contextlib.asynccontextmanager
async def _httpx_stream(
    client: httpx.AsyncClient, request: httpx.Request
) -> AsyncIterator[httpx.Response]:
    """What ``client.stream`` does with a request already built."""
    response = await client.send(request, stream=True)
    try:
        yield response
    finally:
        await response.aclose()


class _Connection:
    """One keep-alive connection: its stream, its h11 state, and when it went idle."""

    def __init__(self, origin: Origin, stream: ProtocolStream) -> None:
        self.origin = origin
        self.stream = stream
        self.h11 = h11.Connection(
            our_role=h11.CLIENT, max_incomplete_event_size=MAX_INCOMPLETE_EVENT_SIZE
        )
        self.idle_since = 0.0

    def reusable(self, keepalive_expiry: float | None) -> bool:
        """Still good for a request: not past its expiry, nothing read while idle (a close)."""
        if keepalive_expiry is not None and time.monotonic() - self.idle_since > keepalive_expiry:
            return False
        return not self.stream.get_extra_info("is_readable")

    async def next_event(self, read_timeout: float | None) -> Any:
        """h11's next event, reading from the connection while h11 needs data."""
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                raise httpcore.RemoteProtocolError(str(exc)) from exc
            if event is not h11.NEED_DATA:
                return event
            data = await self.stream.read(READ_NUM_BYTES, timeout=read_timeout)
            if data == b"" and self.h11.their_state == h11.SEND_RESPONSE:
                raise httpcore.RemoteProtocolError(
                    "Server disconnected without sending a response."
                )
            self.h11.receive_data(data)


class LeanConnections:
    """The idle connections of one timing client, by origin; every request in flight holds one."""

    def __init__(self, ssl_context: ssl.SSLContext, keepalive_expiry: float | None) -> None:
        self._ssl_context = ssl_context
        self._keepalive_expiry = keepalive_expiry
        # Only HTTP/1.1 is spoken here (httpcore sets the same on the context it is given).
        self._ssl_context.set_alpn_protocols(["http/1.1"])
        self._backend = ProtocolBackend()
        self._idle: dict[Origin, list[_Connection]] = {}
        self._busy: set[_Connection] = set()
        self.connects = 0  # connections this client began to open (a worker's is one)

    @contextlib.asynccontextmanager
    async def stream(self, request: httpx.Request) -> AsyncIterator[httpx.Response]:
        """Send ``request`` and yield its streamed response (the httpx errors for every failure)."""
        trace: Trace | None = request.extensions.get("trace")
        timeouts = request.extensions.get("timeout", {})
        connection: _Connection | None = None
        body = _ResponseBody(self, timeouts.get("read"))
        try:
            with map_httpcore_exceptions():
                connection = await self._take(request, trace, timeouts.get("connect"))
                self._busy.add(connection)
                body.connection = connection
                response = await _send(connection, request, body, trace, timeouts.get("read"))
            yield response
        finally:
            if connection is not None:
                self._busy.discard(connection)
                if not body.released:
                    await connection.stream.aclose()

    async def _take(
        self, request: httpx.Request, trace: Trace | None, connect_timeout: float | None
    ) -> _Connection:
        """An idle connection to the request's origin, else a new one."""
        url = request.url
        origin = (url.raw_scheme, url.raw_host, url.port or DEFAULT_PORTS.get(url.raw_scheme, 80))
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.reusable(self._keepalive_expiry):
                return connection
            await connection.stream.aclose()
        host = origin[1].decode("ascii")
        self.connects += 1
        if trace is not None:
            await trace("connection.connect_tcp.started", {})
        stream = await self._backend.connect_tcp(host, origin[2], timeout=connect_timeout)
        assert isinstance(stream, ProtocolStream)
        if trace is not None:
            # Stamped when the loop saw it: 64 workers connecting at once each resumed only
            # after the others' connects were handled (7-10 ms at the median, the floor's 1.3).
            await trace("connection.connect_tcp.complete", {"when_ns": stream.connected_ns})
        if origin[0] == b"https":
            if trace is not None:
                await trace("connection.start_tls.started", {})
            server_hostname = request.extensions.get("sni_hostname") or host
            await stream.start_tls(self._ssl_context, server_hostname, timeout=connect_timeout)
            if trace is not None:
                await trace("connection.start_tls.complete", {})
        return _Connection(origin, stream)

    def release(self, connection: _Connection) -> bool:
        """Keep ``connection`` for the next request when both sides finished their message."""
        state = connection.h11
        if state.our_state is not h11.DONE or state.their_state is not h11.DONE:
            return False
        state.start_next_cycle()
        connection.idle_since = time.monotonic()
        self._idle.setdefault(connection.origin, []).append(connection)
        return True

    async def aclose(self) -> None:
        """Close every connection, idle or busy."""
        idle = [c for connections in self._idle.values() for c in connections]
        self._idle.clear()
        for connection in (*idle, *self._busy):
            await connection.stream.aclose()


async def _send(
    connection: _Connection,
    request: httpx.Request,
    body: _ResponseBody,
    trace: Trace | None,
    read_timeout: float | None,
) -> httpx.Response:
    """Write the request in one piece, then read up to its response's headers."""
    state = connection.h11
    try:
        head = state.send(
            h11.Request(
                method=request.method, target=request.url.raw_path, headers=request.headers.raw
            )
        )
    except h11.LocalProtocolError as exc:
        raise httpcore.LocalProtocolError(str(exc)) from exc
    wire = head or b""
    content = request.content  # built by build_request: a JSON body is bytes already
    if content:
        wire += state.send(h11.Data(data=content)) or b""
    wire += state.send(h11.EndOfMessage()) or b""
    if trace is not None:
        await trace("http11.send_request_headers.started", {})
        await trace("http11.send_request_body.started", {})
    # Like httpcore: a server may close early and still answer (an error status); read it.
    with contextlib.suppress(httpcore.WriteError):
        await connection.stream.write(wire)
    if trace is not None:
        await trace("http11.send_request_body.complete", {})
    while True:
        event = await connection.next_event(read_timeout)
        if isinstance(event, h11.Response):
            break
    return httpx.Response(
        event.status_code,
        headers=event.headers.raw_items(),
        stream=body,
        request=request,
        extensions={
            "http_version": b"HTTP/" + event.http_version,
            "reason_phrase": event.reason,
            "network_stream": connection.stream,
        },
    )


class _ResponseBody(httpx.AsyncByteStream):
    """The response body as h11 frames it, one piece per Data event (as httpcore yields it)."""

    def __init__(self, owner: LeanConnections, read_timeout: float | None) -> None:
        self._owner = owner
        self._read_timeout = read_timeout
        self.connection: _Connection | None = None
        self.released = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self.connection
        assert connection is not None
        with map_httpcore_exceptions():
            while True:
                event = await connection.next_event(self._read_timeout)
                if isinstance(event, h11.Data):
                    yield bytes(event.data)
                elif isinstance(event, h11.EndOfMessage) or event is h11.PAUSED:
                    break
        self.released = self._owner.release(connection)

    async def aclose(self) -> None:
        """Nothing here: the connection is kept or closed when the request's block ends."""
