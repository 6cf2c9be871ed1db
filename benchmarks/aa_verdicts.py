"""A/A false verdicts and 2x detection, through the walk's own sequential rounds.

Each trial measures as the walk does, with the walk's code (the `measure` probe, its sequential
`Question`): the baseline round, its A/A repeat (which stops once it agrees or disagrees), then
the "after" round of a change, which stops once it has answered whether it differs from the
pooled baseline beyond the A/A band, repeated while a verdict is inconclusive
(`REPEATS_WHEN_INCONCLUSIVE`, each repeat sequential too).

- A/A (default): the change changed nothing. Anything but "within noise" (or "inconclusive") is a
  false verdict. Goal: false verdicts in <= 5 % of segment comparisons.
- `--effect 2x`: the "after" rounds go to a second simulator whose decode steps read the KV cache
  at 5 GB/s (`--gpu-memory-bandwidth 5`): about 10 ms more per step, TPOT about 2x. Goal: TPOT "regressed" in >= 95 %
  of trials.

    python benchmarks/aa_verdicts.py --trials 20                 # A/A, a quiet machine
    python benchmarks/aa_verdicts.py --trials 20 --hog           # A/A, one core kept busy
    python benchmarks/aa_verdicts.py --trials 20 --effect 2x     # a 2x change
    python benchmarks/aa_verdicts.py --target http://127.0.0.1:8000   # any server (a real vLLM)
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import server_under_load, start_sim
from wizard.measure import compare_rounds, noise_bands
from wizard.measure.sequential import Question
from wizard.probes.http.endpoints import served_model
from wizard.probes.runner import ProbeContext, run_probe
from wizard.walk.comparisons import COMPARED_SEGMENTS
from wizard.walk.one_change import REPEATS_WHEN_INCONCLUSIVE

ROUND = {"path": "direct", "concurrency": 4, "requests": 16, "warmup": 2, "input_tokens": 64,
         "max_tokens": 64}  # fmt: skip
SENT: list[int] = []  # steady requests of every round of the trial, in order


async def one_round(url: str, model: str, question: Question | None) -> dict[str, list[float]]:
    ctx = ProbeContext(target=url, model=model, question=question)
    result = await run_probe("measure", ctx, dict(ROUND))
    if result.error is not None:
        raise SystemExit(f"a round failed: {result.error}")
    SENT.append(result.facts["steady"]["requests"])
    values: dict[str, list[float]] = result.facts["values"]
    return values


async def trial(url: str, after_url: str, model: str) -> tuple[dict[str, str], int]:
    """The verdict per segment, and how many "after" rounds it took."""
    SENT.clear()
    first = await one_round(url, model, None)
    again = await one_round(url, model, Question([[first]], COMPARED_SEGMENTS, about="direct"))
    before = [first, again]
    bands = noise_bands(first, again, COMPARED_SEGMENTS)

    def question(earlier: list[Any]) -> Question:
        return Question([before], COMPARED_SEGMENTS, bands, earlier, about="direct")

    after = [await one_round(after_url, model, question([]))]
    results = compare_rounds(before, after, COMPARED_SEGMENTS, bands)
    for _ in range(REPEATS_WHEN_INCONCLUSIVE):
        if all(r.verdict != "inconclusive" for r in results):
            break
        after.append(await one_round(after_url, model, question(after)))
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
    parser.add_argument("--effect", choices=["none", "2x"], default="none",
                        help="2x: the after rounds go to a simulator with TPOT about 2x")  # fmt: skip
    args = parser.parse_args()
    slower = start_sim("--gpu-memory-bandwidth", "5") if args.effect == "2x" else None
    try:
        with server_under_load(args.target, args.hog) as url:
            after_url = slower[1] if slower else url
            model = asyncio.run(model_of(url))
            counts: Counter[str] = Counter()
            tpot: Counter[str] = Counter()
            for number in range(args.trials):
                verdicts, rounds = asyncio.run(trial(url, after_url, model))
                counts.update(verdicts.values())
                tpot[verdicts.get("tpot_ms", "-")] += 1
                sent = " ".join(str(n) for n in SENT)
                print(f"trial {number + 1} ({rounds} after-rounds): {verdicts}; steady requests "
                      f"per round: {sent}", flush=True)  # fmt: skip
    finally:
        if slower is not None:
            slower[0].terminate()
    total = sum(counts.values())
    print(
        f"\n{'with' if args.hog else 'without'} a busy core, effect {args.effect}, {args.trials} "
        f"trials x {len(COMPARED_SEGMENTS)} segments: "
        + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
    )
    if args.effect == "2x":
        print(f"TPOT regressed in {tpot['regressed'] / args.trials:.0%} of trials")
    else:
        false = counts["improved"] + counts["regressed"]
        print(
            f"within noise {counts['within noise'] / total:.0%}; false verdicts {false / total:.0%}"
        )


if __name__ == "__main__":
    main()
