"""Log parsing throughput and peak memory on a large generated vLLM log.

Run on demand: ``python benchmarks/vllm_log_parse.py [--mb 200] [--restart-every-mb 1] [--log PATH]``.
Writes a log of about that size (0.34-style start-up lines, then stats lines and chatter repeated;
with ``--restart-every-mb`` the start-up lines again every so many MB, as a server in a restart
loop leaves; with ``--log`` to PATH, or reads PATH when it exists, so runs can share one log),
parses it with the same code as ``probe vllm-log`` (``read_text``) and prints MB/s by the wall
clock and by the process's CPU time (less sensitive to a shared machine), its peak RSS before and
after, and the size of the JSON report.
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

from wizard.probes.readers.vllm_log import read_text

HEADER = (
    "(APIServer pid=9) INFO 12-02 10:00:00 [utils.py:96] non-default args: {'model': 'm'}\n"
    "(EngineCore pid=10) INFO 12-02 10:00:01 [core.py:154] Initializing a V1 LLM engine (v0.34.0) with config: "
    "model='m', max_seq_len=8192, tensor_parallel_size=1, pipeline_parallel_size=1, enforce_eager=False\n"
    "(EngineCore pid=10) INFO 12-02 10:00:09 [kv_cache_utils.py:1169] GPU KV cache size: 461,184 tokens, "
    "Maximum concurrency for 8,192 tokens per request: 56.30x\n"
)
BODY = (
    "(APIServer pid=9) INFO 12-02 10:00:30 [loggers.py:270] Engine 000: Avg prompt throughput: 80.0 tokens/s, "
    "Avg generation throughput: 160.0 tokens/s, Running: 6 reqs, Waiting: 2 reqs, Preemptions: 1, GPU KV cache usage: 91.0%\n"
    "(APIServer pid=9) INFO 12-02 10:00:31 [logger.py:40] Received request cmpl-1234: prompt: 'a b c', params: ...\n"
    '(APIServer pid=9) INFO:     127.0.0.1:51234 - "POST /v1/completions HTTP/1.1" 200 OK\n'
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200)
    parser.add_argument("--restart-every-mb", type=float, default=0.0)
    parser.add_argument("--log", type=Path, help="the log to parse (written first if missing)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.log or Path(tmp) / "vllm.log"
        if not path.exists():
            write_log(path, args.mb, args.restart_every_mb)
        size_mb = path.stat().st_size / 1024 / 1024
        before = resource.getrusage(resource.RUSAGE_SELF)
        began = time.monotonic()
        with path.open(encoding="utf-8", errors="replace") as handle:
            report = read_text(handle)
        seconds = time.monotonic() - began
        after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    output_mb = len(json.dumps(report)) / 1024 / 1024
    print(f"{size_mb:.0f} MB, {report['lines']:,} lines, {report['runs_total']:,} runs, "
          f"{report['stats_total']:,} stats lines in the last: {seconds:.1f} s = {size_mb / seconds:.1f} MB/s; "
          f"CPU {cpu:.1f} s = {size_mb / cpu:.1f} MB/s; peak RSS {before.ru_maxrss / 1024:.0f} MB before, "
          f"{after.ru_maxrss / 1024:.0f} MB after; JSON report {output_mb:.2f} MB")  # fmt: skip


def write_log(path: Path, mb: int, restart_every_mb: float) -> None:
    with path.open("w") as out:
        out.write(HEADER)
        block = BODY * 2000
        every = restart_every_mb * 1024 * 1024
        next_restart = every
        while out.tell() < mb * 1024 * 1024:
            out.write(block)
            if every and out.tell() >= next_restart:
                out.write(HEADER)
                next_restart += every


if __name__ == "__main__":
    main()
