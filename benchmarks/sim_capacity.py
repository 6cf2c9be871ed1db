"""Simulator capacity: concurrent streams, aggregate output tokens/s and emission jitter on one core.

Run on demand (not a test): ``python benchmarks/sim_capacity.py [--streams 64 256] [--tokens 256]``.
The simulator is pinned to CPU 0 and this client to CPU 1 (``taskset``), so the simulator has one
core. Figures come from the simulator's own ground truth (``/sim/trace``):
- tokens/s: output tokens emitted / (last emission - first emission) over all requests;
- engine jitter: emission time minus the step's scheduled deadline (timer and event-loop lateness);
- send jitter: time the SSE bytes were handed to the socket minus the scheduled deadline.
Results are written to ``benchmarks/results/sim_capacity.md`` (median of the repeats per row).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import time
from pathlib import Path

import httpx
from _common import start_sim

from wizard.measure import percentile
from wizard.probes.http.load import run_load
from wizard.probes.http.stream import RequestSpec

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def measure(url: str, streams: int, tokens: int) -> dict[str, float]:
    httpx.delete(url + "/sim/trace")
    spec = RequestSpec(model=MODEL, input_tokens=16, max_tokens=tokens)
    result = asyncio.run(run_load(url, spec, concurrency=streams, requests=streams, timeout_s=300))
    failed = [s for s in result.samples if not s.ok]
    trace = httpx.get(url + "/sim/trace", timeout=60).json()["requests"]
    emitted = [t for r in trace for t in r["emitted_ns"]]
    engine_jitter = [
        (e - s) / 1e6
        for r in trace
        for e, s in zip(r["emitted_ns"], r["scheduled_ns"], strict=True)
    ]
    send_jitter = [
        (e - s) / 1e6 for r in trace for e, s in zip(r["sent_ns"], r["scheduled_ns"], strict=False)
    ]
    span_s = (max(emitted) - min(emitted)) / 1e9
    return {
        "streams": streams,
        "failed": len(failed),
        "tokens": len(emitted),
        "tokens_per_s": len(emitted) / span_s,
        "engine_jitter_p50_ms": percentile(engine_jitter, 50) or 0.0,
        "engine_jitter_p99_ms": percentile(engine_jitter, 99) or 0.0,
        "send_jitter_p50_ms": percentile(send_jitter, 50) or 0.0,
        "send_jitter_p99_ms": percentile(send_jitter, 99) or 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 64, 256])
    parser.add_argument("--tokens", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "sim_capacity.md"))
    args = parser.parse_args()
    if shutil.which("taskset"):
        os.sched_setaffinity(0, {1 % (os.cpu_count() or 1)})
    process, url = start_sim()
    rows = []
    try:
        for streams in args.streams:
            runs = [measure(url, streams, args.tokens) for _ in range(args.repeat)]
            row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            rows.append(row)
            print(row, flush=True)
    finally:
        process.terminate()
        process.wait()
    header = (
        "| streams | failed | tokens | tokens/s | engine jitter p50 / p99 (ms) | "
        "send jitter p50 / p99 (ms) |\n|---|---|---|---|---|---|\n"
    )
    lines = [
        f"| {r['streams']:.0f} | {r['failed']:.0f} | {r['tokens']:.0f} | {r['tokens_per_s']:.0f} | "
        f"{r['engine_jitter_p50_ms']:.2f} / {r['engine_jitter_p99_ms']:.2f} | "
        f"{r['send_jitter_p50_ms']:.2f} / {r['send_jitter_p99_ms']:.2f} |"
        for r in rows
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        f"# Simulator capacity ({time.strftime('%Y-%m-%d')}, {args.tokens} output tokens per stream, "
        f"median of {args.repeat} runs; simulator pinned to one core)\n\n"
        + header
        + "\n".join(lines)
        + "\n"
    )
    print(f"written to {out}")


if __name__ == "__main__":
    main()
