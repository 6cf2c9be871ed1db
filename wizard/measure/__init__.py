"""Measurements (this module: the spec, statistics, noise-aware comparisons), the sequential rounds,
contention, outliers, change points, histogram quantiles and the waterfall. May load errors and
playbook (conditions); never ui, report, walk, probes or cli.

Measurements: the spec that makes two runs comparable, statistics, and noise-aware comparisons.

A measurement spec fixes what P0.2 and P6.5 of the procedure say must not change between rounds:
model, endpoint, input and output length, concurrency (or the MLPerf scenario), access path and
warm state. Its fingerprint is a hash of those fields; only measurements with equal fingerprints
are compared. A comparison bootstraps the ratio of the medians (after / before) and judges its
confidence interval, on the log scale, against a noise band: the practical threshold, widened to
what an A/A comparison (the same round measured twice on the server being diagnosed) moved by, as
a factor either way. Outside
the band on the good side is "improved", on the bad side "regressed"; inside it "within noise";
an interval that crosses the band's edge, or too few samples, is "inconclusive".

One round is often too few samples to say "within noise" of a band that is itself an A/A interval's
far end (a second interval of the same width fits inside it only about half the time). So rounds
of one state are pooled: the A/A pair is two rounds of the "before" state, and an inconclusive
"after" is measured once more (``compare_rounds``); the repeated "after" pair is an A/A pair of
its own, and the band is the wider of the two.

ITL is judged per request. A round pools every gap of every request (about 1,000), but the gaps of
one request are not independent samples: they share its batch, its neighbours and its moment on the
server. Bootstrapping them as if they were made a 1,000-gap interval far narrower than the data
supports, and two rounds of the same healthy server were "different". Each request's median gap is
one independent value (``ITL_PER_REQUEST``), and the ITL verdict's interval is bootstrapped from
those; the pooled gaps stay in ``itl_ms`` for percentiles and for readers of older transcripts.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

from wizard.errors import WizardError

SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
Verdict = Literal["improved", "regressed", "within noise", "inconclusive"]
PRACTICAL_THRESHOLD = 0.05  # a latency change under 5 % is not worth a round, whatever the noise
# Each request's median inter-token gap: the independent samples an ITL verdict is judged on.
ITL_PER_REQUEST = "itl_request_p50_ms"
# A segment whose values are clustered by request, and the per-request values it is judged by.
JUDGED_BY = {"itl_ms": ITL_PER_REQUEST}


def percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0..100) by linear interpolation between closest ranks; None if empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def summarize(
    values: Sequence[float], points: Sequence[float] = (50, 90, 99)
) -> dict[str, float | None]:
    """``{"p50": ..., "p90": ..., "p99": ...}`` for the given values."""
    return {f"p{point:g}": percentile(values, point) for point in points}


@dataclass(frozen=True)
class MeasurementSpec:
    """Everything that must stay the same for two measurements to be comparable."""

    model: str
    endpoint: str
    input_tokens: int
    output_tokens: int
    concurrency: int
    access_path: str
    warm_state: Literal["cold", "steady"] = "steady"
    scenario: str = "closed-loop"
    # The incident's request body (``run --request-body``), by its hash; None: synthetic prompts.
    request_body: str | None = None

    def fingerprint(self) -> str:
        """A short, stable hash of the spec (a spec without a body hashes as before bodies were)."""
        fields = {k: v for k, v in asdict(self).items() if k != "request_body" or v is not None}
        canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass
class Measurement:
    """Per-segment values of one measurement round, with the spec they were taken under."""

    spec: MeasurementSpec
    values: dict[str, list[float]] = field(default_factory=dict)

    def summary(self) -> dict[str, dict[str, float | None]]:
        """Percentiles per segment."""
        return {segment: summarize(values) for segment, values in self.values.items()}

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (the transcript's ``measurement`` event data)."""
        return {
            "spec": asdict(self.spec),
            "fingerprint": self.spec.fingerprint(),
            "values": self.values,
            "summary": self.summary(),
        }


@dataclass(frozen=True)
class Comparison:
    """How one segment moved between two measurements."""

    segment: str
    before_p50: float | None
    after_p50: float | None
    change_ms: float | None
    ci_low_ms: float | None
    ci_high_ms: float | None
    relative_change: float | None
    verdict: Verdict
    # The relative interval and the band it was judged against (so "within noise" shows its why).
    ci_low_rel: float | None = None
    ci_high_rel: float | None = None
    noise_band: float | None = None
    samples: tuple[int, int] = (0, 0)
    # The values the interval was bootstrapped from, when not the segment's own (ITL: per request).
    judged_by: str | None = None
    # Why no band is given, when none is (NEAR_ZERO, TOO_WIDE, FEW_SAMPLES).
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return asdict(self)


class IncomparableError(WizardError):
    """Two measurements were taken under different specs (P0.2, P6.6)."""


MIN_SAMPLES = 5
# A band wider than ±100 % (the same round measured twice moved by more than 2x) bounds nothing:
# "within" such a band is no answer, so it is never shown and never gives "within noise".
MAX_BAND = 1.0
# A median inter-event gap under half a millisecond is no decode step: vLLM's fastest steps take
# milliseconds (facts/vllm.md), so such a median means events arrived together, in one read of
# a buffering proxy. A ratio of two such medians is a ratio of read timings, and a band from it
# ran to ±1,108,400,800 %: below this median a segment is judged by the difference in ms instead,
# against the same half millisecond (a difference smaller than it is the client's timing).
NEAR_ZERO_MS = 0.5
# Why a comparison carries no band (the reader's words are looked up by these keys).
NEAR_ZERO = "near_zero_median"
TOO_WIDE = "band_too_wide"
FEW_SAMPLES = "too_few_samples"


def compare_values(
    segment: str,
    before: Sequence[float],
    after: Sequence[float],
    *,
    noise: float = 0.0,
    resamples: int = 2000,
    confidence: float = 0.95,
    practical_threshold: float = PRACTICAL_THRESHOLD,
    seed: int = 0,
) -> Comparison:
    """Bootstrap the ratio of the medians and judge its interval against the noise band.

    ``noise`` is how far an A/A comparison moved on this server, as a factor either way (0.5: the
    same round came out up to 1.5x higher or 1/1.5 lower; 0 when none was measured); the band is the
    larger of it and ``practical_threshold``. The judgement is on the log of the ratio, so that a
    band is as wide downwards as upwards: on the relative scale a drop can never exceed -100 %, and
    a band wider than that (a starved machine's A/A) made every improvement "within noise". Lower
    is better for every latency segment. A band above ``MAX_BAND`` can still see a change beyond
    it, but never calls one "within noise"; a median near zero is judged by its difference.
    """
    counts = (len(before), len(after))
    b50 = statistics.median(before) if before else None
    a50 = statistics.median(after) if after else None
    band = max(practical_threshold, noise)
    if len(before) < MIN_SAMPLES or len(after) < MIN_SAMPLES or b50 is None or a50 is None:
        return Comparison(segment, b50, a50, None, None, None, None, "inconclusive",
                          samples=counts, reason=FEW_SAMPLES)  # fmt: skip
    b_boot, a_boot = _bootstrap_medians((before, after), resamples, seed)
    tail = (1 - confidence) / 2
    diff_low, diff_high = _quantiles([a - b for a, b in zip(a_boot, b_boot, strict=True)], tail)
    change = a50 - b50
    if min(b50, a50) < NEAR_ZERO_MS:
        verdict = _judge(diff_low, diff_high, NEAR_ZERO_MS)
        return Comparison(segment, b50, a50, change, diff_low, diff_high, None, verdict,
                          samples=counts, reason=NEAR_ZERO)  # fmt: skip
    log_ratios = [a - b for a, b in zip(_log(a_boot), _log(b_boot), strict=True)]
    low_log, high_log = _quantiles(log_ratios, tail)
    verdict = _judge(low_log, high_log, math.log1p(band))
    reason = None
    if band > MAX_BAND:
        reason = TOO_WIDE
        if verdict == "within noise":
            verdict = "inconclusive"
    return Comparison(segment, b50, a50, change, diff_low, diff_high, change / b50, verdict,
                      math.expm1(low_log), math.expm1(high_log),
                      band if band <= MAX_BAND else None, counts, reason=reason)  # fmt: skip


def _judge(low: float, high: float, band: float) -> Verdict:
    """An interval against a symmetric band: beyond it one way or the other, inside it, or across
    its edge (inconclusive). Lower is better."""
    if high < -band:
        return "improved"
    if low > band:
        return "regressed"
    if -band <= low and high <= band:
        return "within noise"
    return "inconclusive"


def _bootstrap_medians(
    samples: Sequence[Sequence[float]], resamples: int, seed: int
) -> list[list[float]]:
    """Each sample's median over ``resamples`` bootstrap resamples, drawn exactly without drawing
    the resamples.

    A resample of n values is n uniform picks of an index; its k-th smallest pick is the k-th order
    statistic of n uniforms, which is Beta(k, n - k + 1), and given it the next one up is the least
    of the n - k picks left, uniform above it: u + (1 - u) * (1 - V ** (1 / (n - k))). The median
    (the middle value, or the mean of the two middle ones) is the sorted data at those picks: the
    same distribution as sorting each resample (numpy's median of resampled rows, which this
    replaced), at two random numbers per resample whatever n is.
    """
    rng = random.Random(seed)
    medians = []
    for values in samples:
        data = sorted(values)
        n = len(data)
        middle = (n + 1) // 2  # the k of the (lower) middle order statistic
        beyond = 1.0 / (n - middle) if n % 2 == 0 else 0.0
        drawn: list[float] = []
        for _ in range(resamples):
            low = rng.betavariate(middle, n - middle + 1)
            lower = data[min(n - 1, int(n * low))]
            if not beyond:
                drawn.append(lower)
                continue
            high = low + (1.0 - low) * (1.0 - rng.random() ** beyond)
            drawn.append((lower + data[min(n - 1, int(n * high))]) / 2)
        medians.append(drawn)
    return medians


def _quantiles(values: Sequence[float], tail: float) -> tuple[float, float]:
    """The ``tail`` and ``1 - tail`` quantiles, interpolated between closest ranks (numpy's and
    R's default, type 7)."""
    ordered = sorted(values)

    def at(p: float) -> float:
        h = (len(ordered) - 1) * p
        below = math.floor(h)
        above = min(below + 1, len(ordered) - 1)
        return ordered[below] + (h - below) * (ordered[above] - ordered[below])

    return at(tail), at(1 - tail)


def _log(values: Sequence[float]) -> list[float]:
    """The log of bootstrap medians, a zero median kept finite."""
    return [math.log(max(v, 1e-6)) for v in values]


def noise_band(before: Sequence[float], after: Sequence[float]) -> float | None:
    """How far an A/A pair (the same round twice) moved, as a factor either way: the larger end of
    its interval on the log scale (0.5 means up to 1.5x higher or 1/1.5 lower). None when the pair
    cannot give one (too few samples, a median near zero)."""
    result = compare_values("aa", before, after, practical_threshold=0.0)
    if result.ci_low_rel is None or result.ci_high_rel is None:
        return None
    return math.expm1(max(-math.log1p(result.ci_low_rel), math.log1p(result.ci_high_rel)))


def noise_bands(
    first: dict[str, list[float]], again: dict[str, list[float]], segments: Sequence[str]
) -> dict[str, float]:
    """The band of each segment an A/A pair (two rounds, nothing changed) measured, from the values
    each segment's verdict is judged by; segments too thin to tell are left out."""
    bands = {}
    for segment in segments:
        key = judged_key(segment, (first, again))
        if (band := noise_band(first.get(key, []), again.get(key, []))) is not None:
            bands[segment] = band
    return bands


def check_comparable(before: MeasurementSpec, after: MeasurementSpec) -> None:
    """Refuse two specs that differ (P0.2, P6.6), naming the fields that do."""
    if before.fingerprint() != after.fingerprint():
        differing = [name for name, value in asdict(before).items() if asdict(after)[name] != value]
        raise IncomparableError(
            "measurements were taken under different conditions "
            f"({', '.join(differing)} differ); compare only equal fingerprints"
        )


def compare_rounds(
    before: Sequence[dict[str, list[float]]],
    after: Sequence[dict[str, list[float]]],
    segments: Sequence[str],
    noise: dict[str, float] | None = None,
    confidence: float = 0.95,
) -> list[Comparison]:
    """Judge pooled rounds of one state against pooled rounds of another, segment by segment.

    Each round is ``{segment: values}`` measured under one spec. Two or more ``after`` rounds are
    an A/A pair of the after state: their band widens ``noise`` (never narrows it).
    """
    results = []
    for segment in segments:
        if not all(segment in r for r in (*before, *after)):
            continue
        key = judged_key(segment, (*before, *after))
        band = (noise or {}).get(segment, 0.0)
        if len(after) >= 2:
            band = max(band, noise_band(after[0][key], after[1][key]) or 0.0)
        result = compare_values(
            segment, [v for r in before for v in r[key]], [v for r in after for v in r[key]],
            noise=band, confidence=confidence,
        )  # fmt: skip
        results.append(replace(result, judged_by=key) if key != segment else result)
    return results


def judged_key(segment: str, rounds: Sequence[dict[str, list[float]]]) -> str:
    """The values a segment's verdict is bootstrapped from in these rounds: its per-request values
    (``JUDGED_BY``) when every round has them, else its own (a round from an older transcript)."""
    per_request = JUDGED_BY.get(segment)
    return per_request if per_request and all(per_request in r for r in rounds) else segment


def compare(
    before: Measurement, after: Measurement, noise: dict[str, float] | None = None
) -> list[Comparison]:
    """Compare every segment both measurements have; refuse different specs."""
    check_comparable(before.spec, after.spec)
    return compare_rounds([before.values], [after.values], SEGMENTS, noise)
