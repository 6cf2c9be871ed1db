"""The long fuzz run (issue #15): every fuzz property, many examples, in several processes.

Run on demand: ``python benchmarks/fuzz_long.py [--examples 10000] [--jobs 2] [--out DIR]``.
Each property of ``tests/test_fuzz_readers.py`` and ``tests/test_fuzz_transcripts.py`` is split
into chunks of ``--chunk`` examples, each chunk a pytest process with its own random hypothesis
seed; the chunks run round-robin over the properties, ``--jobs`` at a time, so a run stopped early
has still covered every property. Each process is watched from inside (this file is also its pytest
plugin): hypothesis reports every example it runs, and the plugin counts them, keeps the longest
example's wall and CPU time, dumps the stacks and ends the process when one example runs past
``--hang`` seconds, and records the process's peak RSS (an upper bound on any one example's
memory) under an address-space limit, so a blow-up fails as a MemoryError instead of swapping a
shared machine. Results go to ``DIR/chunks.jsonl`` as each chunk ends, a failing chunk's pytest
output to ``DIR/<property>-<seed>.log`` (with the command that replays it); the table at the end
is ``--summarise DIR`` of that file, which also works on a run that was stopped.
"""

from __future__ import annotations

import argparse
import faulthandler
import functools
import itertools
import json
import os
import resource
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODULES = ("tests.test_fuzz_readers", "tests.test_fuzz_transcripts")
OBSERVE_ENV = "WIZARD_FUZZ_OBSERVE"  # where a chunk's plugin writes its figures
HANG_ENV = "WIZARD_FUZZ_HANG_S"
CPU_BOUND_ENV = "WIZARD_FUZZ_CPU_BOUND_S"
ADDRESS_SPACE_LIMIT = 4 << 30  # bytes; the goal is a peak RSS under 1 GiB
ONE_GIB_KB = 1 << 20
RUNNING: set[subprocess.Popen[str]] = set()  # chunks in flight, ended with the run


# -- the run ---------------------------------------------------------------------------------------


def properties() -> list[str]:
    """pytest node ids of every hypothesis property in the fuzz modules."""
    import importlib

    sys.path.insert(0, str(ROOT))
    found = []
    for name in MODULES:
        module = importlib.import_module(name)
        path = Path(module.__file__ or "").relative_to(ROOT)
        found += [
            f"{path}::{attr}"
            for attr, obj in vars(module).items()
            if attr.startswith("test_") and getattr(obj, "is_hypothesis_test", False)
        ]
    return found


def run_chunk(
    node: str, examples: int, seed: int, out: Path, hang_s: float, cpu_bound_s: float
) -> dict[str, Any]:
    """One pytest process: ``examples`` examples of ``node`` from ``seed``; its figures."""
    name = node.rpartition("::")[2]
    observed = out / f"{name}-{seed}.json"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:timeout",
               "-p", "fuzz_long", node, f"--hypothesis-seed={seed}"]  # fmt: skip
    env = os.environ | {
        "WIZARD_FUZZ_EXAMPLES": str(examples),
        OBSERVE_ENV: str(observed),
        HANG_ENV: str(hang_s),
        CPU_BOUND_ENV: str(cpu_bound_s),
        "WIZARD_FUZZ_DEADLINE_S": "0",  # wall time is the load's; the plugin bounds CPU time
        "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)]),
    }
    started = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, preexec_fn=_limit_address_space)  # fmt: skip
    RUNNING.add(process)
    stdout, stderr = process.communicate()
    RUNNING.discard(process)
    figures = json.loads(observed.read_text()) if observed.exists() else {}
    observed.unlink(missing_ok=True)
    row = {"property": name, "seed": seed, "asked": examples, "exit": process.returncode,
           "wall_s": round(time.monotonic() - started, 1), **figures}  # fmt: skip
    if process.returncode != 0:
        log = out / f"{name}-{seed}.log"
        replay = " ".join(f"{k}={v}" for k, v in env.items() if k not in os.environ)
        replay += " python " + " ".join(command[1:])
        log.write_text(f"replay: {replay}\n\n{stdout}\n{stderr}")
        row["log"] = log.name
    return row


def _limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_LIMIT, ADDRESS_SPACE_LIMIT))


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    nodes = [n for n in properties() if not args.only or any(k in n for k in args.only)]
    per_property = dict(item.split("=", 1) for item in args.per_property)
    rounds = []  # chunk after chunk, one property after another
    for node in nodes:
        total = int(per_property.get(node.rpartition("::")[2], args.examples))
        sizes = [args.chunk] * (total // args.chunk) + (
            [total % args.chunk] if total % args.chunk else []
        )
        rounds.append([(node, size) for size in sizes])
    chunks = [c for batch in itertools.zip_longest(*rounds) for c in batch if c is not None]
    seeds = iter(range(args.first_seed, args.first_seed + len(chunks)))
    signal.signal(signal.SIGTERM, _stopped)
    pool = ThreadPoolExecutor(args.jobs)
    futures = [pool.submit(run_chunk, node, size, next(seeds), out, args.hang, args.cpu_bound)
               for node, size in chunks]  # fmt: skip
    try:
        with (out / "chunks.jsonl").open("a") as log:
            for future in futures:
                row = future.result()
                log.write(json.dumps(row) + "\n")
                log.flush()
                print(json.dumps(row), flush=True)
    except KeyboardInterrupt:
        print("stopped: the chunks that ended are in the table", flush=True)
    finally:  # stopped (Ctrl-C, SIGTERM) or done: no chunk outlives the run
        pool.shutdown(wait=False, cancel_futures=True)
        for process in list(RUNNING):
            process.kill()
    summarise(out)


def _stopped(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def summarise(out: Path) -> None:
    """The table of a run (finished or not) from its chunks.jsonl."""
    rows = [json.loads(line) for line in (out / "chunks.jsonl").read_text().splitlines() if line]
    table: dict[str, dict[str, Any]] = {}
    for row in rows:
        agg = table.setdefault(row["property"], {"chunks": 0, "examples": 0, "failed_chunks": 0,
                                                 "max_wall_s": 0.0, "max_cpu_s": 0.0,
                                                 "max_rss_mib": 0.0, "slowest": ""})  # fmt: skip
        agg["chunks"] += 1
        agg["examples"] += row.get("examples", 0)
        agg["failed_chunks"] += row["exit"] != 0
        agg["max_rss_mib"] = max(agg["max_rss_mib"], row.get("max_rss_kb", 0) / 1024)
        agg["max_cpu_s"] = max(agg["max_cpu_s"], row.get("max_cpu_s", 0.0))
        if row.get("max_wall_s", 0.0) >= agg["max_wall_s"]:
            agg["max_wall_s"], agg["slowest"] = row.get("max_wall_s", 0.0), f"seed {row['seed']}"
    print(
        "| property | chunks | examples | failed chunks | longest example (wall / CPU) | peak RSS |"
    )
    print("|---|---|---|---|---|---|")
    for name, agg in sorted(table.items()):
        print(f"| {name} | {agg['chunks']} | {agg['examples']:,} | {agg['failed_chunks']} | "
              f"{agg['max_wall_s']:.2f} s / {agg['max_cpu_s']:.2f} s ({agg['slowest']}) | "
              f"{agg['max_rss_mib']:.0f} MiB |")  # fmt: skip
    total = sum(agg["examples"] for agg in table.values())
    failed = [row.get("log", row["property"]) for row in rows if row["exit"] != 0]
    over = [row["property"] for row in rows if row.get("max_rss_kb", 0) > ONE_GIB_KB]
    print(f"\n{total:,} examples in {len(rows)} chunks; failed chunks: {failed or 'none'}; "
          f"peak RSS over 1 GiB: {over or 'none'}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=10_000, help="examples per property")
    parser.add_argument("--per-property", nargs="*", default=[], metavar="NAME=N",
                        help="another count for one property (e.g. a slow one)")  # fmt: skip
    parser.add_argument("--chunk", type=int, default=1000, help="examples per process")
    parser.add_argument("--jobs", type=int, default=2, help="processes at a time")
    parser.add_argument("--only", nargs="*", default=[], help="properties whose id contains these")
    parser.add_argument(
        "--hang", type=float, default=60.0, help="seconds before one example is a hang"
    )
    parser.add_argument(
        "--cpu-bound", type=float, default=5.0, help="CPU seconds one example may take"
    )
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--out", default="fuzz-long")
    parser.add_argument("--summarise", metavar="DIR", help="only print the table of a run")
    args = parser.parse_args()
    if args.summarise:
        summarise(Path(args.summarise))
    else:
        run(args)


# -- the plugin inside each chunk's pytest process (``-p fuzz_long``) ------------------------------

_figures: dict[str, Any] = {"examples": 0, "max_wall_s": 0.0, "max_cpu_s": 0.0}


class SlowExampleError(AssertionError):
    """One example took more CPU time than the bound (hypothesis shrinks it like any failure)."""


def _observed(observation: Any) -> None:
    """Hypothesis ran one example: count it, keep the longest, re-arm the hang watchdog."""
    if observation.type != "test_case" or observation.status == "gave_up":
        return
    _figures["examples"] += 1
    wall = observation.timing.get("execute:test", 0.0)
    _figures["max_wall_s"] = max(_figures["max_wall_s"], round(wall, 3))
    faulthandler.dump_traceback_later(float(os.environ[HANG_ENV]), exit=True)


def _timed(inner: Any) -> Any:
    """The test body, its CPU time kept and bounded (wall time on a shared machine is noise)."""
    bound = float(os.environ[CPU_BOUND_ENV])

    @functools.wraps(inner)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        result = inner(*args, **kwargs)
        cpu = time.process_time() - started
        _figures["max_cpu_s"] = max(_figures["max_cpu_s"], round(cpu, 3))
        if cpu > bound:
            raise SlowExampleError(f"one example took {cpu:.2f} s of CPU time (bound {bound:g} s)")
        return result

    return timed


def pytest_addoption(parser: Any) -> None:
    # pytest-timeout is off in a chunk (its 600 s per test would end a long property); the
    # watchdog above bounds each example instead. Its setting and marks must still be known.
    parser.addini("timeout", "pytest-timeout's, unused here")


def pytest_configure(config: Any) -> None:
    from hypothesis.internal import observability
    from hypothesis.internal.observability import add_observability_callback

    config.addinivalue_line("markers", "timeout(seconds): pytest-timeout's, unused here")
    # Observing examples (to count them) makes hypothesis trace every line of every example for
    # coverage (sys.settrace on 3.11: many times slower in pure-Python code such as PyYAML's
    # scanner), so the CPU bound measured the tracer: an answers file read in 0.3 s took 8.7 s.
    # Hypothesis supports patching this attribute (core.StateForActualGivenExecution).
    observability.OBSERVABILITY_COLLECT_COVERAGE = False
    add_observability_callback(_observed)
    faulthandler.dump_traceback_later(float(os.environ[HANG_ENV]) * 5, exit=True)  # collection


def pytest_runtest_call(item: Any) -> None:
    handle = item.obj.hypothesis  # hypothesis calls this attribute for each example
    handle.inner_test = _timed(handle.inner_test)


def pytest_unconfigure(config: Any) -> None:
    faulthandler.cancel_dump_traceback_later()
    _figures["max_rss_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    Path(os.environ[OBSERVE_ENV]).write_text(json.dumps(_figures))


if __name__ == "__main__":
    main()
