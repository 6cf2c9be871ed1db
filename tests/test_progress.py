"""Every round reports its progress (n/N, elapsed, time left) through ProbeContext.on_progress,
which the CLI draws: the load round and LoadGen (from LoadGen's own thread) alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import SimProcess
from wizard.probes.http import measure_probe, validate
from wizard.probes.runner import ProbeContext
from wizard.ui import aio


def test_a_round_reports_n_of_n_and_the_time_left(healthy_sim: SimProcess) -> None:
    seen: list[dict[str, Any]] = []
    ctx = ProbeContext(target=healthy_sim.url, on_progress=seen.append)
    params = {"concurrency": 2, "requests": 6, "warmup": 0, "input_tokens": 16, "max_tokens": 8}
    aio.run(measure_probe.probe(ctx, params))
    assert [p["done"] for p in seen] == list(range(1, 9))  # 2 cold (one per stream) + 6 steady
    assert {p["total"] for p in seen} == {8}
    assert seen[-1]["eta_s"] == 0.0 and seen[-1]["elapsed_s"] > 0
    assert all(p["eta_s"] is not None and p["eta_s"] >= 0 for p in seen)


def test_loadgen_reports_its_queries(healthy_sim: SimProcess) -> None:
    pytest.importorskip("mlperf_loadgen")
    seen: list[dict[str, Any]] = []
    ctx = ProbeContext(target=healthy_sim.url, on_progress=seen.append)
    params = {"scenario": "SingleStream", "min_duration_s": 0.2, "min_queries": 8,
              "input_tokens": 16, "max_tokens": 4}  # fmt: skip
    facts = aio.run(validate.probe(ctx, params))
    assert len(seen) == facts["queries"] >= 8
    assert [p["done"] for p in seen] == list(range(1, len(seen) + 1))
    assert all(p["total"] >= p["done"] for p in seen)
    # Left at the end: at most what remains of LoadGen's minimum duration by our clock.
    assert 0.0 <= seen[-1]["eta_s"] <= params["min_duration_s"]
