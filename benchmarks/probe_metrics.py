"""``probe metrics`` wall time against the simulator, idle and under load.

Run on demand: ``python benchmarks/probe_metrics.py [--runs 15]``. The simulator is pinned to CPU 0.
Reports medians of: the whole CLI (``latency-wizard probe metrics --target URL --json`` as a fresh
process, what an engineer waits for), one in-process scrape + parse (what a walk round pays per
scrape), and the size of the /metrics text. "Under load" runs 32 streams against the simulator
while measuring, so the scrape competes with token streaming as it does during a walk round.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import threading
import time

import httpx
from _common import start_sim

from wizard.probes.readers.metrics import scrape


def cli_seconds(url: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "wizard", "probe", "metrics", "--target", url, "--json"],
                   check=True, capture_output=True)  # fmt: skip
    return time.perf_counter() - began


async def scrape_seconds(url: str, runs: int) -> list[float]:
    times = []
    async with httpx.AsyncClient() as client:
        for _ in range(runs):
            began = time.perf_counter()
            await scrape(client, url)
            times.append(time.perf_counter() - began)
    return times


def background_load(url: str, stop: threading.Event) -> None:
    def stream() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                client.post(url + "/v1/completions", json={"prompt": "x " * 64, "max_tokens": 128,
                                                           "ignore_eos": True, "stream": True})  # fmt: skip

    for _ in range(32):
        threading.Thread(target=stream, daemon=True).start()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    process, url = start_sim()
    try:
        size = len(httpx.get(url + "/metrics").content)
        print(f"/metrics text: {size:,} bytes")
        print("| condition | CLI wall time (median) | scrape + parse in process (median) |")
        print("|---|---|---|")
        for label in ("idle", "32 streams"):
            stop = threading.Event()
            if label != "idle":
                background_load(url, stop)
                time.sleep(1.0)
            cli = statistics.median(cli_seconds(url) for _ in range(args.runs))
            inproc = statistics.median(asyncio.run(scrape_seconds(url, args.runs * 4)))
            stop.set()
            print(f"| {label} | {cli * 1000:.0f} ms | {inproc * 1000:.1f} ms |")
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()
