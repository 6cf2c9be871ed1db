"""What changed when: a real Prometheus (1 s scrapes) watches two simulators under the test's
own traffic; one is restarted mid-window on the same port with a worse configuration
(``--max-num-seqs 1`` against four streams: its requests now queue). ``triage --prometheus``
must place the TTFT onset at the first step after the restart and line it up with that restart
and the setting it changed; the change-point itself is tested on plain series too."""

from __future__ import annotations

import json
import math
import random
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, start_sim, wizard_command
from tests.prometheus_server import (
    SCRAPE_INTERVAL_S,
    Prometheus,
    require_prometheus,
    start_prometheus,
)
from tests.text_checks import english_sentences, raw_values
from tests.traffic import Traffic
from wizard.levers.nginx_runner import free_port
from wizard.measure.changepoint import best_split

STREAMS = 4
PHASE_S = 10.0


def test_a_step_is_split_where_it_happened() -> None:
    values = [math.log(40 + i % 3) for i in range(20)] + [math.log(900 + i % 5) for i in range(12)]
    split = best_split(values)
    assert split is not None
    assert split.index == 20
    assert split.after > split.before


def test_a_flat_noisy_series_is_not_split() -> None:
    noise = random.Random(7)
    assert best_split([math.log(40) + noise.gauss(0, 0.2) for _ in range(200)]) is None
    assert best_split([3.0] * 50) is None
    assert best_split([1.0, 9.0, 1.0]) is None  # too short to have two segments


@dataclass
class Restarted:
    prometheus: Prometheus
    steady: SimProcess
    restarted: SimProcess
    stopped_at: float  # unix time the first process was told to stop
    log: Path


@pytest.fixture(scope="module")
def restarted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Restarted]:
    require_prometheus()
    workdir = tmp_path_factory.mktemp("history")
    port = free_port()
    log = workdir / "changing.log"
    sims: list[SimProcess] = []
    prometheus = None
    try:
        sims.append(start_sim(workdir))
        sims.append(start_sim(workdir, "--port", str(port), "--log-file", str(log)))
        prometheus = start_prometheus(
            workdir / "prometheus", {"vllm": [s.url.split("://")[1] for s in sims]}
        )
        prometheus.wait_scraped({s.url.split("://")[1] for s in sims})
        urls = [s.url for s in sims]
        with Traffic(urls, STREAMS, 20, 16, retry=True):
            time.sleep(PHASE_S)
            stopped_at = time.time()
            sims[1].stop()
            sims[1] = start_sim(workdir, "--port", str(port), "--log-file", str(log),
                                "--max-num-seqs", "1")  # fmt: skip
            time.sleep(PHASE_S)
        time.sleep(2.5)  # two more scrapes: the last requests' counters are in Prometheus
        yield Restarted(prometheus, sims[0], sims[1], stopped_at, log)
    finally:
        if prometheus is not None:
            prometheus.stop()
        for sim in sims:
            sim.stop()


def history_of(restarted: Restarted, *args: str) -> dict[str, Any]:
    result = subprocess.run(
        wizard_command("triage", "--target", restarted.restarted.url, "--prometheus",
                       restarted.prometheus.url, "--window", "1m", "--interval", "1", *args),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode in (0, 3), result.stderr
    return json.loads(result.stdout) if "--json" in args else {"text": result.stdout}


def test_the_onset_follows_the_restart_and_names_what_changed(restarted: Restarted) -> None:
    report = history_of(restarted, "--vllm-log", str(restarted.log), "--json")
    history = report["history"]
    instance = restarted.restarted.url.split("://")[1]
    assert history["available"] and history["step_s"] == SCRAPE_INTERVAL_S
    restarts = [e for e in history["events"] if e["kind"] == "restart"]
    assert [e["instance"] for e in restarts] == [instance]
    restart = restarts[0]
    # The new process's own start: prometheus_client adds its start ticks to the boot time,
    # which /proc/stat gives in whole seconds, so it may read up to a second early.
    assert restart["at"] >= restarted.stopped_at - 1
    ttft = [c for c in history["changes"] if c["instance"] == instance and c["signal"] == "ttft"]
    assert len(ttft) == 1, history["changes"]
    change = ttft[0]
    assert change["direction"] == "rose" and change["after"] > change["before"]
    # Within one scrape of the restart as Prometheus saw it (the new process's first scrape;
    # its start-up came before): the new level begins at that scrape or the next one (the first
    # requests after a restart meet a queue still filling), never before it.
    assert restart["at"] < restart["back_at"]
    assert restart["back_at"] <= change["at"] <= restart["back_at"] + SCRAPE_INTERVAL_S
    assert change["event"]["kind"] == "restart" and change["event"]["instance"] == instance
    assert change["event"]["changed"]["max_num_seqs"]["after"] == 1
    # The first start ran on vLLM's default (its log prints no max_num_seqs), the second was
    # given 1.
    assert change["event"]["changed"]["max_num_seqs"]["before_is_default"] is True
    assert change["p50_before"] is not None and change["p50_after"] is not None
    assert change["p50_after"]["low_ms"] >= change["p50_before"]["high_ms"]
    steady = restarted.steady.url.split("://")[1]
    assert not [e for e in history["events"] if e["instance"] == steady]


def test_cache_config_changes_and_replicas_are_events() -> None:
    """What Prometheus answers for a replica restarted with another KV cache, and one that went
    away: the restart takes the new label set's changed labels; the vanished one is named."""
    from wizard.probes.fleet.history import Window, _events
    from wizard.probes.fleet.prometheus_api import Series

    a, b = {"job": "vllm", "instance": "a:1"}, {"job": "vllm", "instance": "b:1"}
    old = {**a, "__name__": "vllm:cache_config_info", "engine": "0", "num_gpu_blocks": "28822",
           "gpu_memory_utilization": "0.92"}  # fmt: skip
    new = {**old, "num_gpu_blocks": "1800", "gpu_memory_utilization": "0.73"}
    results = {
        "start_time": [Series(a, [(100.0, 50.0), (101.0, 50.0), (105.0, 103.2), (106.0, 103.2)])],
        "up": [Series(a, [(t, 1.0) for t in range(100, 120)]),
               Series(b, [(t, 1.0) for t in range(100, 110)])],
        "config": [Series(old, [(100.0, 1.0), (101.0, 1.0)]),
                   Series(new, [(105.0, 1.0), (106.0, 1.0)])],
    }  # fmt: skip
    events = _events(results, Window(90.0, 120.0, 1.0))
    kinds = [(e["kind"], e["instance"]) for e in events]
    assert kinds == [("restart", "a:1"), ("config_change", "a:1"), ("vanished", "b:1")]
    restart = events[0]
    assert restart["at"] == 103.2 and restart["back_at"] == 105.0
    assert restart["changed"] == {
        "gpu_memory_utilization": {"before": "0.92", "after": "0.73"},
        "num_gpu_blocks": {"before": "28822", "after": "1800"},
    }


def test_the_chinese_text_has_no_english_and_no_raw_values(restarted: Restarted) -> None:
    text = history_of(restarted, "--vllm-log", str(restarted.log), "--format", "text", "--lang",
                      "zh")["text"]  # fmt: skip
    assert "以 max_num_seqs 1（原为 vLLM 的默认值）重启" in text
    assert english_sentences(text) == []
    assert raw_values(text) == []


def test_the_text_says_when_and_after_what(restarted: Restarted) -> None:
    text = history_of(restarted, "--vllm-log", str(restarted.log), "--format", "text")["text"]
    instance = restarted.restarted.url.split("://")[1]
    line = next(x for x in text.splitlines() if f"{instance}: TTFT mean rose from" in x)
    assert "(p50 between" in line
    assert f"after {instance} restarted with max_num_seqs 1 (was vLLM's default)" in line
