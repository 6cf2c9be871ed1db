"""The timing client's connections: an httpcore network backend built on asyncio's Protocol.

httpcore's stock backend (anyio) opens a cancel scope for every read and looks up the running
async library each time: at 64 streams a quarter of the client's CPU went there, one read per
token (benchmarks/results/client_cpu.md). Here the event loop hands received bytes to a Protocol
as they come, stamped with their arrival; a read returns what is already buffered without a loop
turn, and only a read that must wait arms one timer for its timeout. ``arrival_clock`` gives the
stamps to the code that times events. A write is ``transport.write`` (the bytes leave at
once), waiting only when the transport says its buffer is full.

Timed streams use these connections on the lean path (``lean_http``: h11 on connections the
client owns); the timing client's other requests go through httpx's pool on this backend, and
proxies from the environment keep httpx's own transports (mounted apart). Errors are raised
as the anyio backend raises them (the same httpcore exception for the same failure, with the OS
error as its cause), so ``measure_stream`` sorts them into the same kinds.
"""

from __future__ import annotations

import asyncio
import collections
import socket
import ssl
import time
import typing
from collections.abc import Callable, Iterable
from typing import Any

import httpcore
import httpx
from httpcore._backends.base import SOCKET_OPTION, AsyncNetworkBackend, AsyncNetworkStream

# Received bytes held for httpcore before the transport stops reading (and the server's writes
# back up to it), and the level at which it reads again.
HIGH_WATER_BYTES = 256 * 1024
LOW_WATER_BYTES = 64 * 1024
# anyio's words when no address of a host accepted (reach.explain reads them as "refused").
NO_CONNECTION = "All connection attempts failed"


def arrival_clock(response: httpx.Response) -> Callable[[], int]:
    """When the bytes a response last yielded arrived: its connection's last read, else now.

    What h11 decodes from a read is complete the moment the read's bytes arrived. The task that
    reads runs only after the loop has run every callback ready before it: at 64 streams that
    stamped events milliseconds after their bytes came.
    """
    stream = response.extensions.get("network_stream")
    if isinstance(stream, ProtocolStream):
        return lambda: stream.last_arrival_ns or time.monotonic_ns()
    return time.monotonic_ns


class _Receiver(asyncio.Protocol):
    """What the loop read for one connection, when each piece came, and the state of its writes."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        # Each piece as the loop received it, with its arrival (monotonic ns): a read returns
        # one piece, so everything a read carries arrived at one known moment.
        self.pieces: collections.deque[tuple[bytes, int]] = collections.deque()
        self.buffered = 0
        self.last_arrival_ns: int | None = None
        self.made_ns: int | None = None  # when the loop saw the connect complete
        self.ended = False  # the peer closed, or the connection was lost
        self.error: BaseException | None = None
        self.waiter: asyncio.Future[bool] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.reading_paused = False
        self.writing_paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)  # uvloop's is no subclass
        self.made_ns = time.monotonic_ns()

    def data_received(self, data: bytes) -> None:
        self.pieces.append((data, time.monotonic_ns()))
        self.buffered += len(data)
        if self.buffered > HIGH_WATER_BYTES and not self.reading_paused:
            self.reading_paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.ended = True
        self._wake()
        return False  # the transport closes itself

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        self._drain_done()

    def pause_writing(self) -> None:
        self.writing_paused = True

    def resume_writing(self) -> None:
        self.writing_paused = False
        self._drain_done()

    @property
    def _transport(self) -> asyncio.Transport:
        assert self.transport is not None, "used before the connection was made"
        return self.transport

    def take(self, max_bytes: int) -> bytes:
        """The oldest piece received (at most ``max_bytes`` of it); its arrival becomes the last."""
        data, arrival = self.pieces.popleft()
        if len(data) > max_bytes:
            self.pieces.appendleft((data[max_bytes:], arrival))
            data = data[:max_bytes]
        self.buffered -= len(data)
        self.last_arrival_ns = arrival
        if self.reading_paused and self.buffered < LOW_WATER_BYTES and not self.ended:
            self.reading_paused = False
            self._transport.resume_reading()
        return data

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(True)

    def _drain_done(self) -> None:
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)


def _expire(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


class ProtocolStream(AsyncNetworkStream):
    """One connection as httpcore sees it: read, write, TLS, close, extra info."""

    def __init__(self, receiver: _Receiver) -> None:
        self._receiver = receiver

    @property
    def connected_ns(self) -> int | None:
        """When the loop saw the TCP connect complete (the task that asked resumes later)."""
        return self._receiver.made_ns

    @property
    def last_arrival_ns(self) -> int | None:
        """When the bytes of the latest read reached this process (the loop received them)."""
        return self._receiver.last_arrival_ns

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        receiver = self._receiver
        if not receiver.pieces and not receiver.ended and not await self._wait(timeout):
            raise httpcore.ReadTimeout("no data within the read timeout")
        if receiver.pieces:
            return receiver.take(max_bytes)
        if receiver.error is not None:
            raise httpcore.ReadError(str(receiver.error)) from receiver.error
        return b""

    async def _wait(self, timeout: float | None) -> bool:
        """Wait for bytes or the end; False when ``timeout`` passed first."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[bool] = loop.create_future()
        self._receiver.waiter = waiter
        timer = None if timeout is None else loop.call_later(timeout, _expire, waiter)
        try:
            return await waiter
        finally:
            self._receiver.waiter = None
            if timer is not None:
                timer.cancel()

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        receiver = self._receiver
        transport = receiver.transport
        if transport is None or transport.is_closing():
            raise httpcore.WriteError("the connection is closed") from receiver.error
        transport.write(buffer)
        if not receiver.writing_paused:
            return
        # The transport holds more than its high-water mark: wait until it drains.
        receiver.drained = asyncio.get_running_loop().create_future()
        try:
            async with asyncio.timeout(timeout):
                await receiver.drained
        except TimeoutError as exc:
            raise httpcore.WriteTimeout("the write did not drain within the timeout") from exc
        finally:
            receiver.drained = None
        if receiver.error is not None:
            raise httpcore.WriteError(str(receiver.error)) from receiver.error

    async def aclose(self) -> None:
        if self._receiver.transport is not None:
            self._receiver.transport.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> AsyncNetworkStream:
        receiver = self._receiver
        assert receiver.transport is not None
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                tls = await loop.start_tls(
                    receiver.transport, receiver, ssl_context, server_hostname=server_hostname
                )
        except BaseException as exc:
            # Cancelled too (a request's deadline): the half-open connection is nobody's else.
            receiver.transport.close()
            if isinstance(exc, TimeoutError):
                raise httpcore.ConnectTimeout("no TLS handshake within the timeout") from exc
            if isinstance(exc, OSError):  # ssl.SSLError too: a refused certificate, no TLS there
                raise httpcore.ConnectError(str(exc)) from exc
            raise
        if tls is None:  # the peer closed during the handshake
            raise httpcore.ConnectError("the connection closed during the TLS handshake")
        # The loop hands the same protocol the decrypted bytes; writes go through ``tls``.
        receiver.transport = tls
        return self

    def get_extra_info(self, info: str) -> Any:
        receiver = self._receiver
        transport = receiver.transport
        if info == "is_readable":  # what an idle connection read: the peer's close, or junk
            return bool(receiver.pieces) or receiver.ended
        if transport is None:
            return None
        key = {"client_addr": "sockname", "server_addr": "peername"}.get(info, info)
        if key not in ("ssl_object", "sockname", "peername", "socket"):
            return None
        return transport.get_extra_info(key)


class ProtocolBackend(AsyncNetworkBackend):
    """Opens connections for httpcore's pool on the running asyncio loop (uvloop included)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        local = None if local_address is None else (local_address, 0)
        try:
            async with asyncio.timeout(timeout):
                transport, receiver = await loop.create_connection(
                    _Receiver, host, port, local_addr=local
                )
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout("no connection within the connect timeout") from exc
        except socket.gaierror as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        except OSError as exc:
            failed = OSError(NO_CONNECTION)
            failed.__cause__ = exc
            raise httpcore.ConnectError(NO_CONNECTION) from failed
        sock = transport.get_extra_info("socket")
        # Each request is written as headers then body: without it the body waits for an ACK.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for option in socket_options or ():
            sock.setsockopt(*option)
        return ProtocolStream(receiver)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[SOCKET_OPTION] | None = None,
    ) -> AsyncNetworkStream:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeout):
                transport, receiver = await loop.create_unix_connection(_Receiver, path)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout("no connection within the connect timeout") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        for option in socket_options or ():
            transport.get_extra_info("socket").setsockopt(*option)
        return ProtocolStream(receiver)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
