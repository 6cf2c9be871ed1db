"""Healthy servers give no cause: N whole walks, optionally with one core kept busy meanwhile.

    python benchmarks/healthy_walks.py --walks 10 --hog          # the simulator, one core busy
    python benchmarks/healthy_walks.py --walks 10 --target http://127.0.0.1:8000 --vllm-log LOG

Goal (issue: verdicts an engineer can trust): no cause in 10 of 10 walks with one core busy.
Every walk's causes are printed; the last line is the count of walks with none.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import server_under_load
from wizard.record import transcript


def one_walk(url: str, workdir: Path, number: int, log: str | None) -> tuple[set[str], list[str]]:
    """The causes a walk found, and the rules it could not judge (its client was contended)."""
    answers = workdir / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    path = workdir / f"walk-{number}.ndjson"
    command = [sys.executable, "-m", "wizard", "run", "--target", url, "--answers", str(answers),
               "--transcript", str(path)]  # fmt: skip
    if log:
        command += ["--vllm-log", log]
    subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    events = transcript.load(path).events
    return {e["data"]["cause"] for e in events if e["type"] == "finding"}, sorted(
        {e["data"]["code"] for e in events if e["type"] == "inconclusive"}
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--walks", type=int, default=10)
    parser.add_argument("--hog", action="store_true", help="keep one core busy meanwhile")
    parser.add_argument("--target", help="walk this server instead of a fresh simulator")
    parser.add_argument("--vllm-log", help="the target's log, given to every walk")
    args = parser.parse_args()
    clean = 0
    with server_under_load(args.target, args.hog) as url, tempfile.TemporaryDirectory() as tmp:
        for number in range(args.walks):
            found, unjudged = one_walk(url, Path(tmp), number, args.vllm_log)
            clean += not found
            said = f"; inconclusive: {', '.join(unjudged)}" if unjudged else ""
            print(f"walk {number + 1}: {sorted(found) or 'no cause'}{said}", flush=True)
    print(f"\n{clean} of {args.walks} walks found no cause "
          f"({'with' if args.hog else 'without'} a busy core)")  # fmt: skip


if __name__ == "__main__":
    main()
