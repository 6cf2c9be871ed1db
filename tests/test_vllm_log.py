"""`probe vllm-log`: every era and prefix style, glued lines, fences, several runs, errors."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import wizard_command
from wizard.probes.vllm_log import ERRORS, read_lines

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
    assert report["stats"] == [{"running": 12, "waiting": 5, "gpu_kv_cache_usage_pct": 97.2,
                                "prompt_throughput": 512.3, "generation_throughput": 210.4, "preemptions": 0}]  # fmt: skip
    assert report["preemptions_seen"] is True and report["preemption_mode"] == "RECOMPUTE"


def test_v1_2025_two_line_kv_and_worker_prefixes() -> None:
    report = parse(V1_2025)
    assert report["engine"] == "v1" and report["model"] == "Qwen/Qwen3-8B"
    assert (report["kv_cache_tokens"], report["max_concurrency_tokens_per_request"], report["max_concurrency"]) == (
        643232, 40960, 15.7,
    )  # fmt: skip
    assert report["max_num_seqs"] == 64 and report["gpu_memory_utilization"] == 0.85
    assert report["enforce_eager"] is True and report["max_model_len"] == 40960
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
    from tests.conftest import start_sim

    sim = (
        start_sim(tmp_path, "--scenario", "chunked-prefill-off-bad-budget", wait=False)
        if False
        else None
    )
    assert sim is None
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
    assert result.returncode == 0 and "Traceback" not in result.stderr
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
    from wizard.probes.vllm_log import walk_facts

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
