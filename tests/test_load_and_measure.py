"""Closed-loop load, the client self-check, measurement specs and noise-aware comparisons."""

from __future__ import annotations

import asyncio
import json
import math
import random
import statistics
import subprocess
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.measure import (
    ITL_PER_REQUEST,
    NEAR_ZERO,
    PRACTICAL_THRESHOLD,
    TOO_WIDE,
    IncomparableError,
    Measurement,
    MeasurementSpec,
    compare,
    compare_rounds,
    compare_values,
    noise_band,
    noise_bands,
    percentile,
)
from wizard.probes.http.load import ClientHealth, LoadResult, run_load
from wizard.probes.http.measure_probe import budget_estimate
from wizard.probes.http.stream import RequestSpec

SimFactory = Callable[..., SimProcess]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def spec_for(url: str, **changes: object) -> MeasurementSpec:
    base = {"model": MODEL, "endpoint": "completions", "input_tokens": 16, "output_tokens": 24,
            "concurrency": 2, "access_path": url}  # fmt: skip
    return MeasurementSpec(**{**base, **changes})  # type: ignore[arg-type]


def load(url: str, **kwargs: object) -> LoadResult:
    request = RequestSpec(model=MODEL, input_tokens=16, max_tokens=24)
    return asyncio.run(run_load(url, request, **kwargs))  # type: ignore[arg-type]


def test_percentile_interpolates() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 99) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(map(float, range(101))), 90) == 90.0


def test_a_band_wider_than_the_whole_drop_still_sees_a_fivefold_drop() -> None:
    """A starved machine's A/A moved TTFT by ~150 %: a fix taking TTFT from 141 to 25 ms (5.7x)
    is beyond that band downwards too (on the relative scale a drop stops at -100 %, and such a
    band called it "within noise"), while a 1.5x drop is no answer: a band beyond ±100 % bounds
    nothing, so it is "inconclusive", never "within noise", and the band itself is not given."""
    rng = random.Random(3)
    before = [141 * rng.lognormvariate(0, 0.05) for _ in range(32)]
    fixed = [25 * rng.lognormvariate(0, 0.05) for _ in range(32)]
    modest = [94 * rng.lognormvariate(0, 0.05) for _ in range(32)]
    assert compare_values("ttft_ms", before, fixed, noise=1.47).verdict == "improved"
    unsure = compare_values("ttft_ms", before, modest, noise=1.47)
    assert (unsure.verdict, unsure.noise_band, unsure.reason) == ("inconclusive", None, TOO_WIDE)
    worse = [141 * 5.7 * rng.lognormvariate(0, 0.05) for _ in range(32)]
    assert compare_values("ttft_ms", before, worse, noise=1.47).verdict == "regressed"


def test_fingerprint_is_stable_and_sensitive() -> None:
    a = spec_for("http://x")
    assert a.fingerprint() == spec_for("http://x").fingerprint()
    for change in ({"concurrency": 4}, {"access_path": "http://proxy"}, {"warm_state": "cold"},
                   {"output_tokens": 25}, {"scenario": "Server"}):  # fmt: skip
        assert spec_for("http://x", **change).fingerprint() != a.fingerprint(), change


def test_compare_values_verdicts() -> None:
    rng = random.Random(1)
    base = [100 + rng.gauss(0, 3) for _ in range(24)]
    faster = [60 + rng.gauss(0, 3) for _ in range(24)]
    slower = [130 + rng.gauss(0, 3) for _ in range(24)]
    same = [100 + rng.gauss(0, 3) for _ in range(24)]
    assert compare_values("ttft_ms", base, faster).verdict == "improved"
    assert compare_values("ttft_ms", base, slower).verdict == "regressed"
    assert compare_values("ttft_ms", base, same).verdict == "within noise"
    tiny = [v + 2 for v in base]  # consistent but below the 5 % practical threshold
    assert compare_values("ttft_ms", base, tiny).verdict == "within noise"
    assert compare_values("ttft_ms", [1.0, 2.0], [3.0, 4.0]).verdict == "inconclusive"
    result = compare_values("ttft_ms", base, faster)
    assert result.ci_low_ms is not None and result.ci_high_ms is not None
    assert result.ci_low_ms <= result.change_ms <= result.ci_high_ms  # type: ignore[operator]


def test_compare_refuses_different_fingerprints() -> None:
    before = Measurement(spec_for("http://direct"), {"ttft_ms": [1.0, 2.0, 3.0]})
    after = Measurement(spec_for("http://proxy"), {"ttft_ms": [1.0, 2.0, 3.0]})
    with pytest.raises(IncomparableError, match="access_path differ"):
        compare(before, after)


def test_load_separates_cold_from_steady(sim_factory: SimFactory) -> None:
    sim = sim_factory("--scenario", "cold-start-heavy")
    result = load(sim.url, concurrency=1, requests=3, warmup=2)
    assert len(result.warmup) == 2 and len(result.samples) == 3
    cold_tpot = [s.tpot_ms for s in result.warmup if s.tpot_ms]
    steady_tpot = [s.tpot_ms for s in result.samples if s.tpot_ms]
    assert min(cold_tpot) > max(steady_tpot)  # slow first steps only hit the warm-up requests
    report = result.to_dict()
    assert report["cold"]["summary"]["requests"] == 2
    assert report["steady"]["summary"]["requests"] == 3


def test_load_for_a_duration(healthy_sim: SimProcess) -> None:
    began = time.monotonic()
    result = load(healthy_sim.url, concurrency=4, duration_s=1.0)
    assert time.monotonic() - began >= 1.0
    assert len(result.samples) >= 4 and all(s.ok for s in result.samples)
    assert not result.health.saturated


def test_compare_real_measurements(sim_factory: SimFactory) -> None:
    healthy = sim_factory()
    pcie = sim_factory("--scenario", "tp-over-pcie")
    spec = spec_for("same-path")
    first = load(healthy.url, concurrency=2, requests=10).measurement(spec)
    second = load(healthy.url, concurrency=2, requests=10).measurement(spec)
    third = load(healthy.url, concurrency=2, requests=10).measurement(spec)
    assert len(first.values[ITL_PER_REQUEST]) == 10  # one ITL value per request (its median gap)
    slow = load(pcie.url, concurrency=2, requests=10).measurement(spec)
    # The A/A pair calibrates the band; nothing changed before the third round, so no verdict
    # may claim a change (on a busy machine an honest "inconclusive" is allowed, never improved).
    bands = noise_bands(first.values, second.values, ("ttft_ms", "tpot_ms", "itl_ms"))
    verdicts = {c.segment: c.verdict for c in compare(first, third, bands)}
    assert verdicts["tpot_ms"] in ("within noise", "inconclusive"), verdicts
    assert {c.segment: c.verdict for c in compare(first, slow, bands)}["tpot_ms"] == "regressed"


def test_the_noise_band_and_inconclusive() -> None:
    rng = random.Random(2)
    base = [100 + rng.gauss(0, 3) for _ in range(24)]
    ten_percent = [v * 1.10 for v in base]
    assert compare_values("tpot_ms", base, ten_percent).verdict == "regressed"
    # A server whose A/A pair moved by 15 % cannot show a 10 % change.
    assert compare_values("tpot_ms", base, ten_percent, noise=0.15).verdict == "within noise"
    # An interval that straddles the band's edge claims nothing either way.
    wide = [100 * (1.05 + rng.gauss(0, 0.08)) for _ in range(8)]
    result = compare_values("tpot_ms", base, wide)
    assert result.ci_low_rel is not None and result.ci_low_rel < 0.05 < result.ci_high_rel  # type: ignore[operator]
    assert result.verdict == "inconclusive"
    # A tiny but certain change (CI of [-0.5, -0.4] ms on 100 ms) is within noise, said with its band.
    tiny = [v - 0.45 for v in base]
    within = compare_values("tpot_ms", base, tiny)
    assert within.verdict == "within noise" and within.noise_band == 0.05


def test_pooled_rounds_call_nothing_changed_within_noise() -> None:
    """The walk's A/A pair is the pooled "before"; an inconclusive "after" is measured again.

    Judged one round against one (the rule before pooling), a third round drawn from the same
    distribution read "within noise" in about half of these trials: its interval, as wide as the
    A/A pair's, fits inside that pair's far end only when its centre lands nearer zero.
    """
    rng = random.Random(7)

    def round_of(scale: float = 1.0) -> dict[str, list[float]]:
        return {"ttft_ms": [scale * rng.lognormvariate(4.6, 0.15) for _ in range(16)]}

    def judged(shift: float) -> str:
        before = [round_of(), round_of()]
        band = {"ttft_ms": noise_band(before[0]["ttft_ms"], before[1]["ttft_ms"]) or 0.0}
        after = [round_of(1 + shift)]
        verdict = compare_rounds(before, after, ["ttft_ms"], band)[0].verdict
        if verdict == "inconclusive":
            after.append(round_of(1 + shift))
            verdict = compare_rounds(before, after, ["ttft_ms"], band)[0].verdict
        return verdict

    same = Counter(judged(0.0) for _ in range(60))
    assert same["within noise"] >= 0.85 * 60 and same["improved"] == same["regressed"] == 0, same
    # Pooling must not blur a real change into noise: 60 % slower is never "within noise".
    slower = Counter(judged(0.6) for _ in range(60))
    assert slower["within noise"] == 0 and slower["regressed"] >= 0.9 * 60, slower


def test_itl_is_judged_per_request_not_by_its_pooled_gaps() -> None:
    """A round's ~1,000 gaps are clustered by request: an A/A pair must not read as a change.

    Each request runs at its own pace (its batch, its neighbours) and its gaps sit close to that
    pace. Bootstrapped as independent gaps, two rounds of the same server claimed a difference
    in a third to a half of these pairs; one median per request claims one no more than chance.
    """
    rng = random.Random(11)

    def round_of() -> dict[str, list[float]]:
        paces = [rng.lognormvariate(math.log(20), 0.4) for _ in range(16)]
        gaps = [[pace * rng.uniform(0.97, 1.03) for _ in range(15)] for pace in paces]
        return {"itl_ms": [gap for request in gaps for gap in request],
                ITL_PER_REQUEST: [statistics.median(request) for request in gaps]}  # fmt: skip

    def claims(rounds: list[dict[str, list[float]]]) -> bool:
        verdict = compare_rounds(rounds[:1], rounds[1:], ["itl_ms"])[0].verdict
        return verdict in ("improved", "regressed")

    pairs = [[round_of(), round_of()] for _ in range(24)]
    per_request = sum(claims(pair) for pair in pairs)
    pooled = sum(claims([{"itl_ms": r["itl_ms"]} for r in pair]) for pair in pairs)
    assert per_request <= 2, per_request
    assert pooled >= 8, pooled  # what an older transcript's rounds (pooled gaps only) still say
    judged = compare_rounds(pairs[0][:1], pairs[0][1:], ["itl_ms"])[0]
    assert judged.judged_by == ITL_PER_REQUEST and judged.samples == (16, 16)
    # The A/A band of ITL comes from the same per-request values.
    band = noise_bands(pairs[0][0], pairs[0][1], ["itl_ms"])["itl_ms"]
    assert band == noise_band(pairs[0][0][ITL_PER_REQUEST], pairs[0][1][ITL_PER_REQUEST])


def test_the_budget_estimate_is_the_tokens_of_one_step() -> None:
    """A prompt of 12,000 tokens in steps of 2,048: a decoding stream's longest gap is one step
    (here 100 ms), the prefill all of them; one step never holds more than the prompt."""
    assert budget_estimate(12000, 100, 100 * 12000 / 2048) == 2048
    assert budget_estimate(12000, 260, 250) == 12000  # one step held it all (and some jitter)
    assert budget_estimate(12000, None, 250) is None and budget_estimate(12000, 100, 0) is None


def _load_beside(hog: Callable[[], Awaitable[None]], url: str) -> LoadResult:
    """A load with ``hog`` running in the client's loop from its first finished request on
    (after the loop's idle floor is measured, as the load's own work would be)."""

    async def run() -> LoadResult:
        loaded = asyncio.Event()

        async def hog_under_load() -> None:
            await loaded.wait()
            await hog()

        task = asyncio.create_task(hog_under_load())
        try:
            request = RequestSpec(model=MODEL, input_tokens=16, max_tokens=24)
            return await run_load(url, request, concurrency=2, requests=8,
                                  on_progress=lambda _: loaded.set())  # fmt: skip
        finally:
            task.cancel()

    return asyncio.run(run())


def test_saturated_client_is_reported_not_trusted(healthy_sim: SimProcess) -> None:
    async def burn() -> None:
        while True:  # the client's own work fills its core, as an overloaded client's would
            until = time.monotonic() + 0.03
            while time.monotonic() < until:
                pass
            await asyncio.sleep(0)

    result = _load_beside(burn, healthy_sim.url)
    client = result.to_dict()["client"]
    # Never trusted. Its own work fills a core on a quiet machine; on one whose cores other
    # processes hold it cannot get a core to fill, and by CPU alone it is told from a client
    # kept waiting by others no more (its runnable time is reported, not judged: a healthy
    # client beside a busy-polling vLLM is runnable over 90 % of the time too).
    assert result.health.saturated != result.health.contended
    if result.health.saturated:
        assert client["cause"] == "client_saturated" and "overstate" in client["reason"]
    else:
        assert client["cause"] is None and "waiting for a CPU" in client["reason"]
    # Runnable (running or waiting for a CPU) most of the round: the hog fills the loop from the
    # first finished request on, so the round's head (the first request, idle) is not; 0.897
    # there after the floor measurement moved the hog's start (it was > 0.9 before).
    assert client["runnable_fraction"] is None or client["runnable_fraction"] > 0.75


def test_a_busy_client_that_keeps_up_is_not_the_bottleneck() -> None:
    """LAT050 needs the client shown to be the bottleneck against its own floor: its loop woke
    late under load compared with how late it woke with nothing in flight. A client using 95 %
    of a core whose loop still wakes on time keeps up (it was called saturated by CPU alone)."""
    keeps_up = ClientHealth(loop_lag_p90_ms=2.0, loop_lag_p99_ms=4.0, loop_lag_max_ms=6.0,
                            cpu_fraction=0.95, loop_lag_floor_ms=1.5)  # fmt: skip
    assert not keeps_up.saturated and not keeps_up.contended
    assert keeps_up.to_dict()["cause"] is None
    behind = replace(keeps_up, loop_lag_p90_ms=30.0)
    assert behind.saturated and behind.to_dict()["cause"] == "client_saturated"
    assert "1.5 ms with nothing in flight" in behind.to_dict()["reason"]
    # The same lag on a machine whose loop is that late even idle: not the client's own work.
    late_anyway = replace(behind, loop_lag_floor_ms=28.0)
    assert not late_anyway.saturated and late_anyway.contended


def test_a_client_kept_off_the_cpu_is_contended_not_saturated(healthy_sim: SimProcess) -> None:
    """Lag at little CPU is other processes holding the cores (a vLLM engine's busy loop on the
    same machine): fewer streams would not help, so it is not client_saturated (LAT050)."""

    async def descheduled() -> None:
        while True:
            time.sleep(0.015)  # the loop is stopped without using CPU, as when descheduled
            await asyncio.sleep(0.005)

    result = _load_beside(descheduled, healthy_sim.url)
    assert result.health.contended and not result.health.saturated
    client = result.to_dict()["client"]
    assert client["cause"] is None and "share this machine's cores" in client["reason"]


def test_probe_load_cli_json(healthy_sim: SimProcess) -> None:
    result = subprocess.run(
        wizard_command("probe", "load", "--target", healthy_sim.url, "--concurrency", "4",
                       "--requests", "8", "--warmup", "1", "--max-tokens", "8", "--json"),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["steady"]["summary"]["succeeded"] == 8
    # Cold is each connection's first request, not just the first --warmup sent.
    assert report["cold"]["summary"]["requests"] == 4
    assert all(s["cold"] and s["connect_ms"] is not None for s in report["cold"]["samples"])
    assert not any(s["cold"] or s["connect_ms"] for s in report["steady"]["samples"])
    assert report["steady_reconnects"] == 0
    assert report["client"]["saturated"] in (True, False)
    assert "12/12 requests" in result.stderr  # plain progress lines when stderr is not a TTY


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--warmup", "-1"], "--warmup must be 0 or more"),
        (["--duration", "0"], "--duration must be positive"),
    ],
)
def test_probe_load_usage_errors(args: list[str], message: str) -> None:
    result = subprocess.run(
        wizard_command("probe", "load", "--target", "http://127.0.0.1:9", *args),
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2 and message in result.stderr


def test_a_round_keeps_the_engines_own_mean_gap(sim_factory: SimFactory) -> None:
    """The burst guard's scale (the stream's pace by the engine, not by a client that may be
    starved) is a fact of the round; with the server's stats off there is none to keep."""
    from wizard.probes.http import measure_probe
    from wizard.probes.runner import ProbeContext
    from wizard.ui import aio

    params = {"concurrency": 2, "requests": 4, "warmup": 0, "input_tokens": 16, "max_tokens": 8}
    with_stats = aio.run(measure_probe.probe(ProbeContext(target=sim_factory().url), params))
    assert with_stats["server"]["itl_mean_ms"] > 0
    stats_off = sim_factory("--disable-log-stats")
    facts = aio.run(measure_probe.probe(ProbeContext(target=stats_off.url), params))
    assert facts["server"] == {"available": False}


def test_a_median_near_zero_is_judged_by_its_difference_never_by_a_ratio() -> None:
    """ITL through a buffering proxy: most gaps are 0 ms (events in one read). The ratio of two
    such medians gave bands of ±1,108,400,800 %; the difference in ms is what can be said."""
    rng = random.Random(4)
    bursts = [0.0] * 20 + [rng.uniform(20, 40) for _ in range(4)]
    bursts_again = [0.0] * 19 + [rng.uniform(20, 40) for _ in range(5)]
    stream = [10 + rng.gauss(0, 0.5) for _ in range(24)]
    same = compare_values("itl_ms", bursts, bursts_again)
    assert (same.verdict, same.reason, same.relative_change, same.noise_band) == (
        "within noise", NEAR_ZERO, None, None)  # fmt: skip
    fixed = compare_values("itl_ms", bursts, stream)
    assert fixed.verdict == "regressed" and fixed.relative_change is None
    assert fixed.ci_low_ms is not None and 9 < fixed.ci_low_ms <= fixed.ci_high_ms < 11  # type: ignore[operator]
    # And an A/A pair of such rounds gives no band at all (not a huge one).
    assert noise_band(bursts, bursts_again) is None


def test_a_degenerate_sample_gives_a_bounded_band_or_none() -> None:
    """Identical values (every request the same, a quantised clock) bootstrap to one point: the
    band is the practical threshold, never a division by zero or a band beyond ±100 %."""
    flat = [12.0] * 16
    result = compare_values("tpot_ms", flat, list(flat))
    assert result.verdict == "within noise" and result.noise_band == PRACTICAL_THRESHOLD
    assert noise_band(flat, list(flat)) == 0.0
    zeros = compare_values("itl_ms", [0.0] * 16, [0.0] * 16)
    assert (
        zeros.verdict == "within noise" and zeros.noise_band is None and zeros.reason == NEAR_ZERO
    )
