"""`probe metrics` and `probe endpoints` on their own, including the bad inputs people hand over."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.conftest import SimProcess, wizard_command
from tests.faultserver import fault_server

SimFactory = Callable[..., SimProcess]


def probe(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command("probe", *args), capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})  # fmt: skip


def test_metrics_from_a_live_server_both_generations(sim_factory: SimFactory) -> None:
    for generation, usage_name in (("v1", "kv_cache_usage"), ("v0", "kv_cache_usage")):
        sim = sim_factory("--metrics-generation", generation)
        httpx.post(
            sim.url + "/v1/completions",
            json={"prompt": "a b", "max_tokens": 4, "ignore_eos": True},
            timeout=30,
        )
        result = probe("metrics", "--target", sim.url, "--json")
        assert result.returncode == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["generation"] == generation and report[usage_name] == 0.0
        assert report["running"] == 0 and report["waiting"] == 0 and report["engines"] == 1
        assert report["ttft_s"]["count"] == 1 and report["itl_s"]["count"] == 3
        assert report["preemptions_total"] == 0
    assert report["kv_cache_tokens"] == report["num_gpu_blocks"] * report["block_size"]


def test_metrics_from_a_file_and_disabled_stats(sim_factory: SimFactory, tmp_path: Path) -> None:
    sim = sim_factory("--disable-log-stats")
    saved = tmp_path / "metrics.txt"
    saved.write_text(httpx.get(sim.url + "/metrics").text)
    report = json.loads(probe("metrics", "--file", str(saved), "--json").stdout)
    assert report["stats_disabled"] is True and "--disable-log-stats" in report["note"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"<html><body>502 Bad Gateway</body></html>", "this is HTML, not Prometheus metrics"),
        (b'# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine="0",model_na', "not valid Prometheus text"),
        (b"\x00\x01\xff\xfe garbage", "not valid Prometheus text"),
    ],
)  # fmt: skip
def test_metrics_bad_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "m.txt"
    path.write_bytes(content)
    result = probe("metrics", "--file", str(path))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr


def test_metrics_url_that_hangs_or_is_wrong(healthy_sim: SimProcess, tmp_path: Path) -> None:
    with fault_server() as url:
        hang = probe("metrics", "--target", url + "/hang", "--timeout", "0.5")
    assert hang.returncode == 1 and "did not answer within 0.5 s" in hang.stderr
    missing = probe("metrics", "--target", healthy_sim.url + "/nope")
    assert missing.returncode == 1 and "answered HTTP 404" in missing.stderr
    unreadable = probe("metrics", "--file", str(tmp_path / "absent.txt"))
    assert unreadable.returncode == 2 and "cannot read" in unreadable.stderr


def test_endpoints(sim_factory: SimFactory) -> None:
    healthy = json.loads(probe("endpoints", "--target", sim_factory().url, "--json").stdout)
    assert (
        healthy["model"] == "meta-llama/Llama-3.1-8B-Instruct" and healthy["max_model_len"] == 8192
    )
    assert healthy["auth"] == "none" and healthy["completions_ok"] and healthy["chat_ok"]
    assert healthy["version"] == "0.34.0" and healthy["health_status"] == 200
    # P2.2 as it is today: suffix only for fill-in-the-middle models (the simulated one is not).
    assert healthy["suffix"] == (
        "rejected (suffix is only supported for models with FIM completion rendering)"
    )
    no_template = json.loads(probe("endpoints", "--target", sim_factory("--scenario", "no-chat-template").url,
                                   "--json").stdout)  # fmt: skip
    assert no_template["chat_template_missing"] and no_template["completions_ok"]
    secured = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": "canary-e1d0"})
    without = probe("endpoints", "--target", secured.url, "--json", env={"VLLM_API_KEY": ""})
    assert json.loads(without.stdout)["auth"] == "required" and without.returncode == 1
    wrong = probe("endpoints", "--target", secured.url, "--json", env={"VLLM_API_KEY": "not-it"})
    assert json.loads(wrong.stdout)["auth"] == "rejected"
    right = probe("endpoints", "--target", secured.url, env={"VLLM_API_KEY": "canary-e1d0"})
    assert (
        right.returncode == 0
        and "auth: ok" in right.stdout
        and "canary-e1d0" not in right.stdout + right.stderr
    )
    base_path = json.loads(probe("endpoints", "--target", secured.url + "/v1", "--json",
                                 env={"VLLM_API_KEY": "canary-e1d0"}).stdout)  # fmt: skip
    assert base_path["wrong_base_path"] is True


def test_metrics_since_a_saved_snapshot_reports_the_window(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    saved = tmp_path / "before.prom"
    assert probe("metrics", "--target", healthy_sim.url, "--save", str(saved)).returncode == 0
    for _ in range(3):
        httpx.post(healthy_sim.url + "/v1/completions",
                   json={"prompt": "a b c", "max_tokens": 5, "ignore_eos": True}, timeout=30)  # fmt: skip
    report = json.loads(
        probe("metrics", "--target", healthy_sim.url, "--since", str(saved), "--json").stdout
    )
    window = report["since"]
    assert window["requests"] == 3 and window["generation_tokens"] == 15
    assert window["window_s"] > 0 and window["preemptions_per_s"] == 0
    assert 0 < window["server_prefill_mean_s"] < 5 and 0 < window["server_decode_mean_s"] < 5
    assert window["preemptions"] == 0 and window["restarted"] is False
    assert 0 < window["server_ttft_mean_s"] < 5 and 0 < window["server_itl_mean_s"] < 1
    # Compared the other way round the counters go down: a restart in between.
    now = tmp_path / "now.prom"
    now.write_text(httpx.get(healthy_sim.url + "/metrics").text)
    backwards = json.loads(
        probe("metrics", "--file", str(saved), "--since", str(now), "--json").stdout
    )
    assert backwards["since"]["restarted"] is True


ITL_BELOW_BUCKETS = """\
# HELP vllm:inter_token_latency_seconds Histogram of inter-token latency in seconds.
# TYPE vllm:inter_token_latency_seconds histogram
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.025",model_name="m"} 100.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 100.0
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 100.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} {total}
"""


@pytest.mark.parametrize(("total", "noted"), [(0.4, True), (1.2, False)])
def test_itl_below_the_smallest_bucket_is_noted(tmp_path: Path, total: float, noted: bool) -> None:
    path = tmp_path / "metrics.txt"
    path.write_text(ITL_BELOW_BUCKETS.replace("{total}", str(total)))
    report = json.loads(probe("metrics", "--file", str(path), "--json").stdout)
    assert report["itl_smallest_bucket_s"] == 0.01
    assert ("below the smallest histogram bucket" in report.get("note", "")) is noted


def test_metrics_window_around_a_load_run_counts_preemptions(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim = sim_factory("--scenario", "kv-pressure", "--no-enable-prefix-caching")
    saved = tmp_path / "before.prom"
    assert probe("metrics", "--target", sim.url, "--save", str(saved)).returncode == 0
    loaded = probe("load", "--target", sim.url, "--concurrency", "8", "--requests", "16",
                   "--input-tokens", "100", "--max-tokens", "200")  # fmt: skip
    assert loaded.returncode == 0, loaded.stderr
    window = json.loads(
        probe("metrics", "--target", sim.url, "--since", str(saved), "--json").stdout
    )["since"]
    assert window["preemptions"] > 0 and window["preemptions_per_s"] > 0
    assert window["requests"] >= 16


def test_metrics_save_where_it_cannot_write_is_one_line(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    target = tmp_path / "missing-dir" / "m.prom"
    result = probe("metrics", "--target", healthy_sim.url, "--save", str(target))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard probe metrics: error: cannot write {target}: No such file or directory"
    ]


def test_one_spelling_for_a_server_url_and_the_old_ones_still_work(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """`--target` is a server's URL and `--host-evidence` the GPU host's files, in every command;
    `probe metrics --url` and `probe host --evidence` still work for scripts, out of --help."""
    old = json.loads(probe("metrics", "--url", healthy_sim.url, "--json").stdout)
    new = json.loads(probe("metrics", "--target", healthy_sim.url, "--json").stdout)
    assert old["num_gpu_blocks"] == new["num_gpu_blocks"] and old["block_size"] == new["block_size"]
    assert "--target" in probe("metrics", "--help").stdout
    assert "--url" not in probe("metrics", "--help").stdout
    host_help = probe("host", "--help").stdout
    assert "--host-evidence" in host_help and "--evidence" not in host_help.replace(
        "--host-evidence", ""
    )
    (tmp_path / "lscpu.txt").write_text(
        "Core(s) per socket: 8\nSocket(s): 2\nThread(s) per core: 2\n"
    )
    by_old = json.loads(probe("host", "--evidence", str(tmp_path), "--json").stdout)
    by_new = json.loads(probe("host", "--host-evidence", str(tmp_path), "--json").stdout)
    assert by_old["physical_cores"] == by_new["physical_cores"] == 16
