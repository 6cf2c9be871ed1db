"""The streaming probe: its definitions, checked against ground truth, and its error classes."""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
from collections.abc import Callable, Iterator

import httpx
import pytest

from tests.conftest import SimProcess, wizard_command
from tests.faultserver import fault_server
from wizard.cli.probe import NOTHING_MEASURED
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, measure_stream

SimFactory = Callable[..., SimProcess]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def measure_many(
    base_url: str, spec: RequestSpec | None = None, timeout: float = 10.0, count: int = 1
) -> list[StreamSample]:
    """``count`` requests one after another on one client (so the connection is reused)."""

    async def go() -> list[StreamSample]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=5)) as client:
            spec_ = spec or RequestSpec(model="m", max_tokens=16)
            return [await measure_stream(client, base_url, spec_) for _ in range(count)]

    return asyncio.run(go())


def measure(base_url: str, spec: RequestSpec | None = None, timeout: float = 10.0) -> StreamSample:
    return measure_many(base_url, spec, timeout)[0]


@pytest.fixture(scope="module")
def faults() -> Iterator[str]:
    with fault_server() as url:
        yield url


def test_definitions_against_simulator_ground_truth(healthy_sim: SimProcess) -> None:
    spec = RequestSpec(model=MODEL, endpoint="chat", input_tokens=16, max_tokens=20)
    samples = measure_many(healthy_sim.url, spec, count=3)
    trace = {
        r["request_id"]: r for r in httpx.get(healthy_sim.url + "/sim/trace").json()["requests"]
    }
    offsets = []
    for sample in samples:
        assert sample.ok and sample.output_tokens == 20 and not sample.tokens_estimated
        truth = trace[sample.request_id]
        assert len(sample.output_times_ns) == 20  # the role-only chunk is not an output event
        # Arrival of each output event minus the moment the server handed it to the socket.
        offsets.append(sample.output_times_ns[0] - truth["sent_ns"][0])
        assert sample.tpot_ms == pytest.approx(
            (sample.output_times_ns[-1] - sample.output_times_ns[0]) / 1e6 / 19
        )
        assert len(sample.itl_ms) == 19
        assert sample.itl_per_token_ms is not None and len(sample.itl_per_token_ms) == 19
        assert sample.e2e_ms is not None and sample.ttft_ms is not None
        assert sample.e2e_ms > sample.ttft_ms
    # Loopback delivery on a reused connection: well under the ~40 ms that a Nagle/delayed-ACK
    # stall adds to the first small events (a bug this caught).
    assert statistics.median(offsets) / 1e6 < 10


def test_role_chunk_long_before_the_first_token_does_not_count(faults: str) -> None:
    sample = measure(faults + "/roleearly", RequestSpec(model="m", endpoint="chat", max_tokens=2))
    assert sample.ok
    assert (
        sample.ttft_ms is not None and sample.ttft_ms >= 190
    )  # the first content, not the role chunk
    assert len(sample.output_times_ns) == 2


def test_multi_token_events(faults: str) -> None:
    sample = measure(faults + "/multitoken")
    assert sample.ok
    assert len(sample.output_times_ns) == 2 and sample.output_tokens == 4  # usage wins over events
    assert sample.tpot_ms is not None and sample.itl_ms[0] >= 40
    assert sample.tpot_ms == pytest.approx(sample.itl_ms[0] / 3)
    assert list(sample.output_event_tokens) == [3, 1]
    assert sample.itl_per_token_ms == sample.itl_ms  # the later event carried one token


def test_burst_evidence(faults: str) -> None:
    from wizard.probes.http.stream import stream_report

    sample = measure(faults + "/burst")
    assert sample.ok and sample.max_events_per_read == 10
    burst = stream_report([sample])["summary"]["burst"]
    assert burst["max_events_per_read"] == 10
    assert burst["gap_histogram_ms"]["<1"] == 9  # nine gaps inside the burst
    assert burst["gap_histogram_ms"][">=1000"] == 0
    assert sum(burst["gap_histogram_ms"].values()) == 10
    assert burst["first_output_after_headers_ms"]["p50"] >= 90  # headers came early, events late


def test_missing_usage_and_early_stop_never_report_the_requested_length(faults: str) -> None:
    sample = measure(faults + "/nousage", RequestSpec(model="m", max_tokens=16))
    assert sample.ok
    assert sample.output_tokens == 5 and sample.tokens_estimated
    assert sample.finish_reason == "stop"


@pytest.mark.parametrize(
    ("path", "kind", "message"),
    [
        ("/status500", "http_500", "HTTP 500: simulated 500"),
        ("/status404", "http_404", "HTTP 404: simulated 404"),
        ("/status429", "http_429", "HTTP 429"),
        ("/errorevent", "stream_error", "error event in stream: boom"),
        ("/nodone", "truncated", "stream ended without [DONE]"),
        ("/reset", "connection_reset", "connection broke mid-response"),
    ],
)
def test_error_classes_are_samples(faults: str, path: str, kind: str, message: str) -> None:
    sample = measure(faults + path)
    assert sample.error_kind == kind
    assert sample.error is not None and message in sample.error
    assert "\n" not in sample.error


def test_hang_is_a_read_timeout(faults: str) -> None:
    sample = measure(faults + "/hang", timeout=0.5)
    assert sample.error_kind == "read_timeout"
    assert len(sample.output_times_ns) == 1  # what arrived before the stall is kept


def test_garbage_lines_are_counted_and_fail_the_request(faults: str) -> None:
    sample = measure(faults + "/garbage")
    assert sample.error_kind == "malformed"  # no valid completion, whatever came after it
    assert sample.malformed_events == 3  # bad JSON, a bare line, a JSON array
    assert sample.output_tokens == 1


def test_refused_connection(faults: str) -> None:
    with socket_free_port() as port:
        sample = measure(f"http://127.0.0.1:{port}")
    assert sample.error_kind == "connection_refused"


class socket_free_port:
    """A port nobody listens on (bound, then closed)."""

    def __enter__(self) -> int:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        return None


def test_auth_failure_and_key_never_printed(sim_factory: SimFactory) -> None:
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": "canary-7d1f"})
    without = subprocess.run(
        wizard_command("probe", "stream", "--target", sim.url, "--model", MODEL, "--repeat", "1", "--json"),
        capture_output=True, text=True, timeout=60, env={**os.environ, "VLLM_API_KEY": ""},
    )  # fmt: skip
    assert without.returncode == NOTHING_MEASURED
    report = json.loads(without.stdout)
    assert report["summary"]["errors"] == {"http_401": 1}
    assert report["samples"][0]["error"] == "HTTP 401: Unauthorized"
    with_key = subprocess.run(
        wizard_command("probe", "stream", "--target", sim.url, "--repeat", "2", "--json"),
        capture_output=True, text=True, timeout=60, env={**os.environ, "VLLM_API_KEY": "canary-7d1f"},
    )  # fmt: skip
    assert with_key.returncode == 0
    assert "canary-7d1f" not in with_key.stdout + with_key.stderr
    report = json.loads(with_key.stdout)
    assert report["summary"]["succeeded"] == 2
    assert set(report["summary"]["ttft_ms"]) == {"p50", "p90", "p99"}
    assert set(report["samples"][0]) >= {
        "ttft_ms",
        "tpot_ms",
        "e2e_ms",
        "itl_ms",
        "output_tokens",
        "error",
    }


def test_cli_model_listing_failure_is_one_line(sim_factory: SimFactory) -> None:
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": "k"})
    result = subprocess.run(
        wizard_command("probe", "stream", "--target", sim.url),
        capture_output=True, text=True, timeout=60, env={**os.environ, "VLLM_API_KEY": ""},
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "401 Unauthorized" in lines[0] and "VLLM_API_KEY" in lines[0]


def test_cli_human_output(healthy_sim: SimProcess) -> None:
    result = subprocess.run(
        wizard_command("probe", "stream", "--target", healthy_sim.url, "--repeat", "2"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0
    assert "2/2 requests succeeded" in result.stdout
    for label in ("TTFT", "TPOT", "ITL", "E2E"):
        assert label in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--target", "localhost:8000"], "--target must be an http(s) URL"),
        (["--target", "http://x", "--repeat", "0"], "--repeat must be at least 1"),
    ],
)
def test_cli_usage_errors(args: list[str], message: str) -> None:
    result = subprocess.run(
        wizard_command("probe", "stream", *args), capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
