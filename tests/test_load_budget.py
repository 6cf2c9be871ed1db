"""A load budget and consent before load (issue #28 item 4), and the walk's deadline (issue #27
item 5): against the simulator the test starts; the server's own request counter says what
reached it, the transcript what the walk planned and spent."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.conftest import SimProcess, wizard_command
from wizard import transcript

FINISHED = re.compile(r"^vllm:request_success_total\{[^}]*\} (\S+)$", re.MULTILINE)


def finished(sim: SimProcess) -> int:
    """How many requests the server finished so far (every finish reason)."""
    return int(sum(float(n) for n in FINISHED.findall(sim.metrics())))


def walk(sim: SimProcess, path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        wizard_command("run", "--target", sim.url, "--auto", "--transcript", str(path), *args),
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip


def test_the_budget_is_said_first_and_the_cap_holds(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """Before its first request the walk says what each stage will send (from the playbook's
    rounds under the incident's workload: --concurrency 2 changes it); past --max-requests a
    round is skipped and said; the transcript records the budget and what was spent."""
    before = finished(healthy_sim)
    path = tmp_path / "capped.ndjson"
    result = walk(healthy_sim, path, "--max-requests", "30", "--concurrency", "2")
    assert result.returncode in (0, 3), result.stderr
    out = " ".join(result.stdout.split())
    assert out.index("The load this walk will send") < out.index("endpoints: model")
    events = transcript.load(path).events
    budget = next(e["data"] for e in events if e["type"] == "budget")
    assert events.index(next(e for e in events if e["type"] == "budget")) < events.index(
        next(e for e in events if e["type"] == "probe_result")
    )
    baseline = next(row for row in budget["stages"] if row["stage"] == "baseline")
    # --concurrency 2: the incident's rounds run 2 streams (the loaded round twice that).
    assert baseline["concurrency"] == 2 and budget["max_requests"] == 30
    assert f"baseline: {baseline['rounds']} round(s), {baseline['requests']} requests" in out
    spent = events[-1]["data"]["spent"]
    assert spent["requests"] <= 30 and spent["skipped"]
    assert finished(healthy_sim) - before <= spent["requests"]
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    for label in spent["skipped"]:
        assert any(f"round {label} skipped" in n and "--max-requests 30" in n for n in notes)
    default = walk(healthy_sim, tmp_path / "plan.ndjson", "--max-requests", "0")
    planned = next(e["data"] for e in transcript.load(tmp_path / "plan.ndjson").events
                   if e["type"] == "budget")  # fmt: skip
    assert default.returncode in (0, 3, 4)
    assert next(r for r in planned["stages"] if r["stage"] == "baseline")["concurrency"] == 4


def test_a_tiny_deadline_ends_the_walk_before_any_round(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """--deadline is printed at the start; past it the walk ends with what it has (here nothing:
    no request reached the server) and its transcript is whole and says so."""
    before = finished(healthy_sim)
    path = tmp_path / "deadline.ndjson"
    result = walk(healthy_sim, path, "--deadline", "0.001")
    assert result.returncode == 4, result.stderr  # nothing measured
    out = " ".join(result.stdout.split())
    assert out.index("deadline: 0 s (--deadline)") < out.index(
        "the walk's deadline (0 s, --deadline)"
    )
    loaded = transcript.load(path)
    assert loaded.complete
    end = loaded.events[-1]["data"]
    assert end["spent"]["deadline_reached"] and end["spent"]["rounds"] == 0
    assert not any(e["type"] == "probe_result" for e in loaded.events)
    assert finished(healthy_sim) == before


def test_a_person_consents_to_the_load_once(healthy_sim: SimProcess, tmp_path: Path) -> None:
    """At a terminal the walk asks once before its first request; no sends nothing, writes
    nothing (exit 1)."""
    before = finished(healthy_sim)
    path = tmp_path / "declined.ndjson"
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, ["-m", "wizard", "run", "--target", healthy_sim.url,
                                           "--transcript", str(path)],
                          env=env, encoding="utf-8", timeout=60, dimensions=(40, 160))  # fmt: skip
    child.expect("The load this walk will send")
    child.expect(r"Send this load to http://127\.0\.0\.1:\d+\? \(y/n\)")
    time.sleep(0.5)  # prompt_toolkit draws the question before it reads keys
    child.send("\r")  # no default: Enter alone is no consent
    child.expect("answer yes or no")
    time.sleep(0.5)
    child.send("n\r")
    child.expect("no request sent, nothing written")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert not path.exists() and finished(healthy_sim) == before


@pytest.mark.timeout(240)
def test_the_deadline_cuts_a_round_that_never_ends(tmp_path: Path) -> None:
    """A server whose responses never finish held a walk 15 min at --timeout 5 (each request
    runs to its own deadline, five read timeouts). Past --deadline the request in flight is
    cancelled and the walk ends with what it has; here its first step's pings never end (each
    would take 150 s at --timeout 30, more than this test's own timeout)."""
    from tests.faultserver import fault_server

    path = tmp_path / "endless.ndjson"
    with fault_server() as url:
        result = subprocess.run(
            wizard_command("run", "--target", f"{url}/endless", "--auto", "--timeout", "30",
                           "--deadline", "3", "--transcript", str(path)),
            capture_output=True, text=True, timeout=200,
        )  # fmt: skip
    assert result.returncode == 4, result.stderr  # nothing measured
    loaded = transcript.load(path)
    assert loaded.complete
    notes = [e["data"]["text"] for e in loaded.events if e["type"] == "note"]
    assert any("the walk's deadline (3 s, --deadline) passed after 0 round(s)" in n for n in notes)
    assert loaded.events[-1]["data"]["spent"]["deadline_reached"]
    assert not any(e["type"] == "measurement" for e in loaded.events)
