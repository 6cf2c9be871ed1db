"""``/metrics`` names, types, labels and buckets, and the log lines, match vLLM's (facts §1, §2)."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SimProcess
from wizard.sim.metrics import ITL_BUCKETS, TTFT_BUCKETS

SimFactory = Callable[..., SimProcess]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def families(sim: SimProcess) -> dict[str, Metric]:
    return {family.name: family for family in text_string_to_metric_families(sim.metrics())}


def generate(sim: SimProcess, n: int = 2, max_tokens: int = 5) -> None:
    for _ in range(n):
        body = {"prompt": "a b c d", "max_tokens": max_tokens, "ignore_eos": True}
        assert httpx.post(sim.url + "/v1/completions", json=body, timeout=30).status_code == 200


def buckets_of(family: Metric) -> list[float]:
    return [
        float(s.labels["le"])
        for s in family.samples
        if s.name.endswith("_bucket") and s.labels["le"] != "+Inf"
    ]


def test_current_metric_names_types_and_labels(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    generate(sim, n=3, max_tokens=5)
    found = families(sim)
    expected_types = {
        "vllm:num_requests_running": "gauge",
        "vllm:num_requests_waiting": "gauge",
        "vllm:kv_cache_usage_perc": "gauge",
        "vllm:num_preemptions": "counter",
        "vllm:prompt_tokens": "counter",
        "vllm:generation_tokens": "counter",
        "vllm:request_success": "counter",
        "vllm:time_to_first_token_seconds": "histogram",
        "vllm:inter_token_latency_seconds": "histogram",
        "vllm:request_time_per_output_token_seconds": "histogram",
        "vllm:e2e_request_latency_seconds": "histogram",
        "vllm:request_queue_time_seconds": "histogram",
        "vllm:request_prefill_time_seconds": "histogram",
        "vllm:request_decode_time_seconds": "histogram",
        "vllm:request_inference_time_seconds": "histogram",
        "vllm:iteration_tokens_total": "histogram",
        "vllm:request_num_preemptions": "histogram",
        "vllm:cache_config_info": "gauge",
    }
    for name, kind in expected_types.items():
        assert name in found, name
        assert found[name].type == kind, name
    raw = sim.metrics()
    assert "vllm:num_preemptions_total{" in raw  # counters get _total on the wire
    assert "vllm:iteration_tokens_total_bucket{" in raw
    assert "vllm:gpu_cache_usage_perc" not in raw  # removed in current vLLM
    for family in found.values():
        if family.name.startswith("vllm:") and family.name != "vllm:cache_config_info":
            for sample in family.samples:
                assert sample.labels["model_name"] == MODEL
                assert sample.labels["engine"] == "0"
    assert buckets_of(found["vllm:time_to_first_token_seconds"]) == list(TTFT_BUCKETS)
    assert buckets_of(found["vllm:inter_token_latency_seconds"]) == list(ITL_BUCKETS)
    assert min(ITL_BUCKETS) == 0.01  # no bucket below 10 ms, as in vLLM
    counts = {s.name: s.value for f in found.values() for s in f.samples}
    assert counts["vllm:time_to_first_token_seconds_count"] == 3
    assert (
        counts["vllm:inter_token_latency_seconds_count"] == 3 * 4
    )  # one gap per token after the first
    assert counts["vllm:generation_tokens_total"] == 15
    assert counts["vllm:prompt_tokens_total"] == 12
    success = [s for s in found["vllm:request_success"].samples if s.name.endswith("_total")]
    assert {s.labels["finished_reason"]: s.value for s in success} == {"length": 3}
    info = found["vllm:cache_config_info"].samples[0].labels
    assert int(info["num_gpu_blocks"]) * int(info["block_size"]) == int(
        info["kv_cache_size_tokens"]
    )
    assert info["gpu_memory_utilization"] == "None"  # unset, as 0.34 shows it
    assert found["vllm:kv_cache_usage_perc"].samples[0].value == 0.0  # a 0..1 fraction, idle


def test_v0_metric_generation(sim_factory: SimFactory) -> None:
    sim = sim_factory("--metrics-generation", "v0")
    generate(sim)
    found = families(sim)
    assert "vllm:gpu_cache_usage_perc" in found
    assert "vllm:time_per_output_token_seconds" in found
    assert "vllm:num_requests_swapped" in found
    assert "vllm:kv_cache_usage_perc" not in found
    assert "vllm:inter_token_latency_seconds" not in found
    sample = found["vllm:num_requests_running"].samples[0]
    assert set(sample.labels) == {"model_name"}


def test_disable_log_stats_leaves_no_vllm_series(sim_factory: SimFactory) -> None:
    sim = sim_factory("--disable-log-stats", "--log-stats-interval", "0.2")
    generate(sim)
    raw = sim.metrics()
    assert "vllm:" not in raw
    assert "http_requests_total" in raw
    assert "Engine 000:" not in sim.log()


def test_startup_lines_are_vllm_formatted(sim_factory: SimFactory) -> None:
    sim = sim_factory("--max-num-seqs", "64", "--tensor-parallel-size", "2")
    log = sim.log()
    prefix = r"\((APIServer|EngineCore|Worker|Worker_TP\d) pid=\d+\) (INFO|WARNING) \d\d-\d\d \d\d:\d\d:\d\d \[\w+\.py:\d+\] "
    lines = log.strip().splitlines()
    assert lines and all(re.match(prefix, line) for line in lines), lines
    expected = [
        r"non-default args: \{'model': 'meta-llama/Llama-3\.1-8B-Instruct', 'max_num_seqs': 64, 'tensor_parallel_size': 2\}",
        r"vLLM server version 0\.34\.0, serving model meta-llama/Llama-3\.1-8B-Instruct",
        r"Using max model len 8192",
        r"Chunked prefill is enabled with max_num_batched_tokens=8192\.",
        r"Initializing a V1 LLM engine \(v0\.34\.0\) with config: .*tensor_parallel_size=2",
        r"\(Worker_TP1 pid=\d+\) .*Loading weights took \d+\.\d\d seconds",
        r"Model loading took \d+\.\d\d GiB memory and \d+\.\d{6} seconds",
        r"Available KV cache memory: \d+\.\d\d GiB",
        r"GPU KV cache size: [\d,]+ tokens, Maximum concurrency for 8,192 tokens per request: \d+\.\d\dx",
        r"Graph capturing finished in \d+ secs, took \d+\.\d\d GiB",
        r"init engine \(profile, create kv cache, warmup model\) took \d+\.\d\d s",
    ]
    position = 0
    for pattern in expected:  # present, and in vLLM's order
        match = re.compile(pattern).search(log, position)
        assert match, pattern
        position = match.start()


def test_enforce_eager_skips_graph_capture(sim_factory: SimFactory) -> None:
    log = sim_factory("--enforce-eager").log()
    assert "Graph capturing finished" not in log
    assert "init engine (profile, create kv cache, warmup model) took" in log


def test_stats_line_format_and_idle_suppression(sim_factory: SimFactory) -> None:
    sim = sim_factory("--log-stats-interval", "0.2")
    generate(sim, n=3, max_tokens=20)
    import time

    time.sleep(1.2)  # several idle intervals after the work
    stats = [line for line in sim.log().splitlines() if "Engine 000:" in line]
    assert stats
    pattern = re.compile(
        r"\(APIServer pid=\d+\) INFO \S+ \S+ \[loggers\.py:\d+\] Engine 000: Avg prompt throughput: "
        r"\d+\.\d tokens/s, Avg generation throughput: \d+\.\d tokens/s, Running: \d+ reqs, "
        r"Waiting: \d+ reqs, GPU KV cache usage: \d+\.\d%$"
    )
    assert all(pattern.match(line) for line in stats), stats
    # An idle server logs no stats line after the first idle interval.
    idle = [
        line
        for line in stats
        if "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 0.0" in line
    ]
    assert len(idle) <= 1


def test_simulated_hardware_is_not_logged_as_a_vllm_argument(sim_factory: SimFactory) -> None:
    sim = sim_factory(
        "--scenario", "kv-pressure", "--interconnect", "pcie", "--log-stats-interval", "5"
    )
    args_line = next(line for line in sim.log().splitlines() if "non-default args:" in line)
    assert "'gpu_memory_utilization': 0.73" in args_line and "'block_size': 16" in args_line
    for knob in ("gpu_memory_gib", "interconnect", "log_stats_interval_s"):
        assert knob not in args_line, args_line
