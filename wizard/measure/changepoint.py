"""Where a series changed level: the best two-segment split, kept only when the data want it.

A latency series is judged on its logarithm (a slowdown is a ratio: 40 -> 900 ms and 4 -> 90 ms
are the same kind of change, and a few slow requests do not dominate the fit). The split is the
one index that minimises the two segments' summed squared error around their means (exact,
O(n) with prefix sums). It is accepted only when it beats one segment by more than Schwarz's
Bayesian information criterion asks for the two parameters it adds (the second mean and the
change's position): n * ln(RSS_one / RSS_two) > 2 * ln(n). That is the standard penalty of
binary-segmentation change-point detection, not a threshold fitted to any server's numbers: a
flat noisy series is not split, a step is, whatever its units.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Fewer points than this on a side cannot estimate that side's level and noise.
MIN_SEGMENT = 2


@dataclass(frozen=True)
class Split:
    """The first index of the second segment, and both segments' levels (means of the values
    as given: the caller's transform, e.g. logarithms)."""

    index: int
    before: float
    after: float
    rss_one: float
    rss_two: float


def best_split(values: list[float]) -> Split | None:
    """The accepted two-segment split of ``values``, or None (too short, flat, or no step)."""
    n = len(values)
    if n < 2 * MIN_SEGMENT:
        return None
    sums, squares = [0.0], [0.0]
    for value in values:
        sums.append(sums[-1] + value)
        squares.append(squares[-1] + value * value)

    def rss(start: int, end: int) -> float:
        count = end - start
        total = sums[end] - sums[start]
        return max(0.0, (squares[end] - squares[start]) - total * total / count)

    one = rss(0, n)
    best: tuple[float, int] | None = None
    for index in range(MIN_SEGMENT, n - MIN_SEGMENT + 1):
        two = rss(0, index) + rss(index, n)
        if best is None or two < best[0]:
            best = (two, index)
    assert best is not None
    two, index = best
    if one <= 0:
        return None  # a constant series has no change
    if two > 0 and n * math.log(one / two) <= 2 * math.log(n):
        return None
    before = (sums[index] - sums[0]) / index
    after = (sums[n] - sums[index]) / (n - index)
    return Split(index, before, after, one, two)
