"""``/metrics`` names, types, labels and buckets, and the log lines, match vLLM's (facts §1, §2)."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import SimProcess, wizard_command
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
        if family.name.startswith("vllm:") and not family.name.startswith(
            ("vllm:cache_config_info", "vllm:admission_rejections")  # frontend: no engine label
        ):
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
    assert {s.labels["finished_reason"]: s.value for s in success if s.value} == {"length": 3}
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
        r"Waiting: \d+ reqs, GPU KV cache usage: \d+\.\d%, Prefix cache hit rate: \d+\.\d%$"
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
    # ... nor the hardware a scenario sets (memory bandwidth, the weights' size).
    line = next(
        line
        for line in sim_factory("--scenario", "long-context-decode").log().splitlines()
        if "non-default args:" in line
    )
    assert "'max_model_len': 16384" in line
    assert "bandwidth" not in line and "weights" not in line, line


def test_families_a_real_server_has(sim_factory: SimFactory) -> None:
    sim = sim_factory()
    generate(sim, n=2, max_tokens=3)
    response = httpx.get(sim.url + "/v1/models")
    assert response.status_code == 200
    metrics = httpx.get(sim.url + "/metrics")
    assert metrics.headers["content-type"] == "text/plain; version=1.0.0; charset=utf-8"
    found = families(sim)
    labels = {name: {k for s in f.samples for k in s.labels} for name, f in found.items()}
    # The API server's process and the HTTP instrumentator, as on a real vLLM.
    for name in ("process_cpu_seconds", "process_resident_memory_bytes", "python_info"):
        assert name in found, name
    assert labels["http_requests"] == {"handler", "method", "status"}
    statuses = {s.labels["status"] for s in found["http_requests"].samples}
    assert statuses == {"2xx"}  # grouped by class, as prometheus-fastapi-instrumentator does
    handlers = {s.labels["handler"] for s in found["http_requests"].samples}
    assert handlers == {"/v1/completions", "/v1/models"}  # /metrics and /health are left out
    assert labels["http_request_duration_seconds"] == {"handler", "method", "le"}
    assert labels["http_request_duration_highr_seconds"] == {"le"}
    assert found["http_request_size_bytes"].type == "summary"
    # Prefix cache and waiting reasons: queried tokens counted; prompts shorter than a block
    # have no full block to reuse.
    counts = {s.name: s.value for f in found.values() for s in f.samples}
    assert counts["vllm:prefix_cache_queries_total"] == counts["vllm:prompt_tokens_total"] == 8
    assert counts["vllm:prefix_cache_hits_total"] == 0
    reasons = {s.labels["reason"] for s in found["vllm:num_requests_waiting_by_reason"].samples}
    assert reasons == {"capacity", "deferred"}
    success = {s.labels["finished_reason"] for s in found["vllm:request_success"].samples}
    assert success == {"stop", "length", "abort", "error", "repetition"}  # present from the start
    info = found["vllm:cache_config_info"].samples[0].labels
    assert len(info) == 37 and info["engine"] == "0"
    for key in ("num_gpu_blocks_override", "kv_cache_memory_bytes", "block_size",
                "enable_prefix_caching", "gpu_memory_utilization"):  # fmt: skip
        assert key in info, key
    assert (info["block_size"], info["num_gpu_blocks_override"]) == ("64", "None")


# As the real tier runs vLLM: VLLM_CPU_KVCACHE_SPACE=1, max_model_len 2048, a served name.
CPU = ("--device", "cpu", "--model", "/models/tiny", "--served-model-name", "tiny",
       "--max-model-len", "2048", "--load-format", "dummy", "--cpu-kvcache-space", "1")  # fmt: skip


def test_cpu_device_writes_what_vllm_032_on_cpu_writes(sim_factory: SimFactory) -> None:
    sim = sim_factory(*CPU, "--log-stats-interval", "0.3")
    generate_tiny(sim)
    import time

    time.sleep(0.8)
    log = raw_log(sim.log_file)  # the banner's lines end in a carriage return, as vLLM's do
    expected = [
        r"\(APIServer pid=\d+\) INFO \S+ \S+ \[api_utils\.py:347\]  ▄▄ ▄█ █     █     █ ▀▄▀ █  version 0\.32\.0\r",
        r"model   /models/tiny\r",
        r"\[api_utils\.py:286\] non-default args: \{'host': '127\.0\.0\.1', 'port': 0, 'model': "
        r"'/models/tiny', 'max_model_len': 2048, 'served_model_name': \['tiny'\], 'load_format': 'dummy'\}",
        r"\[model\.py:2152\] Using max model len 2048",
        r"\(EngineCore pid=\d+\) INFO .*Initializing a V1 LLM engine \(v0\.32\.0\) with config: "
        r"model='/models/tiny'.*device_config=cpu.*served_model_name=tiny",
        r"\(Worker pid=\d+\) INFO .*\[cpu_model_runner\.py:68\] Starting to load model /models/tiny\.\.\.",
        r"\[base_loader\.py:82\] Initializing model took \d+\.\d{6} seconds",
        r"\[cpu_model_runner\.py:87\] Warming up model for the compilation\.\.\.",
        r"\[cpu_model_runner\.py:91\] Warming up done\.",
        r"\[cpu_worker\.py:260\] Explicitly set \(1\.0/7\.71\) GiB for KV cache on node 0\.",
        r"\[kv_cache_utils\.py:2327\] CPU KV cache size: 8,192 tokens, Maximum concurrency for 2,048 "
        r"tokens per request: 4\.00x",
        r"\[core\.py:402\] init engine \(profile, create kv cache, warmup model\) took \d+\.\d\d s",
        r"\[entry\.py:140\] Starting vLLM server on http://127\.0\.0\.1:\d+",
        r"\[launcher\.py:186\] Available routes are:",
        r"\[loggers\.py:335\] Engine 000: Avg prompt throughput: \d+\.\d tokens/s, Avg generation "
        r"throughput: \d+\.\d tokens/s, Running: \d+ reqs, Waiting: \d+ reqs, CPU KV cache usage: "
        r"\d+\.\d%, Prefix cache hit rate: 0\.0%\n",
    ]
    position = 0
    for pattern in expected:  # present, and in vLLM's order
        match = re.compile(pattern).search(log, position)
        assert match, pattern
        position = match.start()
    for absent in ("GPU KV cache", "Preemptions:", "Chunked prefill is enabled", "Model loading took",
                   "Graph capturing", "Loading weights took"):  # fmt: skip
        assert absent not in log, absent
    assert httpx.get(sim.url + "/version").json() == {"version": "0.32.0"}
    info = families(sim)["vllm:cache_config_info"].samples[0].labels
    assert (info["block_size"], info["gpu_memory_utilization"], info["enable_prefix_caching"]) == (
        "128", "0.92", "True",
    )  # fmt: skip
    assert info["kv_cache_memory_bytes"] == str(1024**3)


def raw_log(path: Path) -> str:
    """A log file's text with its carriage returns kept."""
    return path.read_bytes().decode("utf-8")


def failed_start(tmp_path: Path, *args: str) -> str:
    """Run a simulator that must refuse to start; return its log."""
    log_file = tmp_path / "vllm.log"
    result = subprocess.run(
        wizard_command("sim", "--port", "0", "--quiet", "--log-file", str(log_file), *args),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1  # the CLI says why in one line
    return raw_log(log_file)


def generate_tiny(sim: SimProcess) -> None:
    body = {"model": "tiny", "prompt": "a b c d", "max_tokens": 30, "ignore_eos": True}
    assert httpx.post(sim.url + "/v1/completions", json=body, timeout=30).status_code == 200


def test_cpu_block_override_and_preemption_stay_out_of_the_stats_line(
    sim_factory: SimFactory,
) -> None:
    # 17 blocks of 128: one is vLLM's null block, 16 hold one request of 2,048 tokens.
    sim = sim_factory(*CPU, "--enforce-eager", "--num-gpu-blocks-override", "17",
                      "--log-stats-interval", "0.3")  # fmt: skip
    log = sim.log()
    assert "'enforce_eager': True" in log and "'num_gpu_blocks_override': 17}" in log
    assert re.search(r"\[kv_cache_utils\.py:2619\] Overriding num_gpu_blocks=64 with "
                     r"num_gpu_blocks_override=17\n", log)  # fmt: skip
    assert (
        "CPU KV cache size: 2,176 tokens, Maximum concurrency for 2,048 tokens per request: 1.06x"
        in log
    )
    assert "Warming up" not in log  # no compile warm-up with --enforce-eager
    info = families(sim)["vllm:cache_config_info"].samples[0].labels
    assert (info["num_gpu_blocks"], info["num_gpu_blocks_override"]) == ("17", "17")
    assert info["kv_cache_max_concurrency"] == "1.0625"

    async def crowd() -> None:
        import asyncio

        async with httpx.AsyncClient(timeout=60) as client:
            body = {"model": "tiny", "prompt": "w " * 500, "max_tokens": 300, "ignore_eos": True}
            await asyncio.gather(*(client.post(sim.url + "/v1/completions", json=body)
                                   for _ in range(6)))  # fmt: skip

    import asyncio
    import time

    asyncio.run(crowd())
    time.sleep(0.5)
    counts = {s.name: s.value for f in families(sim).values() for s in f.samples}
    assert counts["vllm:num_preemptions_total"] > 0  # preempting, as the real server does
    stats = [line for line in sim.log().splitlines() if "Engine 000:" in line]
    assert stats and not any("Preemptions" in line for line in stats)  # 0.32 never logs them


def test_cpu_kv_cache_too_small_fails_like_032(tmp_path: Path) -> None:
    log = failed_start(tmp_path, *CPU, "--num-gpu-blocks-override", "16")
    assert "Overriding num_gpu_blocks=64 with num_gpu_blocks_override=16" in log
    assert re.search(
        r"\(EngineCore pid=\d+\) ERROR \S+ \S+ \[core\.py:1510\] EngineCore failed to start\.", log
    )
    assert re.search(
        r"\(EngineCore pid=\d+\) ERROR .* ValueError: To serve at least one request with the "
        r"model's max seq len \(2048\), .* the estimated maximum model length is 1920\. Try increasing "
        r"`gpu_memory_utilization` \(which also controls CPU memory on the CPU backend\)", log)  # fmt: skip
    assert log.rstrip().endswith(
        "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
        "proc(s): {'EngineCore': 1}"
    )
    assert "CPU KV cache size" not in log and "Starting vLLM server" not in log


def test_cpu_chunked_prefill_refusal_is_a_pydantic_error(tmp_path: Path) -> None:
    log = failed_start(
        tmp_path, *CPU, "--no-enable-chunked-prefill", "--max-num-batched-tokens", "512"
    )
    assert "'max_num_batched_tokens': 512, 'enable_chunked_prefill': False}" in log
    assert (
        "[arg_utils.py:3005] This model does not officially support disabling chunked prefill."
        in log
    )
    tail = log.rstrip().splitlines()[-3:]
    assert (
        tail[0]
        == "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig"
    )
    assert tail[1].startswith(
        "  Value error, max_num_batched_tokens (512) is smaller than max_model_len (2048). "
    )
    assert (
        tail[2]
        == "    For further information visit https://errors.pydantic.dev/2.14/v/value_error"
    )
    assert "EngineCore" not in log  # the API server refuses before any engine core exists


def test_speculative_decoding_counters_and_line_as_vllm_writes_them(
    sim_factory: SimFactory,
) -> None:
    from wizard.probes.readers.metrics import parse, spec_decode_delta

    spec = '{"method": "ngram", "num_speculative_tokens": 3, "draft_acceptance_rate": 0.5}'
    sim = sim_factory("--speculative-config", spec, "--log-stats-interval", "0.5")
    before = parse(sim.metrics())
    generate(sim, n=2, max_tokens=40)
    after = parse(sim.metrics())
    window = spec_decode_delta(before, after)
    # Every decode step verified one draft of 3 tokens per request; 79 tokens after the two
    # first ones came from the drafts and the steps' own tokens, nothing else.
    drafts, drafted, accepted = (window[k] for k in ("spec_drafts", "spec_draft_tokens",
                                                     "spec_accepted_tokens"))  # fmt: skip
    assert drafted == 3 * drafts and 0 < accepted < drafted
    assert window["spec_num_speculative_tokens"] == 3
    assert window["spec_mean_acceptance_length"] == 1 + accepted / drafts
    per_pos = window["spec_acceptance_per_pos"]
    assert per_pos == sorted(per_pos, reverse=True) and sum(per_pos) * drafts == accepted
    # One inter-token gap a decode step, however many tokens it yields (vLLM's ITL per step).
    assert after.itl_s["count"] - before.itl_s.get("count", 0.0) == drafts
    generated = after.generation_tokens_total - before.generation_tokens_total
    assert generated == 80 and drafts + accepted >= generated - 2  # capped at max_tokens
    for _ in range(100):  # the line comes with the next stats interval (0.5 s)
        if "SpecDecoding metrics:" in (log := sim.log()):
            break
        time.sleep(0.1)
    assert (
        "speculative_config=SpeculativeConfig(method='ngram', model=None, num_spec_tokens=3)" in log
    )
    assert "'speculative_config': {'method': 'ngram', 'num_speculative_tokens': 3}" in log
    assert "draft_acceptance_rate" not in log  # the simulator's own key, never vLLM's
    line = next(line for line in log.splitlines() if "SpecDecoding metrics:" in line)
    assert re.search(
        r"Mean acceptance length: [\d.]+, Accepted throughput: [\d.]+ tokens/s, Drafted "
        r"throughput: [\d.]+ tokens/s, Accepted: \d+ tokens, Drafted: \d+ tokens, Per-position "
        r"acceptance rate: [\d.]+, [\d.]+, [\d.]+, Avg Draft acceptance rate: [\d.]+%$",
        line,
    ), line


def test_a_scrape_parses_off_the_loop_that_times_the_streams() -> None:
    """A round scrapes /metrics while its streams are in flight. The parse is pure Python (20-30
    ms for the simulator's exposition, longer for a real server's); on the event loop, every
    token arriving meanwhile was stamped late. Here an exposition that takes the parser about a
    second: the loop still wakes within half a second (before: not for the whole parse)."""
    import asyncio
    import threading

    from tests.recorder import Recorder
    from wizard.probes.readers.metrics import scrape

    lines = [f'vllm:num_requests_running{{engine="0",model_name="m",n="{i}"}} 1'
             for i in range(40_000)]  # fmt: skip
    body = ("# TYPE vllm:num_requests_running gauge\n" + "\n".join(lines) + "\n").encode()

    server = Recorder(200, body, "text/plain; version=0.0.4")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = server.url

    async def scraped_beside_a_ticker() -> tuple[float, float, float | None]:
        gaps: list[float] = []

        async def tick() -> None:
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.01)
                now = time.monotonic()
                gaps.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        began = time.monotonic()
        async with httpx.AsyncClient() as client:
            snap = await scrape(client, url)
        took = time.monotonic() - began
        ticker.cancel()
        return took, max(gaps), snap.running

    try:
        took, worst, running = asyncio.run(scraped_beside_a_ticker())
    finally:
        server.shutdown()
        server.server_close()
    assert running == 40_000  # every sample parsed and summed
    assert took > 0.6, f"the parse took {took:.2f} s: too fast to show the loop held"
    assert worst < 0.5, f"the loop was held {worst:.2f} s of a {took:.2f} s scrape"
