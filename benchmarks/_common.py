"""Shared by the benchmark scripts: a simulator pinned to CPU 0, ready to serve."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx


def start_sim(*args: str) -> tuple[subprocess.Popen[str], str]:
    """Start ``latency-wizard sim`` (with ``args``) on a free port (on CPU 0 when taskset exists);
    return it and its URL."""
    cpus = os.cpu_count() or 1
    pin = ["taskset", "-c", "0"] if shutil.which("taskset") and cpus > 1 else []
    command = [*pin, sys.executable, "-m", "wizard", "sim", "--port", "0", "--quiet", *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    match = re.search(r"listening on (\S+)", process.stdout.readline())
    assert match, "simulator did not start"
    url = match.group(1)
    for _ in range(200):
        try:
            if httpx.get(url + "/health").status_code == 200:
                return process, url
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise SystemExit("simulator never became ready")


def _hog(stop_at: float) -> None:
    """Keep one core busy (a second process, as another tenant on a shared machine)."""
    while time.monotonic() < stop_at:
        pass


@contextlib.contextmanager
def server_under_load(target: str | None, hog: bool) -> Iterator[str]:
    """The URL to measure (``target``, else a fresh simulator), with one core kept busy if asked."""
    sim = None
    url = target
    if url is None:
        sim, url = start_sim()
    hogger = None
    if hog:
        hogger = multiprocessing.Process(target=_hog, args=(time.monotonic() + 3600,), daemon=True)
        hogger.start()
    try:
        yield url
    finally:
        if hogger is not None:
            hogger.terminate()
        if sim is not None:
            sim.terminate()
            sim.wait()
