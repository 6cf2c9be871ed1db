"""Shared fixtures: real simulator processes on loopback."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

URL_LINE = re.compile(r"listening on (http://\S+)")


@dataclass
class SimProcess:
    """A running ``latency-wizard sim`` subprocess."""

    url: str
    process: subprocess.Popen[str]
    log_file: Path
    stderr_file: Path
    host_evidence: Path  # the simulated GPU host's lscpu, nvidia-smi topo -m, GPU list, env

    def log(self) -> str:
        """The vLLM-formatted log written so far."""
        return self.log_file.read_text(encoding="utf-8")

    def metrics(self) -> str:
        """The current /metrics text."""
        return httpx.get(self.url + "/metrics", timeout=10).text

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until /health answers 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError(f"simulator at {self.url} never became ready")

    def stop(self) -> None:
        """Terminate the process and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def wizard_command(*args: str) -> list[str]:
    """The command line for running latency-wizard from this checkout's interpreter."""
    return [sys.executable, "-m", "wizard", *args]


def start_sim(
    tmp_path: Path, *args: str, wait: bool = True, env: dict[str, str] | None = None
) -> SimProcess:
    """Start a simulator on a free loopback port and return once it listens (and is ready)."""
    index = len(list(tmp_path.glob("sim-*.log")))
    log_file = tmp_path / f"sim-{index}.log"
    stderr_file = tmp_path / f"sim-{index}.stderr"
    host_evidence = tmp_path / f"sim-{index}-host"
    command = wizard_command("sim", "--port", "0", "--quiet", "--log-file", str(log_file),
                             "--host-evidence", str(host_evidence), *args)  # fmt: skip
    full_env = {**os.environ, **(env or {})}
    with stderr_file.open("w") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = URL_LINE.search(line)
    if not match:
        process.wait(timeout=10)
        process.stdout.close()
        raise AssertionError(f"simulator did not start: {line!r} {stderr_file.read_text()}")
    sim = SimProcess(match.group(1), process, log_file, stderr_file, host_evidence)
    if wait:
        sim.wait_ready()
    return sim


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator[Callable[..., SimProcess]]:
    """Start simulators with given flags; every one is stopped at teardown."""
    started: list[SimProcess] = []

    def factory(*args: str, wait: bool = True, env: dict[str, str] | None = None) -> SimProcess:
        sim = start_sim(tmp_path, *args, wait=wait, env=env)
        started.append(sim)
        return sim

    yield factory
    for sim in started:
        sim.stop()


@pytest.fixture(scope="module")
def healthy_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """One healthy simulator shared by a module's read-only tests."""
    sim = start_sim(tmp_path_factory.mktemp("sim"))
    yield sim
    sim.stop()
