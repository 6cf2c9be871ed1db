"""``latency-wizard triage`` against real simulators under traffic the test itself sends.

Each scenario's server is loaded by a closed loop in a thread while triage (a real subprocess)
reads it; the loop counts every completion it sent, and the server's own request counter
(``http_requests_total`` of the completion routes) must have grown by exactly that: triage sent
none.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, wizard_command
from tests.text_checks import english_sentences, raw_values
from tests.traffic import Traffic, completions_served, triage, triage_under


def by_check(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["check"]: c for c in report["checks"]}


def test_kv_pressure_is_named_with_its_preemptions(
    sim_factory: Callable[..., SimProcess],
) -> None:
    sim = sim_factory("--scenario", "kv-pressure")
    code, report = triage_under(sim.url, 8, 100, 200, "--vllm-log", str(sim.log_file))
    assert code == 3
    assert report["class"] == "kv_cache_preemption"
    assert report["signal"]["numbers"]["preemptions"] > 0
    assert report["next_step"]["argv"][:2] == ["latency-wizard", "run"]
    assert "--concurrency" in report["next_step"]["argv"]
    assert report["risk"]["level"] == "high"
    assert {"server_unreachable", "engine_died"} <= set(report["ruled_out"])
    # No config given: nginx buffering is not judged, never "ruled out".
    assert by_check(report)["proxy_buffering"]["result"] == "unknown"
    assert "proxy_buffering" not in report["ruled_out"]


def test_queue_saturation_is_named_slot_bound(sim_factory: Callable[..., SimProcess]) -> None:
    sim = sim_factory("--scenario", "queue-saturation")
    code, report = triage_under(sim.url, 10, 20, 64, "--vllm-log", str(sim.log_file))
    assert code == 3
    assert report["class"] == "queue_saturation"
    numbers = report["signal"]["numbers"]
    assert numbers["max_num_seqs"] == 4 and numbers["bound"] == "slots"
    assert numbers["seen"] >= 2
    # No preemption: KV pressure is ruled out, with its reason.
    assert "kv_cache_preemption" in report["ruled_out"]
    assert report["risk"]["level"] == "high"


def test_a_healthy_server_under_load_gets_no_class(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    sim = sim_factory()
    code, report = triage_under(sim.url, 2, 20, 32, "--vllm-log", str(sim.log_file))
    assert code == 0
    assert report["class"] == "none"
    assert report["signal"]["check"] == "healthy"
    assert report["signal"]["numbers"]["requests"] > 0
    assert {"kv_cache_preemption", "queue_saturation", "api_server_cpu_saturated"} <= set(
        report["ruled_out"]
    )
    assert report["risk"]["level"] == "medium"  # live traffic shares the engine


def test_an_idle_server_rules_nothing_out_from_its_deltas(
    sim_factory: Callable[..., SimProcess],
) -> None:
    sim = sim_factory()
    before = completions_served(sim.url)
    code, report = triage("--target", sim.url, "--interval", "0.5")
    assert completions_served(sim.url) == before
    assert code == 0 and report["class"] == "none"
    assert report["signal"]["check"] == "no_traffic"
    checks = by_check(report)
    for name in ("kv_cache_preemption", "queue_saturation", "api_server_cpu_saturated"):
        assert checks[name]["result"] == "unknown" and checks[name]["numbers"]["why"] == "idle"
    assert report["ruled_out"] == ["server_unreachable"]
    assert report["risk"]["level"] == "low"


def text_triage(url: str, lang: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        wizard_command("triage", "--target", url, "--interval", "1", "--format", "text",
                       "--lang", lang),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_text_and_chinese_say_the_same_verdict(sim_factory: Callable[..., SimProcess]) -> None:
    sim = sim_factory("--scenario", "queue-saturation")
    with Traffic([sim.url], 8, 20, 64) as traffic:
        while traffic.sent < 16:
            time.sleep(0.1)
        outputs = {lang: text_triage(sim.url, lang) for lang in ("en", "zh")}
    for result in outputs.values():
        assert result.returncode == 3, result.stderr
    english, chinese = outputs["en"].stdout, outputs["zh"].stdout
    assert "queue saturation (queue_saturation)" in english
    assert "Production risk of that step:" in english
    assert "latency-wizard run --target " + sim.url in english
    assert "排队饱和（queue_saturation）" in chinese
    assert english_sentences(chinese) == []
    assert raw_values(chinese) == []


def test_an_unreachable_server_is_named_and_its_log_is_the_next_step(tmp_path: Path) -> None:
    from wizard.levers.nginx_runner import free_port

    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-06 10:00:00 [core.py:1] EngineCore encountered a fatal error.\n")
    code, report = triage("--target", f"http://127.0.0.1:{free_port()}", "--vllm-log", str(log))
    assert code == 3
    assert report["class"] == "server_unreachable"
    assert report["next_step"]["argv"] == ["latency-wizard", "probe", "vllm-log", str(log)]
    assert report["risk"]["level"] == "none"


def test_files_that_are_no_evidence_are_said_so(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    sim = sim_factory()
    empty, binary, folder = tmp_path / "empty.log", tmp_path / "binary.log", tmp_path / "logs"
    empty.write_text("")
    binary.write_bytes(b"garbage\x00\xff\nmore\n")
    folder.mkdir()
    for log in (empty, binary):
        code, report = triage("--target", sim.url, "--interval", "0.3", "--vllm-log", str(log))
        assert by_check(report)["engine_died"]["numbers"]["why"] == "log_unrecognised"
        assert "engine_died" not in report["ruled_out"]
        assert report["evidence"]["log"]["recognised"] is False
    bad = tmp_path / "nginx.conf"
    bad.write_text("server { location / { proxy_pass http://x ")
    for args, code in ((("--vllm-log", str(folder)), 2), (("--nginx-conf", str(bad)), 1)):
        result = subprocess.run(wizard_command("triage", "--target", sim.url, *args),
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert result.returncode == code, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
        assert result.stdout == ""


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--target", "ftp://x"), "is not an http(s) URL"),
        (
            ("--target", "http://127.0.0.1:9", "--scrapes", "1"),
            "--scrapes must be between 2 and 20",
        ),
        (("--target", "http://127.0.0.1:9", "--vllm-log", "/no/such/file"), "/no/such/file"),
        (("--target", "http://127.0.0.1:9", "--prometheus", "x"), "--prometheus must be an http"),
    ],
)
def test_bad_input_is_one_line(args: tuple[str, ...], says: str) -> None:
    result = subprocess.run(wizard_command("triage", *args), capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
