"""A/A false verdicts: the same round measured again, nothing changed, judged by the noise model.

Each trial measures the walk's baseline round against a healthy server as the walk does: the A/A
pair (`direct`, `direct_aa`) calibrates the noise band and is the pooled "before"; then the "after"
of a change that changed nothing, measured once more when a verdict is inconclusive (the engine's
`REPEATS_WHEN_INCONCLUSIVE`), is judged against it with `compare_rounds`. Anything but "within
noise" (or "inconclusive") is a false verdict. Run with and without a second process keeping one core busy:

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
from wizard.engine import COMPARED_SEGMENTS, REPEATS_WHEN_INCONCLUSIVE
from wizard.measure import MeasurementSpec, compare_rounds, noise_bands
from wizard.probes.endpoints import served_model
from wizard.probes.load import run_load
from wizard.probes.stream import RequestSpec

LAGS_MS: list[float] = []  # the client's event-loop lag p90 of every round, in order


async def one_round(url: str, model: str) -> dict[str, list[float]]:
    request = RequestSpec(model=model, input_tokens=64, max_tokens=64)
    result = await run_load(url, request, concurrency=4, requests=16, warmup=2)
    spec = MeasurementSpec(model, "completions", 64, 64, 4, url)
    LAGS_MS.append(result.health.loop_lag_p90_ms)
    return result.measurement(spec).values


async def trial(url: str, model: str) -> tuple[dict[str, str], int]:
    """The verdict per segment, and how many "after" rounds it took."""
    LAGS_MS.clear()
    before = [await one_round(url, model) for _ in range(2)]
    bands = noise_bands(before[0], before[1], COMPARED_SEGMENTS)
    after = [await one_round(url, model)]
    results = compare_rounds(before, after, COMPARED_SEGMENTS, bands)
    for _ in range(REPEATS_WHEN_INCONCLUSIVE):
        if all(r.verdict != "inconclusive" for r in results):
            break
        after.append(await one_round(url, model))
        results = compare_rounds(before, after, COMPARED_SEGMENTS, bands)
    return {r.segment: r.verdict for r in results}, len(after)


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
            verdicts, rounds = asyncio.run(trial(url, model))
            counts.update(verdicts.values())
            lags = " ".join(f"{lag:.1f}" for lag in LAGS_MS)
            print(f"trial {number + 1} ({rounds} after-rounds): {verdicts}; client lag p90 ms "
                  f"per round: {lags}", flush=True)  # fmt: skip
    total = sum(counts.values())
    honest = counts["within noise"] + counts["inconclusive"]
    print(
        f"\n{'with' if args.hog else 'without'} a busy core, {args.trials} trials x "
        f"{len(COMPARED_SEGMENTS)} segments: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    print(
        f"within noise {counts['within noise'] / total:.0%}; "
        f"no false improved/regressed in {honest / total:.0%}"
    )


if __name__ == "__main__":
    main()
