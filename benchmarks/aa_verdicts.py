"""A/A false verdicts: the same round measured again, nothing changed, judged by the noise model.

Each trial measures the walk's baseline round three times against a healthy server: the first two
are the A/A pair that calibrates the noise band (as `baseline.direct` does), the third is the
"after" of a change that changed nothing. Every segment of that third round is judged against the
first with the calibrated band; anything but "within noise" (or "inconclusive") is a false
verdict. Run with and without a second process keeping one core busy:

    python benchmarks/aa_verdicts.py --trials 10            # the simulator
    python benchmarks/aa_verdicts.py --trials 10 --hog      # one core kept busy
    python benchmarks/aa_verdicts.py --target http://127.0.0.1:8000   # any server (a real vLLM)

Goal (issue: verdicts an engineer can trust): "within noise" in >= 95 % of A/A comparisons.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import server_under_load
from wizard.measure import MeasurementSpec, compare_values, noise_band
from wizard.probes.endpoints import served_model
from wizard.probes.load import run_load
from wizard.probes.stream import RequestSpec

SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms")


async def one_round(url: str, model: str) -> dict[str, list[float]]:
    request = RequestSpec(model=model, input_tokens=64, max_tokens=64)
    result = await run_load(url, request, concurrency=4, requests=16, warmup=2)
    spec = MeasurementSpec(model, "completions", 64, 64, 4, url)
    return result.measurement(spec).values


async def trial(url: str, model: str) -> dict[str, str]:
    first, again, after = [await one_round(url, model) for _ in range(3)]
    verdicts = {}
    for segment in SEGMENTS:
        band = noise_band(first[segment], again[segment]) or 0.0
        verdicts[segment] = compare_values(
            segment, first[segment], after[segment], noise=band
        ).verdict
    return verdicts


async def model_of(url: str) -> str:
    import httpx

    async with httpx.AsyncClient() as client:
        return await served_model(client, url, {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--target", help="measure this server instead of a fresh simulator")
    args = parser.parse_args()
    with server_under_load(args.target, args.hog) as url:
        model = asyncio.run(model_of(url))
        counts: Counter[str] = Counter()
        for number in range(args.trials):
            verdicts = asyncio.run(trial(url, model))
            counts.update(verdicts.values())
            print(f"trial {number + 1}: {verdicts}", flush=True)
    total = sum(counts.values())
    honest = counts["within noise"] + counts["inconclusive"]
    print(
        f"\n{'with' if args.hog else 'without'} a busy core, {args.trials} trials x "
        f"{len(SEGMENTS)} segments: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    print(
        f"within noise {counts['within noise'] / total:.0%}; "
        f"no false improved/regressed in {honest / total:.0%}"
    )


if __name__ == "__main__":
    main()
