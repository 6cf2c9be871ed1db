"""MLPerf LoadGen validation against the simulator (the real LoadGen, the real HTTP path)."""

from __future__ import annotations

import itertools
import json
import statistics
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.probes.stream import RequestSpec
from wizard.probes.validate import (
    ValidationResult,
    ValidationSpec,
    find_peak_qps,
    read_detail,
    run_validation,
)

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
REQUEST = RequestSpec(model=MODEL, input_tokens=8, max_tokens=4)


def test_single_stream_is_valid_with_early_stopping(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    spec = ValidationSpec(scenario="SingleStream", min_duration_s=1.0, min_queries=64)
    result = run_validation(healthy_sim.url, REQUEST, spec, tmp_path)
    report = result.to_dict()
    assert report["result"] == "VALID", report["reasons"]
    assert report["loadgen"]["query_count"] >= 64
    assert report["loadgen"]["early_stopping_p90_ms"] > 0
    assert report["client"]["succeeded"] == len(result.samples) >= 64
    assert (tmp_path / "mlperf_log_summary.txt").exists()


def test_server_schedule_is_identical_for_the_same_seed(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    spec = ValidationSpec(scenario="Server", target_qps=20, min_duration_s=1.5, min_queries=30,
                          ttft_ms=2000, tpot_ms=200)  # fmt: skip
    runs = [run_validation(healthy_sim.url, REQUEST, spec, tmp_path / str(i)) for i in range(2)]
    gaps = []
    for run in runs:
        sends = sorted(s.send_ns for s in run.samples)
        gaps.append([(b - a) / 1e6 for a, b in itertools.pairwise(sends)])
    count = min(len(g) for g in gaps)
    assert count >= 25
    differences = [abs(a - b) for a, b in zip(gaps[0][:count], gaps[1][:count], strict=True)]
    assert statistics.median(differences) < 2.0  # same arrivals, to scheduling noise
    # Realised arrivals look Poisson: coefficient of variation of the gaps near 1.
    cv = statistics.pstdev(gaps[0]) / statistics.mean(gaps[0])
    assert 0.6 < cv < 1.6
    report = runs[0].to_dict()
    assert report["result"] == "INVALID"  # far fewer than the 459 queries early stopping needs
    assert any("Would need to run at least" in reason for reason in report["reasons"])
    assert report["loadgen"]["ttft_p99_ms"] is not None


def test_offline_is_throughput_only(healthy_sim: SimProcess, tmp_path: Path) -> None:
    spec = ValidationSpec(scenario="Offline", target_qps=40, min_duration_s=0.5, min_queries=16)
    report = run_validation(healthy_sim.url, REQUEST, spec, tmp_path).to_dict()
    assert report["latency_evidence"] is False
    assert "not evidence of online latency" in report["note"]
    assert report["loadgen"]["latency_p99_ms"] is None
    assert report["loadgen"]["completed_samples_per_s"] > 0


def test_read_detail_tolerates_garbage(tmp_path: Path) -> None:
    path = tmp_path / "mlperf_log_detail.txt"
    path.write_text(
        ':::MLLOG {"key": "result_validity", "value": "VALID"}\n'
        ":::MLLOG {not json\n"
        "random text\n"
        ':::MLLOG {"key": "result_query_count", "value": 64}\n'
        ':::MLLOG {"key": "result_query_count", "val'  # truncated last line
    )
    assert read_detail(path) == {"result_validity": "VALID", "result_query_count": 64}


def test_find_peak_bisects_within_the_run_budget() -> None:
    tried: list[float] = []

    def run(qps: float) -> ValidationResult:
        tried.append(qps)
        spec = ValidationSpec(scenario="Server", target_qps=qps)
        return ValidationResult(spec, {"result_validity": "VALID" if qps <= 7 else "INVALID"})

    peak, results = find_peak_qps(run, 1, 16, max_runs=6)
    assert tried[0] == 16 and len(results) == len(tried) <= 6
    assert peak is not None and 5 <= peak <= 7


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenario", "Server", "--preset", "gpt-9"], "unknown preset 'gpt-9'"),
        (
            ["--scenario", "SingleStream", "--find-peak"],
            "--find-peak applies to the Server scenario",
        ),
        (["--scenario", "Server", "--qps", "0"], "--qps and --min-duration must be positive"),
    ],
)
def test_validate_cli_usage_errors(args: list[str], message: str) -> None:
    result = subprocess.run(
        wizard_command("probe", "validate", "--target", "http://127.0.0.1:9", *args),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2 and message in result.stderr


def test_validate_cli_with_preset(healthy_sim: SimProcess, tmp_path: Path) -> None:
    result = subprocess.run(
        wizard_command("probe", "validate", "--target", healthy_sim.url, "--scenario", "Server",
                       "--preset", "llama3_1-8b-interactive", "--qps", "10", "--min-duration", "1",
                       "--min-queries", "10", "--max-tokens", "4", "--outdir", str(tmp_path), "--json"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    report = json.loads(result.stdout)
    run = report["runs"][0]
    assert run["spec"]["ttft_ms"] == 500 and run["spec"]["tpot_ms"] == 30
    assert result.returncode == (0 if run["result"] == "VALID" else 1)
