"""A hostile server (issue #15): every fault ends as a recorded failure within the deadline.

The fault server (tests/faultserver.py) trickles, nests, overflows and lies on purpose; every
request has a total deadline of DEADLINE_READ_TIMEOUTS read timeouts however often bytes come.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import wizard_command
from tests.faultserver import TRICKLES, fault_server
from wizard.probes.bounded import DEADLINE_READ_TIMEOUTS
from wizard.probes.stream import RequestSpec, StreamSample, measure_stream

READ_TIMEOUT_S = 0.5  # above the fault server's 0.2 s between bytes: only the deadline can end it


@pytest.fixture(scope="module")
def faults() -> Iterator[str]:
    with fault_server() as url:
        yield url


def measure(url: str, max_tokens: int = 16) -> StreamSample:
    async def go() -> StreamSample:
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=5.0)
        async with httpx.AsyncClient(timeout=timeout) as client:
            return await measure_stream(client, url, RequestSpec(model="m", max_tokens=max_tokens))

    return asyncio.run(go())


@pytest.mark.parametrize("mode", TRICKLES)
def test_a_trickling_server_cannot_hold_a_request(faults: str, mode: str) -> None:
    sample = measure(f"{faults}/{mode}")
    assert sample.error_kind == "deadline"
    deadline = DEADLINE_READ_TIMEOUTS * READ_TIMEOUT_S
    assert sample.error == (
        f"no complete response from {faults}/{mode}/v1/completions within its {deadline:g} s deadline"
    )


@pytest.mark.parametrize("mode", ["deepjson", "bigint", "badchoices"])
def test_events_that_do_not_decode_are_counted_not_raised(faults: str, mode: str) -> None:
    sample = measure(f"{faults}/{mode}")
    assert sample.ok, sample.error
    assert sample.malformed_events >= 1 or mode == "badchoices"
    assert sample.finish_reason == "length" and len(sample.output_times_ns) >= 1


def test_bad_fields_are_ignored(faults: str) -> None:
    sample = measure(f"{faults}/badchoices")
    assert sample.request_id == "cmpl-fault"  # the int id is no id; the first string one is
    assert sample.malformed_events == 1  # "many" tokens
    assert sample.output_tokens == 2 and sample.finish_reason == "length"


def test_usage_beyond_the_request_is_not_believed(faults: str) -> None:
    sample = measure(f"{faults}/usagejump")
    assert sample.ok and sample.malformed_events == 2  # the jump and the usage-only chunk
    assert sample.output_tokens == 1 and sample.itl_per_token_ms is None


def test_an_event_that_never_ends_is_bounded(faults: str) -> None:
    sample = measure(f"{faults}/hugeline")
    assert sample.error_kind == "oversized_event"
    assert sample.error is not None and "an event longer than 1048576 bytes" in sample.error


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    # The subprocess limit is far above the deadline: reaching it is the failure being tested.
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize("mode", TRICKLES)
def test_probes_against_a_trickling_server_end_with_the_failure_recorded(
    faults: str, mode: str
) -> None:
    url, timeout = f"{faults}/{mode}", str(READ_TIMEOUT_S)
    stream = cli("probe", "stream", "--target", url, "--model", "m", "--timeout", timeout, "--json",
                 "--repeat", "1")  # fmt: skip
    assert stream.returncode == 1 and "Traceback" not in stream.stderr
    assert json.loads(stream.stdout)["summary"]["errors"] == {"deadline": 1}
    load = cli("probe", "load", "--target", url, "--model", "m", "--timeout", timeout, "--json",
               "--requests", "2", "--concurrency", "2", "--warmup", "0")  # fmt: skip
    assert "Traceback" not in load.stderr
    assert json.loads(load.stdout)["steady"]["summary"]["errors"] == {"deadline": 2}
    if mode != "slowheaders":  # its reachability check alone reads the headers for 14 s
        endpoints = cli("probe", "endpoints", "--target", url, "--timeout", timeout, "--json")
        assert "Traceback" not in endpoints.stderr and endpoints.returncode == 1
        assert json.loads(endpoints.stdout)["reachable"] is False
    metrics = cli("probe", "metrics", "--url", url, "--timeout", timeout)
    assert metrics.returncode == 1 and "Traceback" not in metrics.stderr
    assert len(metrics.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("mode", ["deepjson", "bigint", "badchoices", "usagejump", "hugeline"])
def test_probe_stream_against_garbage_ends_with_json(faults: str, mode: str) -> None:
    result = cli("probe", "stream", "--target", f"{faults}/{mode}", "--model", "m", "--json",
                 "--repeat", "1")  # fmt: skip
    assert "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["summary"]["requests"] == 1
    assert result.returncode == (1 if mode == "hugeline" else 0)
