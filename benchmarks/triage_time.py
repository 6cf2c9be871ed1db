"""``latency-wizard triage`` wall time against the simulator: idle, healthy under load, and the
``kv-pressure`` and ``queue-saturation`` scenarios under load (the issue's bar: the first answer
within 10 s on a quiet machine).

Run on demand: ``python benchmarks/triage_time.py [--runs 3]``. The simulator is pinned to CPU 0
(``_common.start_sim``). Each run is the whole CLI as a
fresh process (what an engineer waits for) with its defaults (3 scrapes 2 s apart), plus the class
it named; the table goes to ``benchmarks/results/triage_time.md``. The load is 8 closed-loop
streams (100 prompt words, 200 tokens) from this script.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
from _common import start_sim

RESULTS = Path(__file__).parent / "results" / "triage_time.md"


def load(url: str, stop: threading.Event) -> None:
    model = httpx.get(url + "/v1/models").json()["data"][0]["id"]

    def stream(index: int) -> None:
        with httpx.Client(timeout=60) as client:
            n = 0
            while not stop.is_set():
                n += 1
                client.post(url + "/v1/completions", json={
                    "model": model, "prompt": f"s{index}n{n} " + "word " * 100,
                    "max_tokens": 200, "ignore_eos": True})  # fmt: skip

    for index in range(8):
        threading.Thread(target=stream, args=(index,), daemon=True).start()


def triage(url: str) -> tuple[float, str]:
    began = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "wizard", "triage", "--target", url, "--json"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    elapsed = time.perf_counter() - began
    return elapsed, json.loads(result.stdout)["class"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = [
        "| server | load | wall time (median) | slowest | class named |",
        "|---|---|---|---|---|",
    ]
    for scenario, loaded in (("healthy", False), ("healthy", True), ("kv-pressure", True),
                             ("queue-saturation", True)):  # fmt: skip
        process, url = start_sim("--scenario", scenario)
        stop = threading.Event()
        try:
            if loaded:
                load(url, stop)
                time.sleep(2.0)
            runs = [triage(url) for _ in range(args.runs)]
        finally:
            stop.set()
            process.terminate()
            process.wait()
        times = [t for t, _ in runs]
        named = ", ".join(sorted({c for _, c in runs}))
        rows.append(f"| {scenario} | {'8 streams' if loaded else 'idle'} | "
                    f"{statistics.median(times):.1f} s | {max(times):.1f} s | {named} |")  # fmt: skip
    text = "\n".join(rows) + "\n"
    print(text, end="")
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
