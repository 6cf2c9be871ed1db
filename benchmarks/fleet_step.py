"""Benchmark: the fleet step (``probe fleet``) over 16 and 64 replicas through a real Prometheus.

Sixty-four simulators do not fit on two cores, so each replica here is a fake exporter: vLLM's
families in the exposition format, counters growing at a fixed rate per replica (so ``increase()``
over the window sees traffic), one replica queueing (its queue-time and TTFT observations fall in
higher buckets). One process serves every replica on its own loopback port; Prometheus (Debian's
package) scrapes them every second. Measured: the wall time of ``latency-wizard probe fleet
--json`` as a subprocess (start-up included, as an engineer runs it), its peak RSS, whether it
named the queueing replica, and the size of its report.

    PYTHONPATH=. python benchmarks/fleet_step.py --replicas 16 64 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.prometheus_server import start_prometheus
from wizard.sim.metrics import ITL_BUCKETS, PHASE_BUCKETS, TTFT_BUCKETS

STARTED = time.monotonic()


def _histogram(name: str, bounds: tuple[float, ...], per_s: float, at_s: float, t: float) -> str:
    """A histogram whose observations (``per_s`` a second) all land at ``at_s``."""
    labels = 'engine="0",model_name="m"'
    lines = [f"# TYPE {name} histogram"]
    for bound in bounds:
        count = per_s * t if at_s <= bound else 0.0
        lines.append(f'{name}_bucket{{{labels},le="{bound}"}} {count}')
    lines.append(f'{name}_bucket{{{labels},le="+Inf"}} {per_s * t}')
    lines.append(f"{name}_count{{{labels}}} {per_s * t}")
    lines.append(f"{name}_sum{{{labels}}} {per_s * t * at_s}")
    return "\n".join(lines)


def exposition(queueing: bool) -> str:
    """This replica's /metrics now: counters grow with time since the exporter started."""
    t = time.monotonic() - STARTED
    labels = 'engine="0",model_name="m"'
    queue_s, ttft_s = (0.8, 0.9) if queueing else (0.0005, 0.05)
    return "\n".join([
        "# TYPE vllm:num_requests_running gauge", f"vllm:num_requests_running{{{labels}}} 4",
        "# TYPE vllm:num_requests_waiting gauge",
        f"vllm:num_requests_waiting{{{labels}}} {6 if queueing else 0}",
        "# TYPE vllm:kv_cache_usage_perc gauge", f"vllm:kv_cache_usage_perc{{{labels}}} 0.3",
        "# TYPE vllm:num_preemptions_total counter", f"vllm:num_preemptions_total{{{labels}}} 0",
        "# TYPE vllm:request_success_total counter",
        f'vllm:request_success_total{{{labels},finished_reason="length"}} {4 * t}',
        _histogram("vllm:time_to_first_token_seconds", TTFT_BUCKETS, 4, ttft_s, t),
        _histogram("vllm:inter_token_latency_seconds", ITL_BUCKETS, 400, 0.013, t),
        _histogram("vllm:request_queue_time_seconds", PHASE_BUCKETS, 4, queue_s, t),
    ]) + "\n"  # fmt: skip


def serve(replicas: int) -> list[ThreadingHTTPServer]:
    """One HTTP server per replica (replica 0 queues), each on its own thread."""
    servers = []
    for index in range(replicas):

        class Handler(BaseHTTPRequestHandler):
            queueing = index == 0

            def do_GET(self) -> None:
                body = exposition(self.queueing).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    return servers


def measure(prometheus: str, queueing: str) -> dict[str, float | bool | int]:
    """One ``probe fleet`` run as a subprocess: wall time, what it named, its report's size."""
    began = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "wizard", "probe", "fleet", "--prometheus", prometheus,
         "--window", "30s", "--json"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    wall = time.monotonic() - began
    if result.returncode not in (0, 1):
        raise SystemExit(f"probe fleet failed ({result.returncode}): {result.stderr[-500:]}")
    report = json.loads(result.stdout)
    return {
        "wall_s": round(wall, 2),
        "differing": report["differing"] == [queueing],
        "causes": report["causes"],
        "replicas_read": report["replica_count"],
        "report_kib": len(result.stdout) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for count in args.replicas:
        servers = serve(count)
        targets = [f"127.0.0.1:{s.server_address[1]}" for s in servers]
        with tempfile.TemporaryDirectory() as workdir:
            prometheus = start_prometheus(Path(workdir), {"vllm": targets})
            try:
                prometheus.wait_scraped(set(targets), timeout_s=60)
                time.sleep(20)  # 20 scrapes of every replica in the window
                runs = [measure(prometheus.url, targets[0]) for _ in range(args.repeats)]
            finally:
                prometheus.stop()
                for server in servers:
                    server.shutdown()
        # ru_maxrss of children: the largest probe process so far (each count's runs included).
        peak_mib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        print(
            json.dumps({"replicas": count, "peak_rss_mib_so_far": round(peak_mib, 1), "runs": runs})
        )


if __name__ == "__main__":
    main()
