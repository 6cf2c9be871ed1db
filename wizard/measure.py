"""Measurements: the spec that makes two runs comparable, statistics, and noise-aware comparisons.

A measurement spec fixes what P0.2 and P6.5 of the procedure say must not change between rounds:
model, endpoint, input and output length, concurrency (or the MLPerf scenario), access path and
warm state. Its fingerprint is a hash of those fields; only measurements with equal fingerprints
are compared. A comparison bootstraps the difference of medians and says "no significant change"
when the confidence interval contains zero or the effect is smaller than the practical threshold.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from wizard.errors import WizardError

SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
Verdict = Literal["improved", "regressed", "no significant change", "insufficient data"]


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

    def fingerprint(self) -> str:
        """A short, stable hash of the spec."""
        canonical = json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))
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

    def to_dict(self) -> dict[str, Any]:
        """JSON shape."""
        return asdict(self)


class IncomparableError(WizardError):
    """Two measurements were taken under different specs (P0.2, P6.6)."""


def compare_values(
    segment: str,
    before: Sequence[float],
    after: Sequence[float],
    *,
    resamples: int = 2000,
    confidence: float = 0.95,
    practical_threshold: float = 0.05,
    seed: int = 0,
) -> Comparison:
    """Bootstrap the change of the median (after - before) and judge it against noise.

    "improved"/"regressed" only when the confidence interval excludes zero AND the median moved
    by at least ``practical_threshold`` (relative); lower is better for every latency segment.
    """
    if len(before) < 3 or len(after) < 3:
        b50 = statistics.median(before) if before else None
        a50 = statistics.median(after) if after else None
        return Comparison(segment, b50, a50, None, None, None, None, "insufficient data")
    rng = random.Random(seed)
    before_p50, after_p50 = statistics.median(before), statistics.median(after)
    diffs = sorted(
        statistics.median(rng.choices(after, k=len(after)))
        - statistics.median(rng.choices(before, k=len(before)))
        for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    low = diffs[int(tail * (resamples - 1))]
    high = diffs[int((1 - tail) * (resamples - 1))]
    change = after_p50 - before_p50
    relative = change / before_p50 if before_p50 else None
    verdict: Verdict = "no significant change"
    big_enough = relative is None or abs(relative) >= practical_threshold
    if big_enough and high < 0:
        verdict = "improved"
    elif big_enough and low > 0:
        verdict = "regressed"
    return Comparison(segment, before_p50, after_p50, change, low, high, relative, verdict)


def compare(before: Measurement, after: Measurement) -> list[Comparison]:
    """Compare every segment both measurements have; refuse different specs."""
    if before.spec.fingerprint() != after.spec.fingerprint():
        differing = [
            name for name, value in asdict(before.spec).items() if asdict(after.spec)[name] != value
        ]
        raise IncomparableError(
            "measurements were taken under different conditions "
            f"({', '.join(differing)} differ); compare only equal fingerprints"
        )
    return [
        compare_values(segment, before.values[segment], after.values[segment])
        for segment in SEGMENTS
        if segment in before.values and segment in after.values
    ]
