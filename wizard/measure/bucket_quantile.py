"""A percentile of a Prometheus histogram, quoted with the bucket it falls in.

A histogram only knows how many observations fell at or below each bucket bound (``le``).
``histogram_quantile`` interpolates linearly inside the bucket that holds the quantile, so with
vLLM's inter-token buckets (10 ms, 25 ms) every p95 between them reads ~24 ms whatever the real
value (13 ms, say), and a queue time below the first 300 ms bucket reads 285 ms. The only thing
the data proves is the bucket: "p95 between 10 and 25 ms". This module says which bucket, and
keeps the interpolated number only as a hint beside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class QuantileBounds:
    """The bucket a quantile falls in: ``low`` < q-th observation <= ``high`` (seconds)."""

    quantile: float
    low_s: float
    high_s: float  # math.inf when the quantile lies beyond the last finite bound
    interpolated_s: float  # what histogram_quantile would say: a hint, never the quote alone
    observations: float

    def text(self, unit_ms: bool = True) -> str:
        """``p95 between 10 and 25 ms`` (``above 80000 ms`` for the +Inf bucket)."""
        scale, unit = (1000.0, "ms") if unit_ms else (1.0, "s")
        name = f"p{self.quantile * 100:g}"
        if math.isinf(self.high_s):
            return f"{name} above {self.low_s * scale:g} {unit}"
        return f"{name} between {self.low_s * scale:g} and {self.high_s * scale:g} {unit}"

    def to_dict(self) -> dict[str, float | str | None]:
        """JSON shape: an infinite upper bound is null (JSON has no infinity)."""
        return {
            "low_ms": self.low_s * 1000,
            "high_ms": None if math.isinf(self.high_s) else self.high_s * 1000,
            "interpolated_ms": self.interpolated_s * 1000,
            "observations": self.observations,
            "text": self.text(),
        }


def quantile_bounds(cumulative: dict[float, float], quantile: float) -> QuantileBounds | None:
    """The bucket holding ``quantile`` (0..1) of cumulative counts ``{le: count}``.

    ``cumulative`` must include ``math.inf`` (the ``+Inf`` bucket: all observations). Counts
    from ``increase()`` are floats and may be slightly non-monotonic (counters scraped at
    different moments); they are made monotonic first, as Prometheus does. None when nothing
    was observed.
    """
    bounds = sorted(cumulative)
    if not bounds or not math.isinf(bounds[-1]):
        return None
    counts: list[float] = []
    for bound in bounds:
        counts.append(max(cumulative[bound], counts[-1] if counts else 0.0))
    total = counts[-1]
    if total <= 0:
        return None
    rank = quantile * total
    index = next(i for i, count in enumerate(counts) if count >= rank)
    low = bounds[index - 1] if index > 0 else 0.0
    high = bounds[index]
    below = counts[index - 1] if index > 0 else 0.0
    if math.isinf(high):
        interpolated = low
    else:
        inside = counts[index] - below
        interpolated = low + (high - low) * ((rank - below) / inside if inside > 0 else 1.0)
    return QuantileBounds(quantile, low, high, interpolated, total)
