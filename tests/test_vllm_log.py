"""`probe vllm-log`: every era and prefix style, glued lines, fences, several runs, errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wizard_command
from wizard.probes.readers.vllm_log import ERRORS, read_lines, read_text

V0_2024 = """\
INFO 07-08 07:17:02 llm_engine.py:169] Initializing an LLM engine (v0.5.1) with config: model='meta-llama/Meta-Llama-3-8B-Instruct', speculative_config=None, tokenizer='meta-llama/Meta-Llama-3-8B-Instruct', dtype=torch.bfloat16, max_seq_len=8192, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size=2, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, enforce_eager=False, kv_cache_dtype=auto, seed=0)
INFO 07-08 07:17:20 distributed_gpu_executor.py:56] # GPU blocks: 27355, # CPU blocks: 4096
INFO 07-08 07:17:34 metrics.py:334] Avg prompt throughput: 512.3 tokens/s, Avg generation throughput: 210.4 tokens/s, Running: 12 reqs, Swapped: 0 reqs, Pending: 5 reqs, GPU KV cache usage: 97.2%, CPU KV cache usage: 0.0%.
WARNING 07-08 07:17:35 scheduler.py:1057] Sequence group 42 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_cumulative_preemption_cnt=50
"""

V1_2025 = """\
(APIServer pid=1) INFO 05-09 00:49:01 [api_server.py:1043] vLLM API server version 0.9.2
(APIServer pid=1) INFO 05-09 00:49:01 [cli_args.py:325] non-default args: {'model': 'Qwen/Qwen3-8B', 'max_num_seqs': 64, 'gpu_memory_utilization': 0.85, 'tensor_parallel_size': 2}
(EngineCore_0 pid=77) INFO 05-09 00:49:09 [core.py:69] Initializing a V1 LLM engine (v0.9.2) with config: model='Qwen/Qwen3-8B', max_seq_len=40960, tensor_parallel_size=2, pipeline_parallel_size=1, enforce_eager=True
(VllmWorker rank=1 pid=254) INFO 05-09 00:49:30 [gpu_model_runner.py:1595] Model loading took 7.6 GiB and 12.345678 seconds
(EngineCore_0 pid=77) INFO 05-09 00:49:41 [kv_cache_utils.py:716] GPU KV cache size: 643,232 tokens
(EngineCore_0 pid=77) INFO 05-09 00:49:41 [kv_cache_utils.py:720] Maximum concurrency for 40,960 tokens per request: 15.70x
(APIServer pid=1) INFO 05-09 00:50:11 [loggers.py:118] Engine 000: Avg prompt throughput: 120.0 tokens/s, Avg generation throughput: 330.5 tokens/s, Running: 64 reqs, Waiting: 9 reqs, GPU KV cache usage: 99.1%, Prefix cache hit rate: 12.0%
"""

V1_034 = """\
(APIServer pid=9) INFO 12-02 10:00:00 [utils.py:96] non-default args: {'model': 'm', 'max_num_batched_tokens': 2048, 'enable_chunked_prefill': True}
(APIServer pid=9) INFO 12-02 10:00:00 [startup.py:18] vLLM server version 0.34.0, serving model m
(APIServer pid=9) INFO 12-02 10:00:00 [model.py:2214] Using max model len 8192
(APIServer pid=9) INFO 12-02 10:00:00 [scheduler.py:355] Chunked prefill is enabled with max_num_batched_tokens=2048.
(EngineCore pid=10) INFO 12-02 10:00:01 [core.py:154] Initializing a V1 LLM engine (v0.34.0) with config: model='m', max_seq_len=8192, tensor_parallel_size=1, pipeline_parallel_size=1, enforce_eager=False
(EngineCore pid=10) INFO 12-02 10:00:09 [kv_cache_utils.py:1169] GPU KV cache size: 1,792 tokens, Maximum concurrency for 8,192 tokens per request: 0.22x
(APIServer pid=9) INFO 12-02 10:00:30 [loggers.py:270] Engine 000: Avg prompt throughput: 80.0 tokens/s, Avg generation throughput: 160.0 tokens/s, Running: 6 reqs, Waiting: 2 reqs, Preemptions: 7, GPU KV cache usage: 100.0%
"""


def parse(text: str) -> dict[str, Any]:
    return read_lines(text.splitlines(keepends=True))


def test_v0_2024() -> None:
    report = parse(V0_2024)
    assert report["engine"] == "v0" and report["num_gpu_blocks"] == 27355
    assert report["model"] == "meta-llama/Meta-Llama-3-8B-Instruct"  # from the engine config
    assert report["tensor_parallel_size"] == 2 and report["max_model_len"] == 8192
    assert report["enforce_eager"] is False
    assert report["version"] == "0.5.1"  # the release the engine config line names
    assert report["stats"] == [{"running": 12, "waiting": 5, "gpu_kv_cache_usage_pct": 97.2,
                                "prompt_throughput": 512.3, "generation_throughput": 210.4, "preemptions": 0,
                                "swapped": 0}]  # fmt: skip
    assert report["preemptions_seen"] is True and report["preemption_mode"] == "RECOMPUTE"


def test_v1_2025_two_line_kv_and_worker_prefixes() -> None:
    report = parse(V1_2025)
    assert report["engine"] == "v1" and report["model"] == "Qwen/Qwen3-8B"
    assert (report["kv_cache_tokens"], report["max_concurrency_tokens_per_request"], report["max_concurrency"]) == (
        643232, 40960, 15.7,
    )  # fmt: skip
    assert report["max_num_seqs"] == 64 and report["gpu_memory_utilization"] == 0.85
    assert report["enforce_eager"] is True and report["max_model_len"] == 40960
    assert report["version"] == "0.9.2"
    assert (
        report["stats"][0]["waiting"] == 9 and report["preemptions_seen"] is False
    )  # _fp: no preemption


def test_v1_034_one_line_kv_and_preemptions_from_stats() -> None:
    report = parse(V1_034)
    assert report["kv_cache_tokens"] == 1792 and report["max_concurrency"] == 0.22
    assert report["max_num_batched_tokens"] == 2048 and report["chunked_prefill"] is True
    assert report["preemptions_seen"] is True and report["preemption_mode"] == "RECOMPUTE"
    assert report["stats"][0]["preemptions"] == 7 and report["errors"] == []


def test_glued_lines_fences_ray_prefixes_and_several_runs() -> None:
    glued = V1_034.replace(
        "\n(EngineCore pid=10) INFO 12-02 10:00:09", "(EngineCore pid=10) INFO 12-02 10:00:09"
    )
    text = (
        "```\n"
        + V0_2024
        + "```\nsome chatter\n"
        + glued.replace(
            "(EngineCore pid=10)", "(RayWorkerWrapper pid=5, ip=10.0.0.2) (EngineCore pid=10)"
        )
    )
    report = parse(text)
    assert len(report["runs"]) == 2
    assert report["runs"][0]["engine"] == "v0" and report["engine"] == "v1"
    assert report["kv_cache_tokens"] == 1792  # found although glued to the previous line


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.", "oom"),
        ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (20000).", "max_seq_len_exceeds_kv_cache"),
        ("ValueError: To serve at least one request with the models's max seq len (131072), (16.00 GiB KV cache is needed", "max_seq_len_exceeds_kv_cache"),
        ("ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV cache is needed", "max_seq_len_exceeds_kv_cache"),
        ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization`", "no_kv_cache_memory"),
        ("openai.BadRequestError: As of transformers v4.44, default chat template is no longer allowed", "chat_template_missing"),
        ("ValueError: max_num_batched_tokens (2048) is smaller than max_model_len (8192). This effectively", "batched_tokens_below_max_model_len"),
        ("ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (6).", "tp_heads_indivisible"),
        ("RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}", "engine_init_failed"),
    ],
)  # fmt: skip
def test_errors(line: str, kind: str) -> None:
    report = parse("(EngineCore pid=1) ERROR 12-02 10:00:00 [core.py:1] " + line + "\n")
    assert report["errors"] == [{"kind": kind, "line": 1}]


def test_simulator_log_through_the_cli(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    refused = subprocess.run(
        wizard_command("sim", "--scenario", "chunked-prefill-off-bad-budget", "--port", "0", "--quiet",
                       "--log-file", str(log)),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1
    result = subprocess.run(wizard_command("probe", "vllm-log", str(log), "--json"), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    report = json.loads(result.stdout)
    assert [e["kind"] for e in report["errors"]] == [
        "engine_init_failed",
        "batched_tokens_below_max_model_len",
    ]
    assert report["chunked_prefill"] is False and report["max_num_batched_tokens"] == 2048


@pytest.mark.parametrize("content", [b"", b"\x00\xff\xfe garbage \x89PNG", b"just some text\n"])
def test_empty_and_garbage(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "log.txt"
    path.write_bytes(content)
    result = subprocess.run(wizard_command("probe", "vllm-log", str(path), "--json"), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    # The JSON object still comes (all unknown); the exit status says no vLLM line was found.
    assert result.returncode == 1 and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["engine"] is None and report["kv_cache_tokens"] is None
    assert "nothing in this input looks like a vLLM log line" in report["note"]
    missing = subprocess.run(wizard_command("probe", "vllm-log", str(tmp_path / "absent.log")),
                             capture_output=True, text=True, timeout=60)  # fmt: skip
    assert missing.returncode == 2 and "cannot read" in missing.stderr


def test_stdin(tmp_path: Path) -> None:
    result = subprocess.run(wizard_command("probe", "vllm-log", "-", "--json"), input=V1_034, capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert json.loads(result.stdout)["kv_cache_tokens"] == 1792


ERROR_FIXTURES = Path(__file__).parent / "fixtures" / "vllm-log" / "errors"


def fixture_lines(name: str) -> list[str]:
    text = (ERROR_FIXTURES / name).read_text(encoding="utf-8")
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


def error_cases(suffix: str) -> list[Any]:
    return [
        pytest.param(kind, line, id=f"{kind}{suffix}:{i}")
        for kind, _ in ERRORS
        for i, line in enumerate(fixture_lines(f"{kind}{suffix}.log"))
    ]


@pytest.mark.parametrize(("kind", "line"), error_cases(""))
def test_error_fixtures_are_recognised(kind: str, line: str) -> None:
    assert [e["kind"] for e in read_lines([line + "\n"])["errors"]] == [kind]


@pytest.mark.parametrize(("kind", "line"), error_cases("_fp"))
def test_error_fp_fixtures_are_not(kind: str, line: str) -> None:
    assert kind not in [e["kind"] for e in read_lines([line + "\n"])["errors"]]


def test_every_error_kind_has_both_fixtures() -> None:
    names = {p.name for p in ERROR_FIXTURES.glob("*.log")}
    assert names == {f"{kind}{suffix}.log" for kind, _ in ERRORS for suffix in ("", "_fp")}
    for name in names:
        assert fixture_lines(name), f"{name} has no lines"


def test_start_up_timings_of_every_era() -> None:
    log = """\
INFO 07-08 07:17:34 model_runner.py:1] Loading model weights took 14.9595 GB
INFO 07-08 07:17:40 model_runner.py:1] Graph capturing finished in 21 secs.
(VllmWorker rank=0 pid=253) INFO 05-09 00:49:30 [gpu_model_runner.py:1595] Model loading took 7.6 GiB and 12.345678 seconds
(Worker_TP0 pid=3) INFO 12-01 10:00:00 [default_loader.py:544] Loading weights took 31.20 seconds
(Worker_TP1 pid=4) INFO 12-01 10:00:00 [default_loader.py:544] Loading weights took 33.90 seconds
(EngineCore pid=2) INFO 12-01 10:00:00 [monitor.py:40] torch.compile took 41.22 s in total
(EngineCore pid=2) INFO 12-01 10:00:00 [core.py:442] init engine (profile, create kv cache, warmup model) took 63.10 s (compilation: 41.22 s)
(Worker_TP0 pid=3) INFO 12-01 10:00:00 [gpu_worker.py:1150] Free memory on device (78.1/79.2 GiB) on startup. Desired GPU memory utilization is (0.92, 72.9 GiB).
"""
    report = read_lines(log.splitlines(keepends=True))
    # The 2024 line is memory, not time; the slowest rank counts; compile is inside init engine.
    assert report["weights_load_s"] == 33.9 and report["weights_load_ranks"] == 2
    assert report["model_load_s"] == 12.345678 and report["graph_capture_s"] == 21.0
    assert report["torch_compile_s"] == 41.22 and report["init_engine_s"] == 63.1
    assert report["startup_s"] == round(12.345678 + 63.1, 2)
    assert report["device_memory_gib"] == 79.2
    # 2025 builds said "takes"; a line with no other timing word must still be read.
    older = read_lines(
        [
            "(EngineCore_0 pid=7) INFO 05-09 00:50:02 [monitor.py:33] torch.compile takes 43.73 s in total\n"
        ]
    )
    assert older["torch_compile_s"] == 43.73


def test_a_failed_start_carries_its_numbers_and_is_flagged_for_the_walk() -> None:
    from wizard.probes.readers.vllm_log import walk_facts

    line = (ERROR_FIXTURES / "batched_tokens_below_max_model_len.log").read_text().splitlines()[0]
    facts = walk_facts(read_lines([line + "\n"]))
    assert facts["startup_failed"] is True
    assert (facts["max_num_batched_tokens"], facts["max_model_len"]) == (2048, 8192)
    # An OOM after the KV cache was sized happened at runtime: the server had started.
    runtime = walk_facts(read_lines([
        "(EngineCore pid=2) INFO 12-01 10:00:00 [kv_cache_utils.py:1169] GPU KV cache size: 643,232 tokens\n",
        "(Worker pid=3) ERROR 12-01 11:00:00 [x.py:1] torch.OutOfMemoryError: CUDA out of memory.\n",
    ]))  # fmt: skip
    assert runtime["error_kinds"] == ["oom"] and runtime["startup_failed"] is False
    assert "stats" not in runtime and "runs" not in runtime


def test_v0_2023_without_a_version_in_the_engine_line() -> None:
    log = """\
INFO 12-13 10:49:51 llm_engine.py:73] Initializing an LLM engine with config: model='lmsys/vicuna-7b-v1.5', tokenizer='lmsys/vicuna-7b-v1.5', tokenizer_mode=auto, trust_remote_code=False, dtype=torch.float16, max_seq_len=4096, download_dir=None, load_format=auto, tensor_parallel_size=1, quantization=None, seed=0)
INFO 12-13 10:50:07 llm_engine.py:222] # GPU blocks: 7448, # CPU blocks: 512
INFO 12-13 10:51:12 llm_engine.py:649] Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 52.1 tokens/s, Running: 3 reqs, Swapped: 0 reqs, Pending: 0 reqs, GPU KV cache usage: 1.9%, CPU KV cache usage: 0.0%
"""
    report = read_lines(log.splitlines(keepends=True))
    assert (report["engine"], report["model"], report["max_model_len"]) == (
        "v0",
        "lmsys/vicuna-7b-v1.5",
        4096,
    )
    assert report["num_gpu_blocks"] == 7448 and report["tensor_parallel_size"] == 1
    assert report["stats"][0]["running"] == 3


@pytest.mark.parametrize(
    "wrap",
    [
        lambda line: f"2026-12-02T10:00:00.123456789Z {line}",  # kubectl logs --timestamps
        lambda line: f"Dec 02 10:00:00 gpu-07 vllm[4242]: {line}",  # journalctl
        lambda line: json.dumps(
            {"ts": "2026-12-02T10:00:00Z", "level": "info", "msg": line}
        ),  # a log shipper
        lambda line: f"[pod/vllm-0/vllm] {line}",  # stern / kubectl logs -f --prefix
    ],
    ids=["kubectl-timestamps", "journald", "json-shipper", "pod-prefix"],
)
def test_custom_prefixes_and_wrappers(wrap: Any) -> None:
    text = "".join(wrap(line) + "\n" for line in V1_034.splitlines())
    report = parse(text)
    assert (report["engine"], report["model"], report["max_num_batched_tokens"]) == (
        "v1",
        "m",
        2048,
    )
    assert report["kv_cache_tokens"] == 1792 and report["max_model_len"] == 8192
    assert report["stats"][0]["preemptions"] == 7 and report["preemptions_seen"] is True


def test_non_default_args_inside_a_json_wrapper() -> None:
    line = json.dumps({"msg": "(APIServer pid=9) INFO 12-02 10:00:00 [utils.py:96] non-default args: "
                              "{'model': 'm', 'max_num_seqs': 64, 'gpu_memory_utilization': 0.85}"})  # fmt: skip
    report = parse(line + "\n")
    assert (report["max_num_seqs"], report["gpu_memory_utilization"]) == (64, 0.85)


# -- real vLLM 0.32 (CPU build) logs, captured from real servers (tests/fixtures/vllm-log/real-*) --

REAL = Path(__file__).parent / "fixtures" / "vllm-log"
REAL_NAMES = (
    "healthy",
    "h11",
    "seqs1",
    "override17",
    "override16",
    "chunked-off",
    "notemplate-key",
)


def real(name: str) -> dict[str, Any]:
    from wizard.probes.readers.vllm_log import walk_facts

    with (REAL / f"real-0.32-{name}.log").open(encoding="utf-8") as handle:
        return walk_facts(read_lines(handle))


def real_lines(name: str) -> list[str]:
    return (REAL / f"real-0.32-{name}.log").read_text(encoding="utf-8").splitlines(keepends=True)


def test_real_032_stats_lines_say_cpu_kv_cache() -> None:
    report = parse("".join(real_lines("healthy")))
    assert report["stats_total"] == 7 and report["kv_cache_device"] == "CPU"
    # The contract key keeps its name on every device; the prefix-cache hit rate is read too.
    assert report["stats"][-1] == {"running": 0, "waiting": 0, "gpu_kv_cache_usage_pct": 0.0,
                                   "prompt_throughput": 25.6, "generation_throughput": 108.2,
                                   "preemptions": 0, "prefix_cache_hit_rate_pct": 51.5}  # fmt: skip
    facts = real("healthy")
    assert facts["stats_kv_usage_max_pct"] == 0.2 and facts["stats_waiting_max"] == 0
    assert real("seqs1")["stats_waiting_max"] == 6 and real("seqs1")["max_num_seqs"] == 1


@pytest.mark.parametrize("word", ["GPU", "CPU", "XPU", ""])
def test_stats_line_with_any_kv_device_word(word: str) -> None:
    usage = f"{word} KV cache usage" if word else "KV cache usage"
    line = ("(APIServer pid=1) INFO 12-03 13:36:42 [loggers.py:335] Engine 000: Avg prompt throughput: 197.2 tokens/s, "
            f"Avg generation throughput: 187.3 tokens/s, Running: 8 reqs, Waiting: 0 reqs, {usage}: 0.2%, "
            "Prefix cache hit rate: 0.0%\n")  # fmt: skip
    report = parse(line)
    assert report["stats_total"] == 1 and report["stats"][0]["gpu_kv_cache_usage_pct"] == 0.2
    assert report["kv_cache_device"] == (word or None)


def test_real_032_startup_is_first_line_to_ready_line() -> None:
    lines = real_lines("healthy")
    ready = next(i for i, line in enumerate(lines, 1) if "Starting vLLM server on" in line)
    facts = real("healthy")
    # 13:35:08 (the banner, the first timestamped line) to 13:36:02 (Starting vLLM server on).
    assert (facts["first_timestamp"], facts["ready_timestamp"]) == (
        "12-03 13:35:08",
        "12-03 13:36:02",
    )
    assert facts["startup_s"] == 54.0 and facts["startup_from"] == "timestamps"
    assert facts["server_ready"] is True and facts["ready_at_line"] == ready
    # The separate timings stay: init engine is only a part of the start, and CPU's model init.
    assert facts["init_engine_s"] == 2.78 and facts["model_init_s"] == 0.268982
    assert facts["startup_timings_s"] == round(2.78 + 0.268982, 2)


def test_real_032_failed_starts_have_no_ready_line() -> None:
    for name in ("override16", "chunked-off"):
        facts = real(name)
        assert facts["server_ready"] is False and facts["ready_at_line"] is None
        assert facts["startup_failed"] is True


def shifted(lines: list[str], first: str, ready: str) -> list[str]:
    """The real healthy start with its first and ready stamps moved (to cross midnight or a year)."""
    out, seen_first = [], False
    for line in lines:
        if not seen_first and "INFO 12-03 13:35:08" in line:
            line, seen_first = line.replace("12-03 13:35:08", first), True
        elif "Starting vLLM server on" in line:
            line = line.replace("12-03 13:36:02", ready)
        out.append(line)
    return out


@pytest.mark.parametrize(
    ("first", "ready", "expected"),
    [
        ("12-03 23:59:30", "12-04 00:00:24", 54.0),  # midnight
        ("12-31 23:59:30", "01-01 00:00:24", 54.0),  # New Year
        ("02-28 23:59:30", "02-29 00:00:24", 54.0),  # a leap day
    ],
)
def test_startup_across_midnight_and_new_year(first: str, ready: str, expected: float) -> None:
    lines = shifted(real_lines("healthy")[:60], first, ready)
    report = read_lines(lines)
    assert report["first_timestamp"] == first and report["ready_timestamp"] == ready
    assert report["startup_s"] == expected


def test_seconds_between_refuses_a_clock_that_went_backwards() -> None:
    from wizard.probes.readers.vllm_run import seconds_between

    assert seconds_between("12-03 13:35:08", "12-03 13:36:02") == 54.0
    assert seconds_between("12-03 13:36:02", "12-03 13:35:08") is None  # would be a year
    assert seconds_between("12-03 13:35:08", "13-40 13:36:02") is None  # not a date


def test_ready_lines_of_older_eras_and_no_timestamps() -> None:
    older = read_lines([
        "INFO 07-08 07:17:02 llm_engine.py:169] Initializing an LLM engine (v0.5.1) with config: model='m', max_seq_len=8192\n",
        "INFO 07-08 07:18:30 launcher.py:29] Route: /v1/completions, Methods: POST\n",
        "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)\n",
    ])  # fmt: skip
    # uvicorn's line has no stamp: the last stamp before it ends the start.
    assert older["server_ready"] is True and older["ready_at_line"] == 3
    assert older["startup_s"] == 88.0 and older["startup_from"] == "timestamps"
    bare = read_lines([
        "Model loading took 7.6 GiB and 12.5 seconds\n",
        "init engine (profile, create kv cache, warmup model) took 30.00 s\n",
        "Application startup complete.\n",
    ])  # fmt: skip
    assert bare["server_ready"] is True and bare["startup_s"] == 42.5
    assert bare["startup_from"] == "timings"


def test_cpu_warm_up_is_timed_from_its_two_lines() -> None:
    # vLLM 0.32's cpu_model_runner.py wording; the captured servers ran --enforce-eager (no warm-up).
    report = read_lines([
        "(Worker pid=3) INFO 12-03 13:35:56 [cpu_model_runner.py:87] Warming up model for the compilation...\n",
        "(Worker pid=3) INFO 12-03 13:36:31 [cpu_model_runner.py:91] Warming up done.\n",
    ])  # fmt: skip
    assert report["warmup_s"] == 35.0 and report["startup_timings_s"] == 35.0


def test_real_032_kv_cache_too_small_to_start() -> None:
    facts = real("override16")
    assert "max_seq_len_exceeds_kv_cache" in facts["error_kinds"]
    assert facts["estimated_max_model_len"] == 1920 and facts["max_model_len"] == 2048
    assert (facts["num_gpu_blocks_override"], facts["num_gpu_blocks"]) == (16, 16)
    # Its own line, the (EngineCore pid=N) ERROR copy of vLLM's message, is cited.
    line = real_lines("override16")[facts["error_lines"]["max_seq_len_exceeds_kv_cache"] - 1]
    assert line.startswith("(EngineCore pid=") and "estimated maximum model length is 1920" in line


def test_real_032_chunked_prefill_refused_at_start() -> None:
    facts = real("chunked-off")
    assert facts["error_kinds"] == ["batched_tokens_below_max_model_len"]
    assert (facts["max_num_batched_tokens"], facts["max_model_len"]) == (512, 2048)
    assert facts["chunked_prefill"] is False and facts["startup_failed"] is True
    # The numbers come from the pydantic message too, without the args line.
    message = [
        line for line in real_lines("chunked-off") if "is smaller than max_model_len" in line
    ]
    alone = walk_facts_of(message)
    assert (alone["max_num_batched_tokens"], alone["max_model_len"]) == (512, 2048)


def walk_facts_of(lines: list[str]) -> dict[str, Any]:
    from wizard.probes.readers.vllm_log import walk_facts

    return walk_facts(read_lines(lines))


def test_real_032_blocks_override() -> None:
    facts = real("override17")
    assert (facts["num_gpu_blocks_override"], facts["num_gpu_blocks"]) == (17, 17)
    assert facts["kv_cache_tokens"] == 2176 and facts["kv_cache_device"] == "CPU"
    assert facts["stats_kv_usage_max_pct"] == 12.5 and facts["error_kinds"] == []
    assert facts["block_size"] is None  # 0.32 logs no block size unless --block-size is given


def test_non_default_args_give_every_key() -> None:
    line = ("(APIServer pid=1) INFO 12-03 13:38:55 [api_utils.py:286] non-default args: {'model': 'm', "
            "'max_num_seqs': 4, 'max_num_batched_tokens': 512, 'enable_chunked_prefill': False, "
            "'num_gpu_blocks_override': 17, 'block_size': 128, 'max_model_len': 2048}\n")  # fmt: skip
    report = parse(line)
    assert (
        report["max_num_seqs"],
        report["max_num_batched_tokens"],
        report["chunked_prefill"],
    ) == (4, 512, False)
    assert (report["num_gpu_blocks_override"], report["block_size"], report["max_model_len"]) == (
        17,
        128,
        2048,
    )


def test_a_failed_start_and_its_restart_in_one_file_are_two_runs() -> None:
    from wizard.probes.readers.vllm_log import walk_facts

    facts = walk_facts(read_lines(real_lines("chunked-off") + real_lines("healthy")))
    assert facts["runs_count"] == 2 and facts["error_kinds"] == []
    assert facts["startup_failed"] is False and facts["startup_s"] == 54.0


WALK_NAMES = ("estimated_max_model_len", "num_gpu_blocks_override", "block_size", "kv_cache_device",
              "startup_s", "max_num_seqs", "max_num_batched_tokens", "chunked_prefill", "max_model_len")  # fmt: skip


@pytest.mark.parametrize("name", REAL_NAMES)
def test_real_032_logs_give_the_walk_its_names(name: str) -> None:
    facts = real(name)
    assert set(WALK_NAMES) <= set(facts), set(WALK_NAMES) - set(facts)
    # Every real 0.32 log is V1's; the failed start has no engine line, but its version and its
    # (APIServer pid=N) prefixes say so.
    assert facts["engine"] == "v1"
    if name == "chunked-off":
        assert facts["engine_from"] == "version 0.32"
    else:
        assert facts["engine_from"].startswith("engine config line ")
    assert facts["max_model_len"] == 2048 and "runs" not in facts and "stats" not in facts


def test_real_fixtures_carry_no_secret() -> None:
    for path in REAL.glob("real-*.log"):
        assert "sekrit" not in path.read_text(encoding="utf-8"), path.name
    assert "'api_key': '***'" in (REAL / "real-0.32-notemplate-key.log").read_text(encoding="utf-8")


def test_real_032_human_view() -> None:
    result = subprocess.run(wizard_command("probe", "vllm-log", str(REAL / "real-0.32-healthy.log")),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "start-up: 54.0 s (first line 12-03 13:35:08 to ready at line 58" in result.stdout
    assert (
        "stats lines: 7 (CPU KV cache usage max 0.2%, prefix cache hit rate last 51.5%)"
        in result.stdout
    )
    failed = subprocess.run(wizard_command("probe", "vllm-log", str(REAL / "real-0.32-override16.log")),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert "start-up: no ready line in this run" in failed.stdout
    assert "estimated_max_model_len: 1920" in failed.stdout


def test_a_restart_loop_keeps_the_first_and_last_runs_and_counts_the_rest() -> None:
    from wizard.probes.readers.vllm_log import walk_facts

    # Ten starts, each with its own KV cache size: the first and the last are kept in full.
    starts = [V1_034.replace("1,792 tokens", f"{1000 + n:,} tokens") for n in range(10)]
    report = parse("".join(starts))
    assert [r["kv_cache_tokens"] for r in report["runs"]] == [1000, 1009]
    assert report["kv_cache_tokens"] == 1009
    assert report["runs_total"] == 10 and report["runs_omitted"] == 8
    assert walk_facts(report)["runs_count"] == 10


def test_glued_lines_are_split_only_where_a_prefix_follows_text() -> None:
    from wizard.probes.readers.vllm_log import _may_be_glued

    assert not _may_be_glued("(APIServer pid=9) INFO 12-02 10:00:30 [loggers.py:270] Engine 000")
    assert not _may_be_glued("INFO 12-02 10:00:30 plain; ERROR is a word here")
    assert _may_be_glued("took 2 s(EngineCore pid=10) INFO 12-02 10:00:09 [kv] GPU KV")
    assert _may_be_glued("took 2 sINFO 12-02 10:00:09 GPU KV cache size: 1 tokens")


def test_kv_cache_memory_in_both_wordings() -> None:
    # 0.32's CPU build says how much it was given; 0.34 on a GPU what profiling left.
    assert real("healthy")["kv_cache_memory_gib"] == 1.0
    gpu = parse(
        "(Worker_TP0 pid=3) INFO 12-01 10:00:00 [gpu_worker.py:796] Available KV cache memory: 61.35 GiB\n"
    )
    assert gpu["kv_cache_memory_gib"] == 61.35


def test_the_nodes_a_layout_spans_come_from_the_hosts_own_gpus() -> None:
    """TP x PP against the GPUs of the host the files come from: more GPUs than one host has
    means several nodes, and visible devices are then judged per node."""
    from wizard.probes.readers.vllm_log import layout_on_nodes

    assert layout_on_nodes({"gpus_used": 16}, 8) == {"nodes_spanned": 2, "gpus_used_per_node": 8}
    assert layout_on_nodes({"gpus_used": 4}, 8) == {"nodes_spanned": 1, "gpus_used_per_node": 4}
    # The host's GPUs unknown (no files, a machine without GPUs): the layout's count as it is.
    assert layout_on_nodes({"gpus_used": 4}, None) == {
        "nodes_spanned": None,
        "gpus_used_per_node": 4,
    }
    assert layout_on_nodes({"gpus_used": 4}, 0)["nodes_spanned"] is None
    assert layout_on_nodes({"gpus_used": None}, 8)["gpus_used_per_node"] is None


# -- the block reader (read_text): a steady run's lines are read only where its scan finds one --

STEADY_STATS = (
    "(APIServer pid=9) INFO 12-02 10:00:31 [loggers.py:270] Engine 000: Avg prompt throughput: 1.0 "
    "tokens/s, Avg generation throughput: 2.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, "
    "GPU KV cache usage: 5.0%"
)
CHATTER = '(APIServer pid=9) INFO:     127.0.0.1:1 - "POST /v1/completions HTTP/1.1" 200 OK\n' * 3
RESTARTED_READY = "(APIServer pid=9) INFO 12-02 10:10:30 [x.py:1] Starting vLLM server on x\n"
# Each case follows a steady run (its stats lines read); what it changes shows only if its lines
# are read as line by line reads them.
STEADY_CASES = {
    # two stats lines glued: the glue comes after the scan's first find on the line
    "glued stats": (STEADY_STATS + STEADY_STATS.replace("10:00:31", "10:00:32") + "\n",
                    lambda r: r["stats_total"] == 4),
    # a glued line whose second half starts the next run
    "glued restart": (STEADY_STATS + "(APIServer pid=9) INFO 12-02 10:01:00 [utils.py:96] "
                      "non-default args: {'model': 'm2'}\n", lambda r: r["model"] == "m2"),
    # glued before the scan's first find (no dash after it): the run starts at the second time
    "glued start": ("(APIServer pid=9) INFO 12-02 10:09:00 [x.py:1] a(APIServer pid=9) INFO 12-02 "
                    "10:10:00 [utils.py:96] non-default args: {'model': 'm4'}\n" + RESTARTED_READY,
                    lambda r: r["model"] == "m4" and r["startup_span_s"] == 30.0),
    "glued start, no pid": ("(APIServer pid=9) INFO 12-02 10:09:00 [x.py:1] aINFO 12-02 10:10:00 "
                            "[utils.py:96] non-default args: {'model': 'm5'}\n" + RESTARTED_READY,
                            lambda r: r["model"] == "m5" and r["startup_span_s"] == 30.0),
    # a manifest pasted after the log: its list items carry no needle but are read while collected
    "manifest": ((REAL / "pasted" / "args-k8s-lists.yaml").read_text(encoding="utf-8"),
                 lambda r: r["tensor_parallel_size"] == 2),
    # a command continued by backslashes
    "command": ("python -m vllm.entrypoints.openai.api_server --model m3 \\\n  --max-num-seqs 5 \\\n"
                "  --max-model-len 1024\n", lambda r: r["max_num_seqs"] == 5),
    # a restart: uvicorn's ready line has no time, so the start-up ends at the line before it,
    # which has no needle
    "restart": (V1_034.split("\n", 1)[0].replace("10:00:00", "10:05:00") + "\n"
                "(APIServer pid=9) INFO 12-02 10:05:42 [x.py:1] x\n"
                "INFO:     Uvicorn running on http://0.0.0.0:8000\n",
                lambda r: r["startup_span_s"] == 42.0),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(STEADY_CASES))
def test_the_block_reader_reads_as_line_by_line(case: str) -> None:
    import io

    from wizard.probes.readers.vllm_log import read_text

    tail, shows = STEADY_CASES[case]
    ready = "(APIServer pid=9) INFO 12-02 10:00:10 [api_server.py:1] Starting vLLM server on x\n"
    text = V1_034 + ready + CHATTER + STEADY_STATS + "\n" + CHATTER + tail + CHATTER
    by_lines = read_lines(io.StringIO(text))
    assert shows(by_lines), case
    for block_chars in (1, 2, 3, 17, 64, 100_000):
        assert read_text(io.StringIO(text), block_chars) == by_lines, (case, block_chars)


def test_each_refusal_gives_its_own_numbers() -> None:
    """The refusals' messages carry what the change is computed from (vLLM 0.32's wording)."""
    from wizard.probes.readers.vllm_log import walk_facts

    def facts(line: str) -> dict[str, Any]:
        return walk_facts(parse("(APIServer pid=1) ERROR 12-02 10:00:00 [x.py:1] " + line + "\n"))

    seqs = facts(
        "ValueError: max_num_batched_tokens (64) must be greater than or equal to max_num_seqs (128)."
    )
    assert (seqs["max_num_batched_tokens"], seqs["max_num_seqs"], seqs["startup_failed"]) == (
        64,
        128,
        True,
    )
    heads = facts(
        "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (6)."
    )
    assert (heads["num_attention_heads"], heads["tensor_parallel_size"]) == (64, 6)
    model = facts(
        "ValueError: User-specified max_model_len (8192) is greater than the derived max_model_len "
        "(max_position_embeddings=4096 or model_max_length=None in model's config.json). To allow "
        "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."
    )
    assert (model["max_model_len"], model["derived_max_model_len"]) == (8192, 4096)
    kv = facts(
        "ValueError: To serve at least one request with the model's max seq len (131072), (16.00 GiB KV "
        "cache is needed, which is larger than the available KV cache memory (9.50 GiB). Based on the "
        "available memory, the estimated maximum model length is 77824."
    )
    assert (kv["kv_needed_gib"], kv["kv_cache_memory_gib"], kv["estimated_max_model_len"]) == (
        16.0,
        9.5,
        77824,
    )
    assert kv["kv_gib_per_token"] == 16.0 / 131072  # fmt: skip


def test_an_oom_while_capturing_cuda_graphs_is_its_own_kind() -> None:
    """A 2025 V1 log (0.8.5, tensor parallel): the KV cache was sized, then a rank ran out of
    memory in the capture's progress bar: not the profile run's OOM (LAT043) but LAT039's."""
    from wizard.probes.readers.vllm_log import walk_facts

    with (
        Path(__file__).parent / "fixtures" / "vllm-log" / "graph-capture-oom-2025.log"
    ).open() as handle:
        facts = walk_facts(read_text(handle))
    assert facts["error_kinds"] == ["oom_graph_capture", "engine_init_failed", "engine_init_failed"]
    assert facts["startup_failed"] is True and facts["kv_cache_tokens"] == 48560
    assert (facts["oom_requested_gib"], facts["oom_free_gib"]) == (0.875, 0.5)
    assert (facts["device_memory_gib"], facts["gpu_memory_utilization"]) == (79.19, 0.95)
    assert facts["model_memory_gib"] == 65.7201
    # An OOM with no capture before it is the plain kind.
    assert [e["kind"] for e in parse(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")["errors"]] == ["oom"]  # fmt: skip
