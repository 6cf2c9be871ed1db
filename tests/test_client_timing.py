"""Where the client's clock starts: the request written out, nothing lazy inside, one connection
per load worker, and a self-check that notices requests held back before they left."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

from tests.conftest import SimProcess
from wizard.probes.http.load import ClientHealth, run_load
from wizard.probes.http.stream import RequestSpec

MODEL = "meta-llama/Llama-3.1-8B-Instruct"

# A fresh interpreter (lazy imports happen once per process) that records when anyio's asyncio
# backend is imported and when the first request was stamped and sent.
FIRST_REQUEST = """
import asyncio, importlib.abc, json, sys, time
stamps = {}
class Watch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "anyio._backends._asyncio":
            stamps["backend_import_ns"] = time.monotonic_ns()
        return None
sys.meta_path.insert(0, Watch())
import httpx
from wizard.probes.http.stream import RequestSpec, measure_stream
async def main():
    async with httpx.AsyncClient() as client:
        return await measure_stream(client, sys.argv[1], RequestSpec(model=sys.argv[2], max_tokens=4))
s = asyncio.run(main())
print(json.dumps({**stamps, "send_ns": s.send_ns, "connect_started_ns": s.connect_started_ns,
                  "connected_ns": s.connected_ns, "wire_ns": s.wire_ns, "ok": s.ok,
                  "body_write_ns": s.body_write_ns,
                  "first_output_ns": s.output_times_ns[0], "ttft_ms": s.ttft_ms}))
"""


def test_first_request_pays_no_lazy_import_and_starts_once_sent(healthy_sim: SimProcess) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FIRST_REQUEST, healthy_sim.url, MODEL],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    first = json.loads(done.stdout)
    assert first["ok"]
    # The backend import is paid before the stamp, not inside the first connect.
    assert first["backend_import_ns"] < first["send_ns"]
    assert (
        first["send_ns"]
        <= first["connect_started_ns"]
        < first["connected_ns"]
        <= first["wire_ns"]
        < first["body_write_ns"]
    )
    # TTFT counts from the request written out, not from the stamp before connecting.
    assert first["ttft_ms"] == (first["first_output_ns"] - first["body_write_ns"]) / 1e6


def test_each_load_worker_owns_one_connection(healthy_sim: SimProcess) -> None:
    spec = RequestSpec(model=MODEL, input_tokens=16, max_tokens=8)
    result = asyncio.run(run_load(healthy_sim.url, spec, concurrency=4, requests=12, warmup=0))
    # Each worker's first request opened its connection: cold, with its connect timed alone;
    # every later one reused it (a shared pool would open, reuse and hand over at random).
    assert len(result.warmup) == 4 and all(s.cold and s.connect_ms for s in result.warmup)
    assert len(result.samples) == 12 and not any(s.cold for s in result.samples)
    assert all(s.ok and s.send_delay_ms is not None for s in result.samples)
    report = result.to_dict()
    assert report["steady_reconnects"] == 0
    assert report["client"]["send_delay_p99_ms"] >= report["client"]["send_delay_p50_ms"] > 0
    assert report["client"]["cpu_s_per_1k_tokens"] > 0


def test_self_check_flags_requests_held_back() -> None:
    held = ClientHealth(1.0, 2.0, 3.0, cpu_fraction=0.3, pool_wait_p99_ms=40.0,
                        send_delay_p50_ms=21.0, send_delay_p99_ms=41.0)  # fmt: skip
    check = held.to_dict()
    assert check["send_delayed"] and not held.saturated and check["cause"] is None
    assert "held its requests back" in check["reason"] and "41.0 ms" in check["reason"]
    # Lag at low CPU is another process holding the core: that reason comes first.
    busy = ClientHealth(9.0, 12.0, 20.0, cpu_fraction=0.3, send_delay_p50_ms=21.0)
    assert busy.contended and "share this machine's cores" in busy.to_dict()["reason"]
    # A full core with the loop late against its idle floor is saturation whatever else was seen.
    full = ClientHealth(9.0, 12.0, 20.0, cpu_fraction=0.95, send_delay_p50_ms=21.0,
                        loop_lag_floor_ms=1.0)  # fmt: skip
    assert full.to_dict()["cause"] == "client_saturated"
    quiet = ClientHealth(1.0, 2.0, 3.0, cpu_fraction=0.3, send_delay_p50_ms=0.8)
    assert not quiet.to_dict()["send_delayed"] and quiet.to_dict()["reason"] is None
