"""The time of one comparison (``measure.compare_values``: 2,000 bootstrap resamples of both sides'
medians) by the number of values per side.

Run on demand: ``python benchmarks/bootstrap_speed.py``. Prints a markdown table of the median of
``--repeat`` timings per size; results/demo_speed.md keeps the figures with their date and commit.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from wizard import measure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 1000])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    rng = random.Random(0)
    print("| values per side | one comparison (median) |\n|---|---|")
    for size in args.sizes:
        before = [rng.lognormvariate(3, 0.3) for _ in range(size)]
        after = [rng.lognormvariate(3.1, 0.3) for _ in range(size)]
        timings = []
        for _ in range(args.repeat):
            began = time.perf_counter()
            measure.compare_values("ttft_ms", before, after)
            timings.append(time.perf_counter() - began)
        print(f"| {size:,} | {statistics.median(timings) * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
