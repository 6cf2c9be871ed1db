"""The timing client's network backend (asyncio Protocol) against real loopback servers: TLS, the
same error kinds and words as httpx's stock backend, timeouts, and proxies from the environment."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from tests.faultserver import HEADERS, event, fault_server, text_chunk, usage_chunk
from wizard import aio
from wizard.probes.lean_http import timing_client
from wizard.probes.protocol_backend import ProtocolBackend, ProtocolStream
from wizard.probes.stream import RequestSpec, StreamSample, measure_stream

SPEC = RequestSpec(model="m", max_tokens=4)
# The stock event loop and uvloop (what the CLI runs) implement TLS and transports apart.
RUNNERS: dict[str, Callable[[Coroutine[Any, Any, Any]], Any]] = {
    "asyncio": asyncio.run,
    "uvloop": aio.run,
}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (openssl, a real file pair)."""
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return cert, key


@pytest.fixture(scope="module")
def tls_server(certificate: tuple[Path, Path]) -> Iterator[str]:
    server_side = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_side.load_cert_chain(*certificate)
    with fault_server(server_side) as url:
        yield url


@pytest.fixture(scope="module")
def plain_server() -> Iterator[str]:
    with fault_server() as url:
        yield url


def _measure(
    client: httpx.AsyncClient, url: str, runner: str = "uvloop"
) -> tuple[StreamSample, type]:
    """One measured request, and the network backend the client's pool used."""

    async def run() -> StreamSample:
        async with client:
            return await measure_stream(client, url, SPEC)

    sample = RUNNERS[runner](run())
    return sample, type(client._transport._pool._network_backend)  # type: ignore[attr-defined]


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_tls_stream_through_the_protocol_backend(
    runner: str, tls_server: str, certificate: tuple[Path, Path]
) -> None:
    trusted = ssl.create_default_context(cafile=str(certificate[0]))
    sample, backend = _measure(timing_client(verify=trusted), tls_server + "/multitoken", runner)
    assert backend is ProtocolBackend
    assert sample.ok, sample.error
    assert sample.output_tokens == 4 and sample.saw_done
    # The handshake is stamped apart from the connect, both before the request left.
    assert sample.tls_ms is not None and sample.connect_ms is not None
    assert sample.connected_ns is not None and sample.tls_started_ns is not None
    assert sample.wire_ns is not None and sample.tls_done_ns is not None
    assert sample.connected_ns <= sample.tls_started_ns < sample.tls_done_ns <= sample.wire_ns


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# (how to reach the failure, the error kind both backends report)
FAILURES: dict[str, tuple[Callable[[str, str], str], str]] = {
    "refused": (lambda plain, tls: f"http://127.0.0.1:{_free_port()}", "connection_refused"),
    "reset": (lambda plain, tls: plain + "/reset", "connection_reset"),
    "read_timeout": (lambda plain, tls: plain + "/hang", "read_timeout"),
    "truncated": (lambda plain, tls: plain + "/nodone", "truncated"),
    "untrusted_certificate": (lambda plain, tls: tls + "/multitoken", "connection_refused"),
}


@pytest.mark.parametrize("runner", sorted(RUNNERS))
@pytest.mark.parametrize("failure", sorted(FAILURES))
def test_failures_keep_the_stock_backends_kind_and_words(
    failure: str, runner: str, plain_server: str, tls_server: str
) -> None:
    where, kind = FAILURES[failure]
    url = where(plain_server, tls_server)
    timeout = httpx.Timeout(0.5, connect=5.0)
    stock, stock_backend = _measure(httpx.AsyncClient(timeout=timeout), url, runner)
    lean, lean_backend = _measure(timing_client(timeout=timeout), url, runner)
    assert lean_backend is ProtocolBackend and stock_backend is not ProtocolBackend
    assert (stock.error_kind, lean.error_kind) == (kind, kind)
    # The same words; a reset also says what the OS said (the stock backend's message is empty).
    assert lean.error is not None and stock.error is not None
    assert lean.error.startswith(stock.error)


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_refused_connect_is_worded_as_the_stock_backend_words_it(runner: str) -> None:
    # reach.explain reads "All connection attempts failed" as nothing listening: asyncio words
    # refusals from several addresses (localhost as ::1 and 127.0.0.1) as one errno-less OSError.
    port = _free_port()

    async def refused(backend: httpcore.AsyncNetworkBackend) -> httpcore.ConnectError:
        with pytest.raises(httpcore.ConnectError) as caught:
            await backend.connect_tcp("127.0.0.1", port, timeout=5)
        return caught.value

    stock = RUNNERS[runner](refused(httpcore.AnyIOBackend()))
    lean = RUNNERS[runner](refused(ProtocolBackend()))
    assert str(lean) == str(stock) == "All connection attempts failed"
    assert isinstance(lean.__cause__, OSError)
    assert isinstance(lean.__cause__.__cause__, ConnectionRefusedError)


class _Answerer:
    """A loopback server that answers whatever comes with ``reply``, and records what came."""

    def __init__(self, reply: bytes) -> None:
        self.first_lines: list[bytes] = []
        self._reply = reply
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            with conn:
                conn.settimeout(10)
                self.first_lines.append(conn.recv(65536).split(b"\r\n")[0])
                conn.sendall(self._reply)
                # The reply ends at the close; read on until the client leaves (closing with its
                # bytes unread would reset the connection).
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(65536):
                        pass

    def close(self) -> None:
        self._server.close()


@pytest.fixture
def answerer() -> Iterator[Callable[[bytes], _Answerer]]:
    servers: list[_Answerer] = []

    def start(reply: bytes) -> _Answerer:
        servers.append(_Answerer(reply))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def test_https_to_a_plain_http_port_fails_in_the_same_words(
    answerer: Callable[[bytes], _Answerer],
) -> None:
    plain = answerer(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
    url = plain.url.replace("http:", "https:")
    stock, _ = _measure(httpx.AsyncClient(), url)
    lean, backend = _measure(timing_client(), url)
    assert backend is ProtocolBackend
    assert (stock.error_kind, lean.error_kind) == ("connection_refused", "connection_refused")
    assert lean.error == stock.error
    assert lean.error is not None and "does not speak TLS" in lean.error


def test_a_proxy_from_the_environment_is_still_used(
    monkeypatch: pytest.MonkeyPatch, answerer: Callable[[bytes], _Answerer]
) -> None:
    proxy = answerer(
        HEADERS + text_chunk(" a", "length", usage=1) + usage_chunk(1) + event(b"[DONE]")
    )
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    target = f"http://127.0.0.1:{_free_port()}"  # nothing listens: only the proxy can answer

    async def run() -> StreamSample:
        async with timing_client() as client:
            return await measure_stream(client, target, SPEC)

    sample = aio.run(run())
    assert sample.ok, sample.error
    assert proxy.first_lines == [f"POST {target}/v1/completions HTTP/1.1".encode()]


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_a_read_carries_when_its_bytes_arrived_not_when_it_ran(
    runner: str, answerer: Callable[[bytes], _Answerer]
) -> None:
    server = answerer(b"first")

    async def run() -> tuple[int | None, int, bytes]:
        stream = await ProtocolBackend().connect_tcp("127.0.0.1", int(server.url.rsplit(":", 1)[1]))
        assert isinstance(stream, ProtocolStream)
        await stream.write(b"hello")
        # The loop receives the reply meanwhile; the read comes later, as under load.
        while not stream.get_extra_info("is_readable"):
            await asyncio.sleep(0.01)
        before_read = time.monotonic_ns()
        data = await stream.read(65536)
        await stream.aclose()
        return stream.last_arrival_ns, before_read, data

    arrived, before_read, data = RUNNERS[runner](run())
    assert data == b"first"
    assert arrived is not None and arrived < before_read
