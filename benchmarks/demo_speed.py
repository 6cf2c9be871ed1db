"""How long README's first command takes to its proven answer, and how many requests it sends.

    python benchmarks/demo_speed.py --runs 3            # a quiet machine
    python benchmarks/demo_speed.py --runs 3 --hog      # one core kept busy by another process
    python benchmarks/demo_speed.py --rounds full       # `demo --rounds full` (default: the demo's own)

Goal (issue: a sequential, bounded measurement engine): <= 30 s quiet, <= 60 s with one core busy.
Each run is `latency-wizard demo --auto` (every question answered by its default); the requests
are counted from its transcript (every measured round's requests, warm-ups included, and every
LoadGen query). Results go to benchmarks/results/demo_speed.md by hand, with the machine's load.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import _hog
from wizard.record import transcript


def requests_sent(path: Path) -> int:
    """Every request the walk's rounds and LoadGen runs sent, from the transcript's probe results."""
    sent = 0
    for event in transcript.load(path).events:
        if event["type"] != "probe_result" or event["data"].get("error"):
            continue
        facts = event["data"].get("facts") or {}
        for part in ("steady", "cold"):
            sent += int((facts.get(part) or {}).get("requests") or 0)
        sent += int(facts.get("queries") or 0)
    return sent


DEMO_DEFAULT = "none given (the demo's own default)"


def one_run(workdir: Path, number: int, rounds: str | None) -> tuple[float, int, int]:
    path = workdir / f"demo-{number}.ndjson"
    began = time.monotonic()
    command = [sys.executable, "-m", "wizard", "demo", "--auto", "--transcript", str(path),
               *(["--rounds", rounds] if rounds else [])]  # fmt: skip
    # README's command as a user runs it: no depth from the environment either.
    env = {k: v for k, v in os.environ.items() if k != "LATENCY_WIZARD_ROUNDS"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False,
                            env=env)  # fmt: skip
    return time.monotonic() - began, result.returncode, requests_sent(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--rounds", choices=["full", "brief"],
                        help="default: none given, the demo's own (brief)")  # fmt: skip
    args = parser.parse_args()
    hogger = None
    if args.hog:
        hogger = multiprocessing.Process(target=_hog, args=(time.monotonic() + 7200,), daemon=True)
        hogger.start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            times = []
            for number in range(args.runs):
                seconds, code, sent = one_run(Path(folder), number, args.rounds)
                times.append(seconds)
                print(f"run {number + 1}: {seconds:.1f} s, exit {code}, {sent} requests, "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
            print(f"median {statistics.median(times):.1f} s over {len(times)} runs"
                  + (" (one core busy)" if args.hog else "") + f", --rounds {args.rounds or DEMO_DEFAULT}")  # fmt: skip
    finally:
        if hogger is not None:
            hogger.terminate()


if __name__ == "__main__":
    main()
