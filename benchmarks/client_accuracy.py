"""Client timing accuracy and capacity against the simulator's ground truth.

Run on demand: ``python benchmarks/client_accuracy.py [--streams 1 16 64 256]``. The simulator is
pinned to CPU 0, this client to CPU 1. For every request, the client's arrival time of each output
event is compared with the simulator's record of when it handed those bytes to the socket
(``/sim/trace`` ``sent_ns``; both are CLOCK_MONOTONIC on the same machine):
- TTFT error: client first-output time minus server send time of the first token;
- ITL error: each client gap minus the matching server gap.
Also reported: the client's self-check (event-loop lag, CPU) and CPU seconds per 1,000 tokens, and
the fixed overhead of ``probe stream --repeat 1`` as a whole process. Results go to
``benchmarks/results/client_accuracy.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from _common import start_sim

from wizard import aio
from wizard.measure import percentile
from wizard.probes.load import run_load
from wizard.probes.stream import RequestSpec

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
STOCK_LOOP = "--stock-loop" in sys.argv


def accuracy(url: str, streams: int, tokens: int) -> dict[str, float]:
    httpx.delete(url + "/sim/trace")
    spec = RequestSpec(model=MODEL, input_tokens=16, max_tokens=tokens)
    load = run_load(url, spec, concurrency=streams, requests=streams, timeout_s=300)
    result = asyncio.run(load) if STOCK_LOOP else aio.run(load)
    trace = {
        r["request_id"]: r for r in httpx.get(url + "/sim/trace", timeout=60).json()["requests"]
    }
    ttft_err, itl_err = [], []
    for sample in result.samples:
        truth = trace.get(sample.request_id or "")
        if not sample.ok or truth is None or len(truth["sent_ns"]) != len(sample.output_times_ns):
            continue  # merged events (writer behind) have no one-to-one truth; counted below
        sent = truth["sent_ns"]
        ttft_err.append((sample.output_times_ns[0] - sent[0]) / 1e6)
        client_gaps = [b - a for a, b in itertools.pairwise(sample.output_times_ns)]
        server_gaps = [b - a for a, b in itertools.pairwise(sent)]
        itl_err.extend((c - s) / 1e6 for c, s in zip(client_gaps, server_gaps, strict=True))
    tokens_total = sum(s.output_tokens for s in result.ok_samples)
    cpu_s = result.health.cpu_fraction * result.wall_s
    return {
        "streams": streams,
        "matched": len(ttft_err),
        "ttft_err_p50": percentile(ttft_err, 50) or 0.0,
        "ttft_err_p99": percentile(ttft_err, 99) or 0.0,
        "itl_err_p50": percentile(itl_err, 50) or 0.0,
        "itl_err_p99": percentile(itl_err, 99) or 0.0,
        "tokens_per_s": tokens_total / result.wall_s,
        "cpu_s_per_1k_tokens": cpu_s / tokens_total * 1000 if tokens_total else 0.0,
        "loop_lag_p90": result.health.loop_lag_p90_ms,
        "saturated": float(result.health.saturated),
    }


def fixed_overhead(url: str, repeat: int) -> float:
    command = [sys.executable, "-m", "wizard", "probe", "stream", "--target", url, "--repeat", "1",
               "--max-tokens", "1", "--model", MODEL]  # fmt: skip
    walls = []
    for _ in range(repeat):
        began = time.monotonic()
        subprocess.run(command, capture_output=True, check=True)
        walls.append(time.monotonic() - began)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "client_accuracy.md")
    )
    parser.add_argument(
        "--stock-loop", action="store_true", help="asyncio's loop instead of uvloop"
    )
    args = parser.parse_args()
    if shutil.which("taskset") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {1})
    process, url = start_sim()
    rows = []
    try:
        for streams in args.streams:
            runs = [accuracy(url, streams, args.tokens) for _ in range(args.repeat)]
            row = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
            rows.append(row)
            print(row, flush=True)
        overhead = fixed_overhead(url, 5)
    finally:
        process.terminate()
        process.wait()
    lines = [
        f"# Client accuracy ({time.strftime('%Y-%m-%d')}; {args.tokens} output tokens per request; "
        f"median of {args.repeat} runs; simulator on CPU 0, client on CPU 1; client loop: "
        f"{'asyncio stock' if STOCK_LOOP else 'uvloop'})",
        "",
        "| streams | matched requests | TTFT error p50 / p99 (ms) | ITL error p50 / p99 (ms) | "
        "tokens/s | client CPU s per 1k tokens | loop lag p90 (ms) | saturated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['streams']:.0f} | {r['matched']:.0f} | {r['ttft_err_p50']:.2f} / {r['ttft_err_p99']:.2f} | "
        f"{r['itl_err_p50']:.2f} / {r['itl_err_p99']:.2f} | {r['tokens_per_s']:.0f} | "
        f"{r['cpu_s_per_1k_tokens']:.3f} | {r['loop_lag_p90']:.1f} | {'yes' if r['saturated'] else 'no'} |"
        for r in rows
    ]
    lines += [
        "",
        f"Fixed overhead of `probe stream --repeat 1` (whole process, median of 5): {overhead:.2f} s",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
