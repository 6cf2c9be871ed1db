"""Client timing accuracy, side by side with a raw-socket floor, against the simulator's ground truth.

Run on demand: ``python benchmarks/client_accuracy.py [--streams 1 16 64]``. The simulator is pinned
to CPU 0, each client pass runs in a fresh process pinned to CPU 1 (so its first request is a
process's first request, lazy imports and all). Ground truth is the simulator's record, on the same
CLOCK_MONOTONIC, of when each request reached the engine and when each token's bytes were handed
to the socket (``/sim/trace`` ``arrival_ns`` and ``sent_ns``): true TTFT = first ``sent_ns`` minus
``arrival_ns``. A client's TTFT error is the TTFT it reports minus the true one; the server-side
part of that error (parsing the request before the engine sees it) is the same for every client,
which is what the floor shows.

Two clients (``--stock-loop``: both on asyncio's own loop instead of uvloop), each with one
connection per stream, the first request on each connection cold and
the rest warm:
- ``wizard``: ``probe load``'s code (``run_load``), its own TTFT, ITL and CPU;
- ``floor``: a minimal client on raw asyncio transports that stamps just before its one write and
  again when the first event's bytes arrive: no HTTP library, no parsing beyond finding them.
Also reported: client CPU seconds per 1,000 output tokens, and the fixed overhead of
``probe stream --repeat 1`` as a whole process. Results go to ``benchmarks/results/client_accuracy.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
REQUEST_ID = re.compile(rb'"id":\s*"([^"]+)"')


def body(tokens: int) -> bytes:
    from wizard.probes.http.stream import RequestSpec

    return json.dumps(RequestSpec(model=MODEL, input_tokens=16, max_tokens=tokens).body()).encode()


class _FloorStream(asyncio.Protocol):
    """One keep-alive connection: write a request, stamp the first event, wait for the chunked end."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.first_event_ns: int | None = None
        self.done: asyncio.Future[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no asyncio.Transport

    def data_received(self, data: bytes) -> None:
        now = time.monotonic_ns()
        self.buffer += data
        if self.first_event_ns is None and b"data: {" in self.buffer:
            self.first_event_ns = now
        if self.buffer.endswith(b"\r\n0\r\n\r\n") and self.done and not self.done.done():
            self.done.set_result(None)

    async def request(self, *writes: bytes) -> tuple[int, int, bytes]:
        assert self.transport is not None
        self.buffer.clear()
        self.first_event_ns = None
        self.done = asyncio.get_running_loop().create_future()
        sent = time.monotonic_ns()
        for data in writes:
            self.transport.write(data)
        await self.done
        assert self.first_event_ns is not None
        return sent, self.first_event_ns, bytes(self.buffer)


async def floor_pass(
    url: str, streams: int, per_stream: int, tokens: int, split: bool = False
) -> dict[str, Any]:
    host, port = url.removeprefix("http://").split(":")
    payload = body(tokens)
    head = (
        f"POST /v1/completions HTTP/1.1\r\nhost: {host}:{port}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(payload)}\r\n\r\n"
    ).encode()
    # ``split``: headers and body as two writes, as h11 sends them.
    writes = (head, payload) if split else (head + payload,)
    loop = asyncio.get_running_loop()
    samples: list[dict[str, Any]] = []

    async def worker() -> None:
        connect = time.monotonic_ns()
        _, stream = await loop.create_connection(_FloorStream, host, int(port))
        connected = time.monotonic_ns()
        for index in range(per_stream):
            sent, first, response = await stream.request(*writes)
            match = REQUEST_ID.search(response)
            samples.append({
                "request_id": match.group(1).decode() if match else None,
                "ttft_ms": (first - sent) / 1e6, "cold": index == 0,
                "connect_ms": (connected - connect) / 1e6 if index == 0 else None,
            })  # fmt: skip
        assert stream.transport is not None
        stream.transport.close()

    await asyncio.gather(*(worker() for _ in range(streams)))
    return {"samples": samples, "tokens": streams * per_stream * tokens}


async def wizard_pass(url: str, streams: int, per_stream: int, tokens: int) -> dict[str, Any]:
    from wizard.probes.http.load import run_load
    from wizard.probes.http.stream import RequestSpec

    spec = RequestSpec(model=MODEL, input_tokens=16, max_tokens=tokens)
    result = await run_load(
        url, spec, concurrency=streams, requests=streams * (per_stream - 1), timeout_s=300
    )
    samples = [
        {
            "request_id": s.request_id,
            "ttft_ms": s.ttft_ms,
            "cold": cold,
            "connect_ms": s.connect_ms,
            "output_times_ns": list(s.output_times_ns),
        }
        for cold, group in ((True, result.warmup), (False, result.samples))
        for s in group
        if s.ok
    ]
    return {
        "samples": samples,
        "tokens": result.health.output_tokens,
        "client": result.health.to_dict(),
    }


def one_pass(
    client: str, url: str, streams: int, per_stream: int, tokens: int, out: str, stock: bool
) -> None:
    """Run in a fresh process: one client's pass; writes its samples and CPU as JSON to ``out``."""
    import psutil

    from wizard.probes.http import load  # noqa: F401  (imports are start-up, not the client's per-token cost)
    from wizard.ui import aio

    process = psutil.Process()
    cpu_before = sum(process.cpu_times()[:2])
    if client == "wizard":
        result = aio.run(wizard_pass(url, streams, per_stream, tokens))
    else:
        result = aio.run(
            floor_pass(url, streams, per_stream, tokens, split=client == "floor-split")
        )
    result["cpu_s"] = sum(process.cpu_times()[:2]) - cpu_before
    Path(out).write_text(json.dumps(result))


def measure(
    client: str, url: str, streams: int, per_stream: int, tokens: int, stock: bool = False
) -> dict[str, Any]:
    import httpx

    from wizard.measure import percentile

    httpx.delete(url + "/sim/trace")
    pin = ["taskset", "-c", "1"] if shutil.which("taskset") and (os.cpu_count() or 1) > 1 else []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "pass.json"
        command = [*pin, sys.executable, __file__, "--one", client, url, str(streams),
                   str(per_stream), str(tokens), str(out), "stock" if stock else "uvloop"]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"{client} pass failed:\n{done.stderr[-2000:]}")
        result = json.loads(out.read_text())
    trace = {
        r["request_id"]: r for r in httpx.get(url + "/sim/trace", timeout=60).json()["requests"]
    }
    errors: dict[bool, list[float]] = {True: [], False: []}
    itl_err: list[float] = []
    connects = []
    for sample in result["samples"]:
        truth = trace.get(sample["request_id"] or "")
        if truth is None or not truth["sent_ns"]:
            continue
        sent = truth["sent_ns"]
        errors[sample["cold"]].append(sample["ttft_ms"] - (sent[0] - truth["arrival_ns"]) / 1e6)
        if sample.get("connect_ms") is not None:
            connects.append(sample["connect_ms"])
        times = sample.get("output_times_ns")
        if times and len(times) == len(sent) and not sample["cold"]:
            client_gaps = [b - a for a, b in itertools.pairwise(times)]
            server_gaps = [b - a for a, b in itertools.pairwise(sent)]
            itl_err.extend((c - s) / 1e6 for c, s in zip(client_gaps, server_gaps, strict=True))
    cold, warm = errors[True], errors[False]
    row = {
        "client": client, "streams": streams, "cold_n": len(cold), "warm_n": len(warm),
        "cold_p50": percentile(cold, 50), "cold_max": max(cold, default=None),
        "warm_p50": percentile(warm, 50), "warm_p99": percentile(warm, 99),
        "itl_p50": percentile(itl_err, 50), "itl_p99": percentile(itl_err, 99),
        "connect_p50": percentile(connects, 50),
        "cpu_per_1k": result["cpu_s"] / result["tokens"] * 1000 if result["tokens"] else None,
        "self_check": result.get("client"),
    }  # fmt: skip
    return row


def fixed_overhead(url: str, repeat: int) -> float:
    command = [sys.executable, "-m", "wizard", "probe", "stream", "--target", url, "--repeat", "1",
               "--max-tokens", "1", "--model", MODEL]  # fmt: skip
    walls = []
    for _ in range(repeat):
        began = time.monotonic()
        subprocess.run(command, capture_output=True, check=True)
        walls.append(time.monotonic() - began)
    return statistics.median(walls)


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--per-stream", type=int, default=0,
                        help="requests per connection (default: 40 at 1 stream, 8 at 16, 4 at 64)")  # fmt: skip
    parser.add_argument("--repeat", type=int, default=1, help="passes per client and stream count")
    parser.add_argument(
        "--stock-loop", action="store_true", help="asyncio's loop instead of uvloop, both clients"
    )
    parser.add_argument(
        "--out", default=str(Path(__file__).parent / "results" / "client_accuracy.md")
    )
    args = parser.parse_args()
    from _common import start_sim

    process, url = start_sim()
    rows = []
    try:
        for streams in args.streams:
            per_stream = args.per_stream or {1: 40, 16: 8}.get(streams, 4)
            for _, client in itertools.product(range(args.repeat), ("floor", "wizard")):
                row = measure(client, url, streams, per_stream, args.tokens, args.stock_loop)
                rows.append(row)
                print({k: v for k, v in row.items() if k != "self_check"}, flush=True)
        overhead = fixed_overhead(url, 5)
    finally:
        process.terminate()
        process.wait()
    lines = [
        f"# Client accuracy ({time.strftime('%Y-%m-%d')}; {args.tokens} output tokens per request; "
        f"simulator on CPU 0, each client pass a fresh process on CPU 1, client loop "
        f"{'asyncio stock' if args.stock_loop else 'uvloop'}; TTFT error = the client's "
        "TTFT minus the simulator's first-token send time less its arrival time)",
        "",
        "| streams | client | cold n | cold TTFT error p50 / max (ms) | warm n | warm TTFT error "
        "p50 / p99 (ms) | warm ITL error p50 / p99 (ms) | connect p50 (ms) | client CPU s per 1k "
        "tokens | self-check |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        check = r["self_check"]
        verdict = "-"
        if check is not None:
            flags = [check["cause"], "contended" if check["contended"] else None,
                     "send_delayed" if check["send_delayed"] else None]  # fmt: skip
            verdict = ", ".join(f for f in flags if f) or "ok"
            verdict += (
                f" (send delay p50 {check['send_delay_p50_ms']:.1f} / p99 "
                f"{check['send_delay_p99_ms']:.1f} ms, CPU {check['cpu_fraction']:.0%})"
            )
        lines.append(
            f"| {r['streams']} | {r['client']} | {r['cold_n']} | {_f(r['cold_p50'])} / "
            f"{_f(r['cold_max'])} | {r['warm_n']} | {_f(r['warm_p50'])} / {_f(r['warm_p99'])} | "
            f"{_f(r['itl_p50'])} / {_f(r['itl_p99'])} | {_f(r['connect_p50'])} | "
            f"{_f(r['cpu_per_1k'], 3)} | {verdict} |"
        )
    lines += [
        "",
        f"Fixed overhead of `probe stream --repeat 1` (whole process, median of 5): {overhead:.2f} s",
    ]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        client, url, streams, per_stream, tokens, out, loop = sys.argv[2:9]
        one_pass(client, url, int(streams), int(per_stream), int(tokens), out, loop == "stock")
    else:
        main()
