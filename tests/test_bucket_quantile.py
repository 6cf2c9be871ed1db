"""Percentiles quoted with their bucket, and the leave-one-out outlier rule."""

from __future__ import annotations

import math

from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from wizard.measure import outliers
from wizard.measure.bucket_quantile import quantile_bounds
from wizard.sim.metrics import ITL_BUCKETS


def cumulative_of(observations: list[float]) -> dict[float, float]:
    """The cumulative bucket counts a real prometheus_client histogram exposes for these."""
    registry = CollectorRegistry()
    histogram = Histogram("itl_seconds", "ITL", buckets=ITL_BUCKETS, registry=registry)
    for value in observations:
        histogram.observe(value)
    text = generate_latest(registry).decode()
    return {
        float(s.labels["le"]): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.endswith("_bucket")
    }


def test_p95_of_13_ms_gaps_is_quoted_between_10_and_25_ms() -> None:
    bounds = quantile_bounds(cumulative_of([0.013] * 100), 0.95)
    assert bounds is not None
    assert bounds.text() == "p95 between 10 and 25 ms"
    # histogram_quantile's number is near the top of the bucket, far from the real 13 ms.
    assert bounds.interpolated_s > 0.024
    assert bounds.to_dict()["high_ms"] == 25


def test_quantile_beyond_the_last_bound_and_empty_histograms() -> None:
    bounds = quantile_bounds(cumulative_of([100.0] * 10 + [0.013] * 90), 0.95)
    assert bounds is not None and math.isinf(bounds.high_s)
    assert bounds.text() == "p95 above 80000 ms" and bounds.to_dict()["high_ms"] is None
    assert quantile_bounds(cumulative_of([]), 0.95) is None
    assert quantile_bounds({0.01: 3.0}, 0.5) is None  # no +Inf bucket: not a histogram


def test_counters_read_at_different_moments_are_made_monotonic() -> None:
    bounds = quantile_bounds({0.01: 5.0, 0.025: 4.9, math.inf: 10.0}, 0.5)
    assert bounds is not None and bounds.text() == "p50 between 0 and 10 ms"


def test_identical_replicas_and_one_that_stands_out() -> None:
    assert outliers.direction(10.0, [10.0, 10.0, 10.0], resolution=1.0) is None
    assert outliers.direction(12.0, [10.0, 10.0], resolution=1.0) is None  # within 3 x resolution
    assert outliers.direction(14.0, [10.0, 10.0], resolution=1.0) == "high"
    # The rest's own spread widens the yardstick: 14 is ordinary among 6..14.
    assert outliers.direction(14.0, [6.0, 8.0, 10.0, 12.0, 14.0], resolution=0.0) is None
    assert outliers.direction(0.0, [100.0, 104.0, 96.0], resolution=10.0, both_ways=True) == "low"
    assert outliers.direction(0.0, [100.0, 104.0, 96.0], resolution=10.0) is None
    assert outliers.direction(5.0, [], resolution=1.0) is None
