"""Ctrl-C stops a walk wherever it lands: exit 130, the transcript kept and valid, the resume hint,
no process left behind.

The signal is sent when the transcript shows the walk reached a step (never at a wall-clock
offset, which the machine's load moves), or delivered at a chosen point of the child's own code by
tests/sigint_hook (where an interrupt used to be lost).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.conftest import SimProcess, leftover_processes, wizard_command
from wizard.record import transcript

HOOK = Path(__file__).parent / "sigint_hook"


def reached(kind: str, probe: str | None = None) -> Callable[[list[dict[str, Any]]], bool]:
    """The transcript holds an event of this type (a probe_result: of this probe)."""

    def test(lines: list[dict[str, Any]]) -> bool:
        return any(
            line.get("type") == kind
            and (probe is None or line.get("data", {}).get("probe") == probe)
            for line in lines
        )

    return test


def header_only(lines: list[dict[str, Any]]) -> bool:
    return bool(lines)  # the header is written; the walk is being set up (imports, the session)


def written(path: Path) -> list[dict[str, Any]]:
    """The transcript's complete lines so far."""
    if not path.exists():
        return []
    lines = []
    for raw in path.read_bytes().split(b"\n")[:-1]:  # the last piece may be mid-write
        lines.append(json.loads(raw))
    return lines


def interrupt_when(
    command: list[str], path: Path, ready: Callable[[list[dict[str, Any]]], bool], **popen: Any
) -> tuple[subprocess.Popen[str], str, str, list[psutil.Process]]:
    """Start ``command``; once its transcript satisfies ``ready``, send one SIGINT. Returns the
    finished process, its output and the processes it had started when the signal went."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               **popen)  # fmt: skip
    children: list[psutil.Process] = []
    try:
        deadline = time.monotonic() + 120
        while process.poll() is None and not ready(written(path)):
            assert time.monotonic() < deadline, "the walk never reached the step"
            time.sleep(0.002)
        assert process.poll() is None, process.communicate()
        children = psutil.Process(process.pid).children(recursive=True)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:  # a walk that ignored the signal must not outlive the test
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process, out, err, children


def assert_interrupted(process: subprocess.Popen[str], out: str, err: str, path: Path,
                       hint: str, children: list[psutil.Process]) -> None:  # fmt: skip
    assert process.returncode == 130, (process.returncode, out[-1500:], err[-1500:])
    assert hint in out, out[-1500:]
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert "never awaited" not in err, err
    kept = transcript.load(path)  # the hash chain verifies
    assert not kept.complete
    assert not [child for child in children if child.is_running() and child.status() != "zombie"]


# Where the signal lands in `run --auto`: setting the walk up (lazy imports, where a Ctrl-C was
# ignored), the evidence probes (host, vllm-log, fleet), a load round (streams, /metrics scrapes),
# and LoadGen's validation run (its own thread and loop).
RUN_STEPS = {
    "setting up": header_only,
    "evidence probes": reached("probe_result", "endpoints"),
    "load round": reached("answer"),
    "loadgen": reached("note"),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("step", RUN_STEPS, ids=list(RUN_STEPS))
def test_ctrl_c_stops_run_at_every_step(healthy_sim: SimProcess, tmp_path: Path, step: str) -> None:
    path = tmp_path / "walk.ndjson"
    command = wizard_command(
        "run", "--target", healthy_sim.url, "--auto", "--transcript", str(path)
    )
    process, out, err, children = interrupt_when(command, path, RUN_STEPS[step])
    assert_interrupted(process, out, err, path, f"latency-wizard resume {path}", children)


# The demo: setting up, a load round, and its simulator's restart with a changed flag (kv-pressure's
# first finding, LAT010, is applied at once: the restart runs in a thread the walk awaits).
DEMO_STEPS: dict[str, tuple[str, Callable[[list[dict[str, Any]]], bool]]] = {
    "setting up": ("healthy", header_only),
    "load round": ("healthy", reached("answer")),
    "simulator restart": ("kv-pressure", reached("finding")),
}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("step", DEMO_STEPS, ids=list(DEMO_STEPS))
def test_ctrl_c_stops_the_demo_and_its_simulator(tmp_path: Path, step: str) -> None:
    scenario, ready = DEMO_STEPS[step]
    path = tmp_path / "demo.ndjson"
    command = wizard_command(
        "demo", "--auto", "--no-nginx", "--scenario", scenario, "--transcript", str(path)
    )
    process, out, err, children = interrupt_when(command, path, ready)
    assert children  # its simulator
    assert_interrupted(
        process, out, err, path, "start it again with: latency-wizard demo", children
    )
    assert not leftover_processes(path)  # a simulator started after the signal too


# An interrupt delivered at a chosen point (tests/sigint_hook): `wizard.ui.aio.run`'s second call is
# the walk's (the first is the preflight check), `Session` is built just before it.
FORCED = {
    # Just after the header was written, before the writer is handed on: it used to end the
    # command without the resume hint (1 in 60 signals at the header under load 9).
    "header written": "wizard.record.transcript:TranscriptWriter.create:1:plain:return",
    # Raised while the walk is being set up: it used to end the command without the resume hint.
    "setting up": "wizard.walk.session:Session:1:plain",
    # Dropped by CPython inside a weakref callback: the walk used to run to its end, exit 0.
    "swallowed": "wizard.ui.aio:run:2:weakref",
    # Raised inside exec'd code: `python -m` used to exit by SIGINT (-2), not with 130.
    "in exec": "wizard.walk.session:Session:1:exec",
    # Raised as the walk's event loop starts, before the walk's coroutine is awaited (the demo's
    # Ctrl-C in setting up, once in a CI rehearsal): it used to warn "coroutine 'walk' was never
    # awaited" on the way out. `interrupt.watch` is called twice per `aio.run`; the walk's is the
    # second run.
    "walk not started": "wizard.ui.interrupt:watch:3:plain",
    # Raised as uvloop sets up the walk's loop, before it awaits the wrapper that watches for
    # Ctrl-C (once in CI, in setting up): it used to warn "coroutine 'interruptible' was never
    # awaited". The first `uvloop.run` is the preflight check's, the second the walk's.
    "loop not started": "uvloop:run:2:plain",
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("where", FORCED, ids=list(FORCED))
def test_an_interrupt_is_never_lost(healthy_sim: SimProcess, tmp_path: Path, where: str) -> None:
    path = tmp_path / "walk.ndjson"
    env = {**os.environ, "PYTHONPATH": str(HOOK), "WIZARD_TEST_SIGINT": FORCED[where]}
    process = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--auto", "--transcript", str(path)),
        capture_output=True, text=True, timeout=90, env=env,
    )  # fmt: skip
    assert_interrupted(process, process.stdout, process.stderr, path,  # type: ignore[arg-type]
                       f"latency-wizard resume {path}", [])  # fmt: skip
    assert not any(e["type"] == "measurement" for e in transcript.load(path).events)


def test_the_processes_tests_start_get_sigint_as_at_a_terminal() -> None:
    """Even when pytest itself was started with SIGINT ignored (tests/conftest.py)."""
    shown = subprocess.run(
        [sys.executable, "-c", "import signal; print(signal.getsignal(signal.SIGINT))"],
        capture_output=True, text=True, timeout=30,
    ).stdout  # fmt: skip
    assert "default_int_handler" in shown
