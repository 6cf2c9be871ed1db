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
from typing import Any

import pexpect
import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.record import transcript
from wizard.walk.budget import ENTRY_PINGS

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


def _walked(*args: str) -> str:
    """A walk's command run to its end (a cause found or not, or nothing measured under a cap):
    what it printed, its lines joined."""
    result = subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=600)
    assert result.returncode in (0, 3, 4), result.stderr
    return " ".join(result.stdout.split())


def _planned(path: Path) -> dict[str, Any]:
    return next(e["data"] for e in transcript.load(path).events if e["type"] == "budget")


def test_the_replicas_round_is_priced_per_round_it_sends(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """The replicas probe measures every replica twice (A B C, C B A) and once through the
    balancer: with two replicas listed that is five rounds, and the budget prices five (it priced
    one). --max-requests 0 plans without sending a round."""
    from wizard.walk import budget

    alone = tmp_path / "alone.ndjson"
    listed = tmp_path / "listed.ndjson"
    proxy = ("--proxy", healthy_sim.url)
    walk(healthy_sim, alone, *proxy, "--max-requests", "0")
    walk(healthy_sim, listed, *proxy, "--max-requests", "0",
         "--replica", "http://127.0.0.1:9001", "--replica", "http://127.0.0.1:9002")  # fmt: skip
    one = budget.round_cost(
        "replicas", {"concurrency": 8, "requests": 16, "input_tokens": 64, "max_tokens": 32}
    )  # fmt: skip (the playbook's round)
    assert one is not None
    without, with_replicas = _planned(alone), _planned(listed)
    assert without["replicas_rounds"] == 0 and with_replicas["replicas_rounds"] == 5
    assert with_replicas["requests"] - without["requests"] == 5 * one.requests
    # The note that skips it names what it would have sent: five rounds (it said one).
    notes = [e["data"]["text"] for e in transcript.load(listed).events if e["type"] == "note"]
    skipped = [t for t in notes if t.startswith("round replicas skipped")]
    assert skipped and f"its {5 * one.requests} requests" in skipped[0], skipped
    limits = budget.Limits(100.0, None, with_replicas["replicas_rounds"])
    limits.spend("replicas", one, {"available": True})
    assert (limits.requests, limits.rounds) == (5 * one.requests, 5)
    assert limits.over_cap("replicas", one) is False
    capped = budget.Limits(100.0, 4 * one.requests, 5)
    assert capped.over_cap("replicas", one)  # one round fits the cap, five do not
    nothing = budget.Limits(100.0, None, 5)
    nothing.spend("replicas", one, {"available": False})  # fewer than two found: none sent
    assert (nothing.requests, nothing.rounds) == (0, 0)


def test_the_demo_says_and_records_its_budget_and_the_cap_holds(tmp_path: Path) -> None:
    """The demo prints the load before its first request and records it, as run does (no
    question: the load goes to its own simulator); --max-requests caps it."""
    path = tmp_path / "demo.ndjson"
    out = _walked("demo", "--auto", "--max-requests", "3", "--deadline", "600",
                  "--transcript", str(path))  # fmt: skip
    assert out.index("The load this walk will send") < out.index("endpoints: model")
    events = transcript.load(path).events
    kinds = [e["type"] for e in events]
    assert kinds.index("budget") < kinds.index("probe_result")
    planned = _planned(path)
    assert planned["max_requests"] == 3 and planned["requests"] > 3 and planned["deadline_s"] == 600
    spent = events[-1]["data"]["spent"]
    assert spent["requests"] <= 3 and "direct" in spent["skipped"]


def test_resume_says_and_records_the_budget_of_what_is_left(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """A resumed walk prints the load from where it continues (its server check's pings
    included) before that check, records it, and --max-requests caps what it sends."""
    whole = tmp_path / "whole.ndjson"
    walk(healthy_sim, whole, "--max-requests", "3")
    lines = whole.read_bytes().splitlines(keepends=True)
    loaded = transcript.load(whole)
    # The header, then every event up to the first step's exit: the walk continues at the next.
    first_exit = next(i for i, e in enumerate(loaded.events) if e["type"] == "node_exit")
    cut = tmp_path / "cut.ndjson"
    cut.write_bytes(b"".join(lines[: first_exit + 2]))
    before = finished(healthy_sim)
    out = _walked("resume", str(cut), "--auto", "--target", healthy_sim.url, "--max-requests", "20",
                  "--deadline", "300")  # fmt: skip
    assert out.index("The load this walk will send") < out.index("resuming")
    events = transcript.load(cut).events
    kinds = [e["type"] for e in events]
    # The first walk's budget, then the resumed one's, after the kept events and before the
    # server check.
    first, again = [i for i, kind in enumerate(kinds) if kind == "budget"]
    assert first < first_exit < again < kinds.index("resume")
    planned = events[again]["data"]
    # From the direct baseline on: its rounds, not the first step's (pings only), plus the
    # server check's three pings.
    baseline = next(row for row in planned["stages"] if row["stage"] == "baseline")
    assert planned["max_requests"] == 20 and planned["deadline_s"] == 300
    assert baseline["rounds"] >= 2
    spent = events[-1]["data"]["spent"]
    assert spent["requests"] <= 20 and spent["skipped"]
    assert finished(healthy_sim) - before <= spent["requests"] + ENTRY_PINGS
