"""The bootstrap of medians draws each resample's median exactly, without drawing the resample.

Checked against the bootstrap's definition: every one of the n**n equally likely resamples of a
small sample enumerated, its median taken as sorting it gives (the middle value, or the mean of
the two middle ones). The drawn medians' distribution must match that one at every value it takes,
within the Dvoretzky-Kiefer-Wolfowitz bound for the number drawn (a fixed seed: the draw is the
same every run, and a wrong order statistic or a wrong second pick moves some value's cumulative
share by far more than the bound).
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter
from typing import Any

import pytest

from wizard import measure

DRAWN = 40_000
# P(sup |F_drawn - F| > bound) <= 2 exp(-2 N bound^2): one in a million at this bound.
BOUND = math.sqrt(math.log(2 / 1e-6) / (2 * DRAWN))


def exact_medians(values: list[float]) -> Counter[float]:
    return Counter(statistics.median(r) for r in itertools.product(values, repeat=len(values)))


@pytest.mark.parametrize(
    "values",
    [
        [3.0, 9.0, 1.0, 4.0, 7.0],  # odd: one middle value
        [12.0, 2.0, 30.0, 5.0, 8.0, 20.0],  # even: the mean of two middle values
        [5.0, 5.0, 1.0, 9.0, 9.0, 2.0],  # ties
        [0.4, 80.0, 1.5, 3.0, 2.5, 7.0, 6.0],
    ],
)
def test_the_drawn_medians_are_the_bootstraps_own(values: list[float]) -> None:
    exact = exact_medians(values)
    total = sum(exact.values())
    (drawn,) = measure._bootstrap_medians([values], DRAWN, seed=7)
    assert set(drawn) <= set(exact), set(drawn) - set(exact)
    counted = Counter(drawn)
    exact_share = drawn_share = 0.0
    for median in sorted(exact):
        exact_share += exact[median] / total
        drawn_share += counted[median] / DRAWN
        assert abs(drawn_share - exact_share) <= BOUND, (median, drawn_share, exact_share)


def test_the_same_seed_draws_the_same_medians() -> None:
    values = [float(v) for v in range(1, 40)]
    assert measure._bootstrap_medians([values], 500, 3) == measure._bootstrap_medians(
        [values], 500, 3
    )


def test_a_tenfold_drop_is_improved_and_an_equal_pair_within_noise() -> None:
    before = [100.0 + (i % 7) for i in range(30)]
    assert measure.compare_values("ttft_ms", before, [v / 10 for v in before]).verdict == "improved"
    assert (
        measure.compare_values("ttft_ms", before, list(reversed(before))).verdict == "within noise"
    )


def test_a_look_hands_the_gil_back_often_and_puts_the_interval_back() -> None:
    """The pure-Python bootstrap holds the GIL: a look runs at a short switch interval so the
    event loop reading the streams waits for it no longer (benchmarks/look_lag.py)."""
    import sys

    from wizard.probes.http import load

    default = sys.getswitchinterval()
    seen: list[float] = []

    def until(samples: list[Any]) -> bool:
        seen.append(sys.getswitchinterval())
        return True

    assert load._look_briefly(until, []) is True
    assert seen == [pytest.approx(load.LOOK_SWITCH_S)] and default > load.LOOK_SWITCH_S
    assert sys.getswitchinterval() == default

    def fails(samples: list[Any]) -> bool:
        raise RuntimeError("look failed")

    with pytest.raises(RuntimeError):
        load._look_briefly(fails, [])
    assert sys.getswitchinterval() == default
