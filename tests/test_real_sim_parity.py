"""The simulator (``--device cpu``) against a live real vLLM 0.32: what the wizard reads must match.

One real server (configuration ``healthy``: a tiny model, max_model_len 2048, served as ``tiny``)
and one simulator started with the same flags. Compared: /metrics families (names, types, label
names; the simulator may omit families, but only those listed in ``SIM_OMITS``, and every family
the wizard reads must be in both with the same labels), the log lines the wizard's reader uses,
SSE chunk shapes and HTTP chunk framing, response header names, error bodies, ``/v1/models``. A
difference fails the test: either the simulator drifted or the real server changed.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SimProcess, start_sim
from tests.realvllm import MAX_MODEL_LEN, SERVED_NAME, RealVllm
from tests.test_sim_api import chunks_of, raw_request
from wizard.probes.readers import metrics as metrics_probe
from wizard.probes.readers.vllm_log import read_lines

pytestmark = [pytest.mark.real_vllm("healthy"), pytest.mark.slow]

# The flags RealVllm starts the real server with (tests/realvllm), spelled for the simulator;
# the real tier sets VLLM_CPU_KVCACHE_SPACE=1, and its tiny model (2 layers, 4 KV heads of 32,
# bf16) holds 1,024 bytes of KV cache per token.
SIM_ARGS = (
    "--device", "cpu", "--model", "/models/tiny", "--served-model-name", SERVED_NAME,
    "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", "--load-format", "dummy",
    "--cpu-kvcache-space", "1", "--kv-bytes-per-token", "1024", "--log-stats-interval", "1",
)  # fmt: skip

# Families of the wizard's metrics reader (wizard/probes/readers/metrics.py), as the parser names them.
WIZARD_READS = (
    "vllm:kv_cache_usage_perc", "vllm:num_preemptions", "vllm:num_requests_running",
    "vllm:num_requests_waiting", "vllm:prompt_tokens", "vllm:generation_tokens",
    "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
    "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
    "vllm:request_decode_time_seconds", "vllm:cache_config_info",
)  # fmt: skip

# Families the real server has and the simulator does not model (MFU estimates, the KV-connector
# and multimodal caches, cache tiers): all zero on a plain single-node server.
SIM_OMITS = frozenset({
    "vllm:estimated_flops_per_gpu", "vllm:estimated_flops_per_gpu_created",
    "vllm:estimated_read_bytes_per_gpu", "vllm:estimated_read_bytes_per_gpu_created",
    "vllm:estimated_write_bytes_per_gpu", "vllm:estimated_write_bytes_per_gpu_created",
    "vllm:external_prefix_cache_queries", "vllm:external_prefix_cache_queries_created",
    "vllm:external_prefix_cache_hits", "vllm:external_prefix_cache_hits_created",
    "vllm:mm_cache_queries", "vllm:mm_cache_queries_created",
    "vllm:mm_cache_hits", "vllm:mm_cache_hits_created",
    "vllm:prompt_tokens_cached_by_source", "vllm:prompt_tokens_cached_by_source_created",
})  # fmt: skip


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    process = start_sim(tmp_path_factory.mktemp("parity-sim"), *SIM_ARGS)
    yield process
    process.stop()


def completion(url: str, **extra: Any) -> httpx.Response:
    body = {"model": SERVED_NAME, "prompt": "hello world", "max_tokens": 8, "ignore_eos": True}
    return httpx.post(url + "/v1/completions", json={**body, **extra}, timeout=60)


def families(url: str) -> dict[str, tuple[str, frozenset[str]]]:
    text = httpx.get(url + "/metrics", timeout=30).text
    out = {}
    for family in text_string_to_metric_families(text):
        labels = frozenset(k for s in family.samples for k in s.labels) - {"le", "quantile"}
        out[family.name] = (family.type, labels)
    return out


def test_metric_families(real_vllm: RealVllm, sim: SimProcess) -> None:
    for url in (real_vllm.url, sim.url):  # histograms and http_* series get their first samples
        assert completion(url).status_code == 200
        assert httpx.get(url + "/v1/models").status_code == 200
    real, simulated = families(real_vllm.url), families(sim.url)
    for name in WIZARD_READS:
        assert name in real and name in simulated, name
        assert real[name] == simulated[name], (name, real[name], simulated[name])
    assert set(simulated) <= set(real), sorted(set(simulated) - set(real))
    differing = {n: (real[n], simulated[n]) for n in simulated if real[n] != simulated[n]}
    assert not differing, differing
    assert set(real) - set(simulated) == SIM_OMITS, sorted((set(real) - set(simulated)) ^ SIM_OMITS)
    content_types = {
        httpx.get(u + "/metrics").headers["content-type"] for u in (real_vllm.url, sim.url)
    }
    assert content_types == {"text/plain; version=1.0.0; charset=utf-8"}
    # The wizard's reader finds the same things in both.
    parsed = [
        metrics_probe.parse(httpx.get(u + "/metrics").text).to_dict()
        for u in (real_vllm.url, sim.url)
    ]
    # ("note" says the ITL sits below the first bucket: true of the tiny model's speed only.)
    present = [{k for k, v in p.items() if v not in (None, {}, []) and k != "note"} for p in parsed]
    assert present[0] == present[1], present[0] ^ present[1]
    for key in ("block_size", "num_gpu_blocks", "kv_cache_tokens", "gpu_memory_utilization"):
        assert parsed[0][key] == parsed[1][key], key


def normalized(line: str) -> str:
    """A log line's shape: its process, level and source kept, times, pids and numbers masked."""
    line = re.sub(r"pid=\d+", "pid=N", line)
    line = re.sub(r"\d\d-\d\d \d\d:\d\d:\d\d", "MM-DD HH:MM:SS", line)
    line = re.sub(r"http://127\.0\.0\.1:\d+", "URL", line)
    line = re.sub(r"(?<![\w.])/[\w./-]+", "PATH", line)  # the model's path differs
    return re.sub(r"\d[\d,]*(\.\d+)?", "N", line)


def first(log: str, needle: str) -> str:
    for line in log.splitlines():
        if needle in line:
            return line
    raise AssertionError(f"no line with {needle!r}")


def wait_for_stats(server_log: Any, url: str) -> str:
    """Make the server busy until it writes an ``Engine 000:`` line (every 10 s on the real one)."""
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        log = server_log()
        if "Engine 000:" in log:
            return str(log)
        completion(url, max_tokens=32)
    raise AssertionError("no stats line")


def test_log_lines_the_reader_uses(real_vllm: RealVllm, sim: SimProcess) -> None:
    real_log = wait_for_stats(real_vllm.log, real_vllm.url)
    sim_log = wait_for_stats(sim.log, sim.url)
    for needle in ("Engine 000:", "KV cache size: ", "Starting vLLM server on",
                   "Explicitly set (", "Initializing model took", "init engine (profile",
                   "Using max model len", "Starting to load model", "Available routes are:"):  # fmt: skip
        assert normalized(first(real_log, needle)) == normalized(first(sim_log, needle)), needle
    # The same arguments, in the same order (the port differs).
    args = [first(log, "non-default args: ") for log in (real_log, sim_log)]
    keys = [re.findall(r"'(\w+)': ", line.split("non-default args: ", 1)[1]) for line in args]
    # A --dtype the host needs (float32 on a CPU with AMX) is the tests' workaround, not a setting
    # the simulator models.
    keys[0] = [key for key in keys[0] if key != "dtype"]
    assert keys[0] == keys[1], keys
    # The wizard's log reader extracts the same fields from both.
    runs = [read_lines(log.splitlines(keepends=True)) for log in (real_log, sim_log)]
    present = [{k for k, v in r.items() if v is not None and v != [] and v != {}} for r in runs]
    assert present[0] - {"runs", "lines"} == present[1] - {"runs", "lines"}, present[0] ^ present[1]
    for key in ("kv_cache_tokens", "max_concurrency", "max_model_len", "block_size"):
        assert runs[0].get(key) == runs[1].get(key), key
    stats = [set(r["stats"][-1]) for r in runs]
    assert stats[0] == stats[1]


def sse_request(
    url: str, path: str, body: dict[str, Any], version: str = "1.1"
) -> tuple[str, list[bytes]]:
    """One streamed request on a raw socket: the response head and its HTTP chunks."""
    payload = json.dumps(body).encode()
    head = (f"POST {path} HTTP/{version}\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n")  # fmt: skip
    if version == "1.1":
        head += "Connection: close\r\n"
    response = raw_request(url, head.encode() + b"\r\n" + payload)
    headers, _, body_bytes = response.partition(b"\r\n\r\n")
    return headers.decode(), chunks_of(body_bytes)


def shapes(parts: list[bytes]) -> dict[str, Any]:
    """What a client can see of a stream, without its text: keys, framing, ids."""
    assert parts[-1] == b"data: [DONE]\n\n"
    events = []
    for part in parts[:-1]:
        assert part.startswith(b"data: ") and part.endswith(b"\n\n") and part.count(b"data: ") == 1
        events.append(json.loads(part[len(b"data: ") :]))

    def shape(event: dict[str, Any]) -> tuple[Any, ...]:
        choice = event["choices"][0] if event["choices"] else {}
        return (tuple(event), tuple(choice), tuple(choice.get("delta", {})),
                tuple(event.get("usage", {})))  # fmt: skip

    return {
        "first": shape(events[0]),
        "middle": {shape(e) for e in events[1:-1]},
        "last": shape(events[-1]),
        "ids": {re.sub(r"[0-9a-f]{16}$", "HEX", e["id"]) for e in events},
        "fingerprint": re.sub(r"[0-9a-f]{8}$", "HASH", events[-1].get("system_fingerprint", "")),
    }


CHAT = {"model": SERVED_NAME, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8,
        "ignore_eos": True, "stream": True}  # fmt: skip
COMPLETION = {"model": SERVED_NAME, "prompt": "hello world", "max_tokens": 8, "ignore_eos": True,
              "stream": True}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/completions", COMPLETION),
        ("/v1/completions", {**COMPLETION, "stream_options": {"include_usage": True}}),
        ("/v1/chat/completions", CHAT),
        ("/v1/chat/completions", {**CHAT, "stream_options": {"include_usage": True}}),
        ("/v1/chat/completions",
         {**CHAT, "stream_options": {"include_usage": True, "continuous_usage_stats": True}}),
    ],
    ids=["completion", "completion-usage", "chat", "chat-usage", "chat-continuous-usage"],
)  # fmt: skip
def test_sse_shapes(real_vllm: RealVllm, sim: SimProcess, path: str, body: dict[str, Any]) -> None:
    sim_head, sim_parts = sse_request(sim.url, path, body)
    # vLLM merges the deltas of a stream its API server fell behind on (its output collector):
    # on a busy machine all 8 tokens can come in the last event, with no event between. That is
    # timing, not shape: ask again (a run of the real tier at load 8 saw it once, in the chat case).
    for _ in range(3):
        real_head, real_parts = sse_request(real_vllm.url, path, body)
        if shapes(real_parts)["middle"]:
            break
    assert header_names(real_head) == header_names(sim_head)
    assert shapes(real_parts) == shapes(sim_parts)
    if path.endswith("chat/completions"):  # the role chunk is an HTTP chunk of its own
        for parts in (real_parts, sim_parts):
            assert b'"delta":{"role":"assistant","content":""}' in parts[0]
            assert b'"role"' not in parts[1]


def header_names(head: str) -> list[str]:
    lines = head.split("\r\n")
    return [lines[0], *(line.split(":", 1)[0] for line in lines[1:])]


def test_response_headers_and_http10_framing(real_vllm: RealVllm, sim: SimProcess) -> None:
    requests = [
        b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /v1/models HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /nope HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /v1/completions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"GET /v1/models HTTP/1.0\r\nHost: x\r\n\r\n",
    ]
    for request in requests:
        heads = [
            raw_request(u, request).partition(b"\r\n\r\n")[0].decode()
            for u in (real_vllm.url, sim.url)
        ]
        assert header_names(heads[0]) == header_names(heads[1]), request
    # nginx's default upstream request: HTTP/1.0, answered HTTP/1.1, connection: close, chunked.
    heads = [
        sse_request(u, "/v1/completions", COMPLETION, version="1.0")[0]
        for u in (real_vllm.url, sim.url)
    ]
    assert header_names(heads[0]) == header_names(heads[1])
    assert (
        heads[0].split("\r\n")[0] == "HTTP/1.1 200 OK" and "transfer-encoding: chunked" in heads[0]
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/chat/completions", b'{"model": "tiny", "messages": ['),
        ("/v1/completions", {"model": SERVED_NAME, "prompt": "hello", "max_tokens": 5000}),
        ("/v1/completions", {"model": SERVED_NAME, "prompt": "hello " * 2100, "max_tokens": 5}),
        ("/v1/completions", {"model": "gpt-4", "prompt": "hello", "max_tokens": 5}),
    ],
    ids=["bad-json", "max-tokens-above-max-model-len", "long-prompt", "unknown-model"],
)  # fmt: skip
def test_error_bodies(real_vllm: RealVllm, sim: SimProcess, path: str, body: Any) -> None:
    answers = []
    for url in (real_vllm.url, sim.url):
        if isinstance(body, bytes):
            response = httpx.post(
                url + path, content=body, headers={"content-type": "application/json"}
            )
        else:
            response = httpx.post(url + path, json=body, timeout=60)
        answers.append((response.status_code, response.json()))
    assert answers[0] == answers[1]
    assert list(answers[0][1]["error"]) == ["message", "type", "param", "code"]


def test_models_and_version(real_vllm: RealVllm, sim: SimProcess) -> None:
    real, simulated = (httpx.get(u + "/v1/models").json() for u in (real_vllm.url, sim.url))
    assert list(real) == list(simulated)
    entries = real["data"][0], simulated["data"][0]
    assert list(entries[0]) == list(entries[1])
    assert list(entries[0]["permission"][0]) == list(entries[1]["permission"][0])
    for key in ("id", "object", "owned_by", "parent", "max_model_len"):
        assert entries[0][key] == entries[1][key], key
    assert (
        Path(entries[0]["root"]).name == "model"
    )  # the model path; the simulator's is its --model
    versions = [httpx.get(u + "/version").json() for u in (real_vllm.url, sim.url)]
    assert versions[0] == versions[1] == {"version": "0.32.0"}
