"""Which member of a group stands out from the rest, judged by the rest's own spread.

A replica is compared with the others (leave-one-out: an outlier must not widen the yardstick it
is measured with): their median is the centre, their median absolute deviation (scaled to a
standard deviation, 1.4826 x MAD) the spread. A value further than ``ROBUST_SDS`` spreads from
the centre differs. Identical healthy replicas have no spread at all, so every signal also brings
its own resolution (the smallest difference it can show: Poisson noise of a count, a gauge's own
fluctuation over the window), and the spread is never taken below it. Nothing here is fitted to
a particular fleet: the bound is the conventional three standard deviations.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

ROBUST_SDS = 3.0
MAD_TO_SD = 1.4826  # a normal distribution's standard deviation is 1.4826 x its MAD


def centre_and_spread(others: Sequence[float], resolution: float) -> tuple[float, float]:
    """The others' median and their spread (at least ``resolution``)."""
    centre = statistics.median(others)
    mad = statistics.median(abs(x - centre) for x in others)
    return centre, max(MAD_TO_SD * mad, resolution)


def direction(
    value: float, others: Sequence[float], resolution: float, both_ways: bool = False
) -> str | None:
    """ "high" when ``value`` lies above the others beyond their spread ("low" below, when asked
    for both ways), else None; None too without others to compare with."""
    if not others:
        return None
    centre, spread = centre_and_spread(others, resolution)
    if value > centre + ROBUST_SDS * spread:
        return "high"
    if both_ways and value < centre - ROBUST_SDS * spread:
        return "low"
    return None
