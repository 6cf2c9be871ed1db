"""The timing client against real loopback servers: its lean streaming path (h11 on connections it
owns) and its network backend (asyncio Protocol). TLS, the same request bytes, facts, error kinds
and words as httpx's stock client, keep-alive, timeouts, and proxies from the environment."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
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

from tests.conftest import SimProcess
from tests.faultserver import (
    HEADERS,
    MODES,
    TRICKLES,
    event,
    fault_server,
    text_chunk,
    usage_chunk,
)
from wizard.probes.http.lean_http import LeanConnections, TimingClient, timing_client
from wizard.probes.http.protocol_backend import ProtocolBackend, ProtocolStream
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, measure_stream
from wizard.ui import aio

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
    """One measured request, and what carried it: the lean path, else httpx's pool's backend."""

    async def run() -> StreamSample:
        async with client:
            return await measure_stream(client, url, SPEC)

    sample = RUNNERS[runner](run())
    if isinstance(client, TimingClient) and client.lean.connects:
        return sample, LeanConnections
    return sample, type(client._transport._pool._network_backend)  # type: ignore[attr-defined]


@pytest.mark.parametrize("runner", sorted(RUNNERS))
def test_tls_stream_through_the_protocol_backend(
    runner: str, tls_server: str, certificate: tuple[Path, Path]
) -> None:
    trusted = ssl.create_default_context(cafile=str(certificate[0]))
    sample, path = _measure(timing_client(verify=trusted), tls_server + "/multitoken", runner)
    assert path is LeanConnections
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
    lean, lean_path = _measure(timing_client(timeout=timeout), url, runner)
    assert lean_path is LeanConnections and stock_backend is not ProtocolBackend
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
        self.requests: list[bytes] = []
        self._reply = reply
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def first_lines(self) -> list[bytes]:
        return [request.split(b"\r\n")[0] for request in self.requests]

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:  # closed
                return
            with conn:
                conn.settimeout(10)
                self.requests.append(_whole_request(conn))
                conn.sendall(self._reply)
                # The reply ends at the close; read on until the client leaves (closing with its
                # bytes unread would reset the connection).
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_WR)
                    while conn.recv(65536):
                        pass

    def close(self) -> None:
        self._server.close()


def _whole_request(conn: socket.socket) -> bytes:
    """The request's head and its content-length body, however many reads they take (what is no
    HTTP request, a TLS hello or a test's word, as the first read brought it)."""
    data = conn.recv(65536)
    while b" HTTP/1.1\r\n" in data and b"\r\n\r\n" not in data and (piece := conn.recv(65536)):
        data += piece
    if b"\r\n\r\n" not in data:
        return data
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (int(line.split(b":")[1]) for line in head.split(b"\r\n")
         if line.lower().startswith(b"content-length:")),
        0,
    )  # fmt: skip
    while len(body) < length and (piece := conn.recv(65536)):
        body += piece
    return head + b"\r\n\r\n" + body


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
    lean, path = _measure(timing_client(), url)
    assert path is LeanConnections
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

    client = timing_client()
    sample, _ = _measure(client, target)
    assert sample.ok, sample.error
    assert client.lean.connects == 0  # httpx's transport for the proxy carried it
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


# --- the lean streaming path: the same request, facts and connections as httpx's client ---------

FIXED = RequestSpec(model="m", max_tokens=4, prompt="the same prompt every time")


def _run(client: httpx.AsyncClient, url: str, spec: RequestSpec, count: int = 1, **kw: Any) -> Any:
    """``count`` requests in turn on one client; the samples and the client's lean connects."""

    async def run() -> tuple[list[StreamSample], int]:
        async with client:
            samples = [await measure_stream(client, url, spec, **kw) for _ in range(count)]
        return samples, client.lean.connects if isinstance(client, TimingClient) else 0

    return aio.run(run())


def test_the_lean_path_writes_the_bytes_httpx_writes(
    answerer: Callable[[bytes], _Answerer],
) -> None:
    reply = HEADERS + text_chunk(" a", "length", usage=1) + usage_chunk(1) + event(b"[DONE]")
    stock_server, lean_server = answerer(reply), answerer(reply)
    headers = {"Authorization": "Bearer sk-not-a-real-key"}
    (stock,), _ = _run(httpx.AsyncClient(), stock_server.url, FIXED, headers=headers)
    (lean,), connects = _run(timing_client(), lean_server.url, FIXED, headers=headers)
    assert stock.ok and lean.ok and connects == 1
    # Byte for byte, the Host header's port aside: method, target, headers in order, JSON body.
    ports = [server.url.rsplit(":", 1)[1].encode() for server in (stock_server, lean_server)]
    assert lean_server.requests == [stock_server.requests[0].replace(*ports)]
    assert b"\r\nAuthorization: Bearer sk-not-a-real-key\r\n" in lean_server.requests[0]


# What a sample says apart from its times (those differ between any two requests).
FACTS = ("output_tokens", "output_tokens_estimated", "output_events", "error_kind", "status",
         "finish_reason", "request_id", "keep_alives", "malformed_events", "content_encoding",
         "cold")  # fmt: skip
# Every fault server behaviour but the slow ones (hang, hugeline, the trickles: the timeouts and
# deadline are compared above and in test_hostile_server.py).
QUICK_MODES = [m for m in MODES if m not in ("hang", "hugeline", *TRICKLES)]


def _facts(sample: StreamSample) -> dict[str, Any]:
    shown = sample.to_dict()
    return {name: shown[name] for name in FACTS}


@pytest.mark.parametrize("mode", QUICK_MODES)
def test_the_lean_path_measures_what_httpx_measures(mode: str, plain_server: str) -> None:
    url = f"{plain_server}/{mode}"
    spec = RequestSpec(model="m", max_tokens=16)
    (stock,), _ = _run(httpx.AsyncClient(timeout=httpx.Timeout(5.0)), url, spec)
    (lean,), connects = _run(timing_client(timeout=httpx.Timeout(5.0)), url, spec)
    assert connects == 1
    assert _facts(lean) == _facts(stock)
    # The same words; a reset also says what the OS said (the stock backend's message is empty).
    assert (lean.error or "").startswith(stock.error or "")


def test_a_gzip_encoded_stream_is_decoded_alike(answerer: Callable[[bytes], _Answerer]) -> None:
    body = gzip.compress(
        text_chunk(" a", usage=1) + text_chunk(" b", "length", usage=2) + usage_chunk(2)
        + event(b"[DONE]")
    )  # fmt: skip
    reply = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-encoding: gzip\r\n"
             b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)  # fmt: skip
    (stock,), _ = _run(httpx.AsyncClient(), answerer(reply).url, FIXED)
    (lean,), connects = _run(timing_client(), answerer(reply).url, FIXED)
    assert lean.ok and connects == 1, lean.error
    assert _facts(lean) == _facts(stock)
    assert lean.content_encoding == "gzip" and lean.output_tokens == 2


def test_requests_in_turn_keep_one_connection_and_only_the_first_is_cold(
    healthy_sim: SimProcess,
) -> None:
    spec = RequestSpec(model="meta-llama/Llama-3.1-8B-Instruct", max_tokens=4)
    client = timing_client()
    samples, connects = _run(client, healthy_sim.url, spec, count=3)
    assert all(s.ok for s in samples), [s.error for s in samples]
    assert connects == 1 and [s.cold for s in samples] == [True, False, False]
    # httpx's own pool never opened a connection: the streams took the lean path.
    assert client._transport._pool.connections == []  # type: ignore[attr-defined]
    for sample in samples:  # every stamp the self-check and the definitions read is there
        assert sample.pool_wait_ms is not None and sample.send_delay_ms is not None
        assert sample.wire_ns is not None and sample.body_write_ns is not None
        assert sample.request_sent_ns is not None and sample.headers_ns is not None
    assert samples[0].connect_ms is not None and samples[1].connect_ms is None


def test_a_connection_the_server_closes_is_not_reused(plain_server: str) -> None:
    # The fault server answers "connection: close": each request opens its own.
    samples, connects = _run(timing_client(), plain_server + "/multitoken", FIXED, count=2)
    assert all(s.ok for s in samples) and connects == 2
    assert [s.cold for s in samples] == [True, True]
