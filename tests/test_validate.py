"""MLPerf LoadGen validation against the simulator (the real LoadGen, the real HTTP path)."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from tests.conftest import SimProcess, wizard_command
from tests.faultserver import fault_server
from wizard import playbook
from wizard.probes.http import validate
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec
from wizard.probes.http.validate import (
    ValidationResult,
    ValidationSpec,
    find_peak_qps,
    read_detail,
    run_validation,
    verdict,
)
from wizard.probes.runner import ProbeContext
from wizard.ui.render_events import render_event

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
REQUEST = RequestSpec(model=MODEL, input_tokens=8, max_tokens=4)
PLAYBOOK = Path(__file__).resolve().parent.parent / "wizard" / "playbook" / "vllm-latency.yaml"


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
    # Same arrivals, to scheduling noise: judged against the gaps' own scale, not in milliseconds
    # (2 ms failed at load 8). Two independent Poisson schedules differ by ~0.7 of the mean gap
    # at the median (|X - Y| of two exponentials is exponential), the same seed by far less.
    assert statistics.median(differences) < 0.2 * statistics.mean(gaps[0])
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
    # No latency of an Offline run is quoted anywhere, LoadGen's or the client's.
    assert all(report["loadgen"][k] is None for k in report["loadgen"] if k.endswith("_ms"))
    assert report["client"]["ttft_ms"] is None and report["client"]["tpot_ms"] is None
    assert report["failed"] == 0 and report["succeeded"] == report["queries"] > 0
    assert report["loadgen"]["completed_samples_per_s"] > 0
    # The note is one sentence in every language: the view says it in the reader's.
    from rich.console import Console

    from wizard.ui.render import validation_view

    for lang, words in (("en", report["note"]), ("zh", "只衡量吞吐")):
        console = Console(width=400, record=True)
        console.print(validation_view({"target": healthy_sim.url, "outdir": str(tmp_path),
                                       "runs": [report]}, lang))  # fmt: skip
        assert words in console.export_text(), lang


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
        detail = {"result_validity": "VALID" if qps <= 7 else "INVALID"}
        return ValidationResult(spec, detail, [StreamSample(send_ns=0)])  # one successful query

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


# --- failed queries: LoadGen judges timing only, so the verdict also counts what failed ----------


def validate_cli(target: str, outdir: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        wizard_command("probe", "validate", "--target", target, "--scenario", "SingleStream",
                       "--max-tokens", "4", "--input-tokens", "8", "--min-queries", "64",
                       "--outdir", str(outdir), *args),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_every_query_404_is_error_not_valid(healthy_sim: SimProcess, tmp_path: Path) -> None:
    process = validate_cli(healthy_sim.url, tmp_path / "json", "--model", "no-such-model",
                           "--min-duration", "1", "--json")  # fmt: skip
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, err  # ERROR: nothing could be measured
    run = json.loads(out)["runs"][0]
    assert run["result"] == "ERROR" and run["scenario"] == "SingleStream"
    assert run["queries"] >= 64 and run["succeeded"] == 0 and run["failed"] == run["queries"]
    # The first queries all failed: the rest were completed unsent (nothing more to learn).
    given_up = validate.GIVE_UP_AFTER_FAILURES
    assert run["errors"] == {"http_404": given_up, "not_sent": run["queries"] - given_up}
    assert run["first_error"]["status"] == 404 and run["first_error"]["kind"] == "http_404"
    assert "`no-such-model` does not exist" in run["first_error"]["message"]
    assert run["reasons"][0].startswith(f"{run['queries']} of {run['queries']} queries failed")
    assert "HTTP 404: The model `no-such-model` does not exist." in run["reasons"][0]
    assert run["latency_evidence"] is False and run["loadgen"]["latency_p90_ms"] is None
    # The human output says the same, never VALID.
    process = validate_cli(healthy_sim.url, tmp_path / "human", "--model", "no-such-model",
                           "--min-duration", "1")  # fmt: skip
    out, err = process.communicate(timeout=120)
    assert process.returncode == 3, err
    out = " ".join(out.split())  # rich wraps at the terminal width
    assert "SingleStream: ERROR (0 of" in out and "VALID" not in out
    assert "queries failed (http_404:" in out and "not latency evidence" in out
    assert re.search(r"latency_p90_ms\s*│\s*-\s*│", out)  # the 404s' times are not shown


def test_a_server_that_fails_every_query_slowly_is_given_up(tmp_path: Path) -> None:
    """A server that trickles its answer out fails each query only at the read deadline; LoadGen
    waits for all 64, so the run once took 64 deadlines (a walk's LoadGen step against it had not
    ended after 200 s). Once the first queries all failed, the rest are completed unsent."""
    with fault_server() as url:
        process = validate_cli(f"{url}/trickle", tmp_path, "--model", "m", "--timeout", "0.5",
                               "--min-duration", "1", "--json")  # fmt: skip
        out, err = process.communicate(timeout=300)
    assert process.returncode == 3, err  # ERROR: nothing could be measured
    run = json.loads(out)["runs"][0]
    assert run["result"] == "ERROR" and run["succeeded"] == 0
    sent = run["queries"] - run["errors"]["not_sent"]
    assert sent == validate.GIVE_UP_AFTER_FAILURES and run["errors"]["not_sent"] > 0
    assert run["first_error"]["kind"] != "not_sent"  # the reason is the server's, first


def test_a_server_that_goes_away_mid_run_is_invalid(sim_factory: Any, tmp_path: Path) -> None:
    # Some queries succeed and the rest fail, honestly: the server process stops part-way through
    # the run (the run is long enough to go on after it).
    sim = sim_factory()
    process = validate_cli(sim.url, tmp_path, "--min-duration", "4", "--json")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        served = re.search(r'vllm:request_success_total\{[^}]*finished_reason="length"[^}]*\} (\S+)',
                           sim.metrics())  # fmt: skip
        if served and float(served.group(1)) >= 5:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the simulator served no requests")
    sim.process.terminate()
    out, err = process.communicate(timeout=120)
    assert process.returncode == 1, err  # INVALID: a cause remains
    run = json.loads(out)["runs"][0]
    assert run["result"] == "INVALID", run
    assert run["succeeded"] >= 5 and 0 < run["failed"] < run["queries"]
    assert run["succeeded"] + run["failed"] == run["queries"]
    assert set(run["errors"]) <= {"connection_refused", "connection_reset", "truncated"}
    assert sum(run["errors"].values()) == run["failed"]
    assert run["first_error"]["kind"] in run["errors"] and run["first_error"]["status"] is None
    assert run["reasons"][0].startswith(f"{run['failed']} of {run['queries']} queries failed")
    assert "first error: " + run["first_error"]["kind"] in run["reasons"][0]
    assert run["latency_evidence"] is False and "failed queries" in run["note"]


def test_walk_probe_reports_the_failures(sim_factory: Any) -> None:
    # The playbook's own parameters (validation.loadgen) against a server whose context is shorter
    # than the prompt: vLLM answers every query 400.
    sim = sim_factory("--max-model-len", "32")
    book = playbook.load(PLAYBOOK)
    (call,) = [p for p in book.nodes["validation.loadgen"].probes if p.name == "validate"]
    ctx = ProbeContext(target=sim.url, model=MODEL)
    facts = asyncio.run(validate.probe(ctx, dict(call.params)))
    assert facts["scenario"] == "SingleStream" and facts["result"] == "ERROR"
    assert facts["succeeded"] == 0 and facts["failed"] == facts["queries"] >= 64
    assert (
        facts["first_error"]["status"] == 400
        and "maximum context length" in facts["first_error"]["message"]
    )
    assert facts["reasons"][0].startswith(f"{facts['failed']} of {facts['queries']} queries failed")
    line = render_event({"type": "probe_result", "data": {"probe": "validate", "as": "loadgen",
                                                          "round": "loadgen", "error": None, "facts": facts}})  # fmt: skip
    assert isinstance(line, Text)
    assert line.plain.startswith("  LoadGen SingleStream: ERROR (") and "VALID" not in line.plain
    assert "queries failed (http_400:" in line.plain


@pytest.mark.parametrize(
    ("counts", "loadgen", "result", "first_reason"),
    [
        ((64, 0, {}), ("VALID", []), "VALID", None),
        ((64, 0, {}), ("INVALID", ["minimum query count not met"]), "INVALID", "minimum query count not met"),
        ((64, 0, {}), (None, []), "INVALID", "LoadGen said nothing without a reason"),
        ((70, 6, {"http_503": 6}), ("VALID", []), "INVALID", "6 of 70 queries failed (http_503: 6); first error: HTTP 503: busy"),
        ((70, 70, {"http_503": 70}), ("VALID", []), "ERROR", "70 of 70 queries failed (http_503: 70), nothing succeeded"),
        ((0, 0, {}), ("VALID", []), "ERROR", "no query was issued"),
    ],
)  # fmt: skip
def test_verdict_from_counts(
    counts: tuple[int, int, dict[str, int]], loadgen: tuple[str | None, list[str]], result: str,
    first_reason: str | None,
) -> None:  # fmt: skip
    queries, failed, errors = counts
    first = {"kind": "http_503", "status": 503, "message": "HTTP 503: busy"} if failed else None
    got, reasons = verdict(queries, failed, errors, first, *loadgen)
    assert got == result
    if first_reason is None:
        assert reasons == []
    else:
        assert reasons[0].startswith(first_reason)


def test_loadgen_reasons_follow_ours() -> None:
    first = {"kind": "read_timeout", "status": None, "message": "no byte for 60 s"}
    result, reasons = verdict(
        10, 2, {"read_timeout": 2}, first, "INVALID", ["minimum duration not met"]
    )
    assert result == "INVALID"
    assert reasons == ["2 of 10 queries failed (read_timeout: 2); first error: read_timeout: no byte for 60 s",
                       "minimum duration not met"]  # fmt: skip


def test_loadgen_line_of_an_older_transcript() -> None:
    # Facts recorded before failures were counted: the line still says what the counts say.
    old = {"scenario": "SingleStream", "result": "VALID", "reasons": [],
           "client": {"requests": 510, "succeeded": 0}}  # fmt: skip
    line = render_event({"type": "probe_result", "data": {"probe": "validate", "as": "loadgen",
                                                          "error": None, "facts": old}})  # fmt: skip
    assert isinstance(line, Text)
    assert (
        line.plain
        == "  LoadGen SingleStream: ERROR (510 of 510 queries failed (recorded as LoadGen's VALID))"
    )


def test_the_walk_probe_shapes_its_queries_with_the_rounds_settings_it_has() -> None:
    """The walk's LoadGen probe builds its request from its own settings, which carry no
    measure-only key (a missing `vary_part` failed every LoadGen of every walk)."""
    from wizard.probes.http.measure_probe import request_spec
    from wizard.probes.runner import ProbeContext

    settings = {"endpoint": "completions", "input_tokens": 64, "max_tokens": 64,
                "shared_prefix_tokens": 0}  # fmt: skip
    request = request_spec(ProbeContext(target="http://127.0.0.1:9"), settings, "m")
    assert request.distinct and request.varying is None and request.input_tokens == 64
