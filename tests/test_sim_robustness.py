"""Clients that misbehave, crowds of connections, and the sim's command line."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import subprocess
import time
from collections.abc import Callable

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SimProcess, wizard_command
from wizard.probes.http.load import run_load
from wizard.probes.http.stream import RequestSpec
from wizard.sim.scenarios import SCENARIOS

SimFactory = Callable[..., SimProcess]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def gauge(sim: SimProcess, name: str) -> float:
    for family in text_string_to_metric_families(sim.metrics()):
        if family.name == name:
            return float(family.samples[0].value)
    raise AssertionError(f"{name} not exposed")


def wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_disconnect_mid_stream_frees_the_request(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    body = {"prompt": "a b c", "max_tokens": 5000, "ignore_eos": True, "stream": True}
    with httpx.stream("POST", sim.url + "/v1/completions", json=body, timeout=30) as response:
        for _ in response.iter_raw():
            break  # one chunk, then hang up
    assert wait_for(lambda: gauge(sim, "vllm:num_requests_running") == 0)
    assert gauge(sim, "vllm:kv_cache_usage_perc") == 0.0
    families = {f.name: f for f in text_string_to_metric_families(sim.metrics())}
    reasons = {s.labels["finished_reason"]: s.value for s in families["vllm:request_success"].samples
               if s.name.endswith("_total")}  # fmt: skip
    assert reasons.get("abort") == 1


def test_disconnect_while_waiting_for_a_non_streamed_reply(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    body = {"prompt": "a b c", "max_tokens": 5000, "ignore_eos": True}
    with contextlib.suppress(httpx.ReadTimeout):
        httpx.post(sim.url + "/v1/completions", json=body, timeout=0.3)
    assert wait_for(lambda: gauge(sim, "vllm:num_requests_running") == 0)


def test_raw_socket_garbage_and_half_requests(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    host, port = sim.url.removeprefix("http://").split(":")
    for payload in (
        b"\x00\xff garbage\r\n\r\n",
        b"POST /v1/completions HTTP/1.1\r\nContent-Length: 50\r\n\r\n{",
    ):
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)
            sock.recv(4096)
    assert httpx.get(sim.url + "/health").status_code == 200
    assert gauge(sim, "vllm:num_requests_running") == 0


def test_many_simultaneous_streams(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    spec = RequestSpec(model=MODEL, input_tokens=8, max_tokens=16)
    result = asyncio.run(run_load(sim.url, spec, concurrency=300, requests=300))
    assert all(s.ok for s in result.samples), {s.error for s in result.samples if not s.ok}
    assert all(s.output_tokens == 16 for s in result.samples)
    assert gauge(sim, "vllm:num_requests_running") == 0


def run_cli(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=timeout)


def test_cli_help_and_scenarios() -> None:
    top = run_cli("--help")
    assert top.returncode == 0 and "sim" in top.stdout
    sim_help = run_cli("sim", "--help")
    assert "--max-num-batched-tokens" in sim_help.stdout and "examples:" in sim_help.stdout
    listing = run_cli("sim", "--list-scenarios")
    for name in ("healthy", "kv-pressure", "batch-budget-large", "batch-budget-small", "queue-saturation",
                 "no-chat-template", "tp-over-pcie", "cold-start-heavy", "auth-required",
                 "chunked-prefill-off-bad-budget", "prefix-caching-off", "tp-across-nodes",
                 "enforce-eager", "chunked-prefill-off"):  # fmt: skip
        assert f"\n{name}\n" in "\n" + listing.stdout
    assert listing.stdout.count("finds: ") == len(SCENARIOS)


def test_cli_unknown_scenario_is_a_usage_error() -> None:
    result = run_cli("sim", "--scenario", "nope")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "latency-wizard sim: error: unknown scenario 'nope'; choose one of: healthy, kv-pressure, "
        "batch-budget-large, batch-budget-small, queue-saturation, no-chat-template, tp-over-pcie, "
        "tp-across-nodes, enforce-eager, chunked-prefill-off, speculative-decoding, "
        "long-context-decode, api-server-cpu, structured-output, cold-start-heavy, auth-required, "
        "prefix-caching-off, chunked-prefill-off-bad-budget"
    ]


def test_cli_bad_speculative_config_is_one_line() -> None:
    result = run_cli("sim", "--speculative-config", '{"method": "ngram"}')
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "latency-wizard sim: error: argument --speculative-config: "
        "num_speculative_tokens must be an integer > 0"
    )


def test_cli_port_in_use_is_one_line(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    port = sim.url.rsplit(":", 1)[1]
    result = run_cli("sim", "--port", port, "--quiet")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot listen on 127.0.0.1:{port}" in lines[0]


def test_cli_unwritable_log_file(tmp_path: object) -> None:
    result = run_cli("sim", "--port", "0", "--log-file", "/nonexistent-dir/vllm.log")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "latency-wizard sim: error: cannot open log file /nonexistent-dir/vllm.log: No such file or directory"
    ]
