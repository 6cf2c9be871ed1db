"""A real Prometheus (Debian's ``prometheus`` package) on loopback, for tests and benchmarks.

Its config and storage live in a temporary folder; it scrapes the given targets every second, and
it is stopped by its PID. Without the binary the tests skip with the reason, and fail under
``WIZARD_REQUIRE_PROMETHEUS=1`` (CI installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
import yaml

from wizard.levers.nginx_runner import free_port

SCRAPE_INTERVAL_S = 1


def find_prometheus() -> str | None:
    """The prometheus binary, or None."""
    return shutil.which("prometheus") or next(
        (p for p in ("/usr/bin/prometheus", "/usr/sbin/prometheus") if Path(p).exists()), None
    )


def require_prometheus() -> str:
    """The binary; skip the test without it (fail under WIZARD_REQUIRE_PROMETHEUS=1)."""
    found = find_prometheus()
    if found is None:
        reason = "prometheus is not installed (apt-get install prometheus; CI sets WIZARD_REQUIRE_PROMETHEUS=1)"
        if os.environ.get("WIZARD_REQUIRE_PROMETHEUS"):
            pytest.fail(reason)
        pytest.skip(reason)
    return found


@dataclass
class Prometheus:
    """A running Prometheus server."""

    url: str
    process: subprocess.Popen[bytes]
    log_file: Path

    def stop(self) -> None:
        """Terminate it by PID and wait."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def wait_scraped(self, instances: set[str], timeout_s: float = 30.0) -> None:
        """Block until every instance has been scraped successfully (up == 1)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
                answer = httpx.get(
                    self.url + "/api/v1/query", params={"query": "up == 1"}, timeout=5
                )
                seen = {r["metric"]["instance"] for r in answer.json()["data"]["result"]}
                if instances <= seen:
                    return
            time.sleep(0.2)
        raise AssertionError(
            f"Prometheus never scraped {sorted(instances)}: {self.log_file.read_text()[-2000:]}"
        )


def start_prometheus(workdir: Path, jobs: dict[str, list[str]]) -> Prometheus:
    """Start Prometheus scraping ``jobs`` ({job: ["127.0.0.1:port", ...]}) every second."""
    binary = require_prometheus()
    workdir.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {
            "scrape_interval": f"{SCRAPE_INTERVAL_S}s",
            "scrape_timeout": f"{SCRAPE_INTERVAL_S}s",
        },
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": targets}]}
            for job, targets in jobs.items()
        ],
    }
    config_file = workdir / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log_file = workdir / "prometheus.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [binary, f"--config.file={config_file}", f"--storage.tsdb.path={workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    server = Prometheus(f"http://127.0.0.1:{port}", process, log_file)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"prometheus exited: {log_file.read_text()[-2000:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(server.url + "/-/ready", timeout=2).status_code == 200:
                return server
        time.sleep(0.1)
    server.stop()
    raise AssertionError(f"prometheus never became ready: {log_file.read_text()[-2000:]}")
