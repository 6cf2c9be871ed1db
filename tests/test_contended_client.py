"""A walk whose measuring client is contended does not pass quietly (issue #11, item 1).

Beside a vLLM that busy-polls one of two cores, the client's loop wakes late and whole streams
arrive in one read: its numbers describe the client. The walk measures such a round again (at
most ``contention.REMEASURES`` times) and, when it stays contended, says the rules and verdicts
that rest on the client's timing are inconclusive, never "no cause" and never a cause.

The contention here is real and the same on any machine: the walk runs in a process with a second
thread that holds the GIL in 20 ms sleeps (a C call that keeps it), so the client's loop waits as
it would for a CPU another process holds, and neither uses CPU meanwhile (a spinning thread would
count as the client's own CPU, and call it saturated).
"""

from __future__ import annotations

import dataclasses
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import SimProcess, playbook_with_probes_only
from wizard.measure import contention
from wizard.measure.contention import timings_doubtful
from wizard.playbook import conditions
from wizard.record import transcript

HOGGED = (
    "import ctypes, sys, threading, time\n"
    "libc = ctypes.PyDLL(None)  # PyDLL: the call keeps the GIL while it sleeps\n"
    "def hold():\n"
    "    while True:\n"
    "        libc.usleep(20000)\n"
    "        time.sleep(0.002)\n"
    "threading.Thread(target=hold, daemon=True).start()\n"
    "from wizard.cli.main import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
# Never true on any server, and read from the baseline's client-timed TTFT: without the client's
# timing it can be neither held nor refuted.
NEVER_BY_TIMING = {"fact": "direct.steady.ttft_p50", "gt": 1e9}


def test_the_client_doubts_its_timing_only_when_late_by_half_a_gap() -> None:
    contended = {"contended": True, "send_delayed": False, "loop_lag_p90_ms": 40.0}
    assert timings_doubtful(contended, pace_ms=11.6)
    # A late wake-up shorter than half the stream's gap still reads events one by one.
    assert not timings_doubtful({**contended, "loop_lag_p90_ms": 5.5}, pace_ms=11.6)
    # Whole streams in one read: the client's own TPOT reads ~0, and the lag dwarfs it.
    assert timings_doubtful({**contended, "loop_lag_p90_ms": 6.0}, pace_ms=0.02)
    held_back = {"contended": False, "send_delayed": True, "loop_lag_p90_ms": 9.0}
    assert timings_doubtful(held_back, pace_ms=None)
    assert not timings_doubtful({**contended, "contended": False}, pace_ms=0.02)
    # A saturated client is its own bottleneck: LAT050 halves its streams, no repeat.
    assert not timings_doubtful({**held_back, "saturated": True}, pace_ms=None)


def test_a_rule_is_unknown_only_when_it_turns_on_a_doubtful_fact() -> None:
    doubtful = {"direct": {"steady": {"ttft_p50": 20}}, "direct_ok": {"x": 1}}

    def knowing(condition: Any) -> bool | None:
        return conditions.evaluate_knowing(
            condition, doubtful, {}, lambda path: path.startswith("direct.steady")
        )

    timed = {"fact": "direct.steady.ttft_p50", "gt": 10}
    assert knowing(timed) is None
    assert knowing({"all": [timed, {"fact": "direct_ok.x", "eq": 2}]}) is False
    assert knowing({"any": [timed, {"fact": "direct_ok.x", "eq": 1}]}) is True
    assert knowing({"not": timed}) is None
    # A round that never ran makes the comparison false, whatever the doubtful side.
    assert (
        knowing({"fact": "loaded.steady.ttft_p50", "gt": {"fact": "direct.steady.ttft_p50"}})
        is False
    )


def walk(sim: SimProcess, tmp_path: Path, *cap: str, hogged: bool) -> list[dict[str, Any]]:
    book_path = playbook_with_probes_only(
        tmp_path,
        ("measure",),
        {"requests": 4, "concurrency": 2, "input_tokens": 16, "max_tokens": 16},
    )
    book = yaml.safe_load(book_path.read_text(encoding="utf-8"))
    for node in book["nodes"].values():  # the baseline round alone
        node["probes"] = [p for p in node.get("probes", []) if p.get("as") == "direct"]
    rules = book["nodes"]["baseline.direct"]["rules"]
    rules.append({"finding": "LAT042", "when": NEVER_BY_TIMING})
    book_path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    path = tmp_path / f"walk-{hogged}{'-'.join(cap)}.ndjson"
    args = ["run", "--target", sim.url, "--playbook", str(book_path), "--answers", str(answers),
            "--transcript", str(path), *cap]  # fmt: skip
    command = (
        [sys.executable, "-c", HOGGED, *args] if hogged else [sys.executable, "-m", "wizard", *args]
    )
    result = subprocess.run(command, capture_output=True, text=True, timeout=600,
                            stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode in (0, 3, 4), result.stderr
    return transcript.load(path).events


def test_a_contended_round_is_not_measured_again_past_the_cap(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """--max-requests holds for the contended round's repeats too (a CI walk capped at 30 sent 33:
    its A/A repeat was measured again past the cap). The round stands, and the walk says why."""
    planned = walk(healthy_sim, tmp_path, "--max-requests", "0", hogged=False)
    budget = next(e["data"] for e in planned if e["type"] == "budget")
    cap = str(budget["requests"])  # the one round, and not one request more
    events = walk(healthy_sim, tmp_path, "--max-requests", cap, hogged=True)
    spent = next(e["data"] for e in events if e["type"] == "end")["spent"]
    assert spent["requests"] <= int(cap), spent
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any(
        "contended in direct" in n
        and "not measured again" in n
        and f"would pass --max-requests {cap}" in n
        for n in notes
    ), notes
    assert not any("measuring it again" in n for n in notes), notes
    unjudged = {e["data"]["code"] for e in events if e["type"] == "inconclusive"}
    assert "LAT042" in unjudged


def test_a_contended_round_is_measured_again_then_called_inconclusive(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    events = walk(healthy_sim, tmp_path, hogged=True)
    direct = [
        e["data"] for e in events if e["type"] == "measurement" and e["data"]["as"] == "direct"
    ]
    assert direct and direct[0]["client_contended"] is True
    again = [e["data"]["text"] for e in events if e["type"] == "note"
             if "measuring client was contended in direct " in e["data"]["text"]]  # fmt: skip
    assert len(again) == 2, again  # measured again twice, then judged as it is
    # Said in every language with the client's own reason in that language (zh printed English).
    zh = [e["data"]["texts"]["zh"] for e in events if e["type"] == "note"
          if "measuring client was contended in direct " in e["data"]["text"]]  # fmt: skip
    assert len(zh) == 2 and not any("kept waiting for a CPU" in text for text in zh), zh
    unjudged = {e["data"]["code"]: e["data"] for e in events if e["type"] == "inconclusive"}
    assert "direct" in unjudged["LAT042"]["rounds"]
    assert "waiting for a CPU" in unjudged["LAT042"]["reason"]
    stages = [
        e["data"]["stage_done"]
        for e in events
        if e["type"] == "node_exit" and e["data"].get("stage_done")
    ]
    baseline = next(s for s in stages if s["stage"] == "baseline")
    assert baseline["inconclusive"] == ["LAT042"] and baseline["passed"] is False  # no PASS line
    end = next(e["data"] for e in events if e["type"] == "end")
    assert "LAT042" in end["inconclusive"] and "LAT042" not in end["findings"]
    assert not any(c == "client_saturated" for c in end["causes_remaining"])
    # The summary says it too, instead of a plain "no cause found".
    path = tmp_path / "walk-True.ndjson"
    said = subprocess.run([sys.executable, "-m", "wizard", "export", str(path), "--format", "text"],
                          capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "could not be judged: LAT042 (direct)" in said and "no cause found," in said


def test_an_uncontended_walk_judges_every_rule(healthy_sim: SimProcess, tmp_path: Path) -> None:
    events = walk(healthy_sim, tmp_path, hogged=False)
    measured = [e["data"] for e in events if e["type"] == "measurement"]
    if any(m["client_contended"] for m in measured):
        pytest.skip("this machine contended the client itself: nothing to tell apart")
    assert not [e for e in events if e["type"] == "inconclusive"]
    assert next(e["data"] for e in events if e["type"] == "end")["inconclusive"] == []


def test_contention_makes_a_verdict_inconclusive_only_when_it_could_explain_the_effect() -> None:
    """The demo's TTFT 267 -> 27.6 ms (interval [-576, -110] ms) beside a client whose loop woke
    up to 24 ms late is an improvement; the same client cannot tell a 10 ms change."""
    assert contention.beyond(-576.0, -110.0, 24.0) and contention.beyond(30.0, 80.0, 24.0)
    assert not contention.beyond(-30.0, -10.0, 24.0) and not contention.beyond(None, None, 1.0)
    rounds = [{"client_contended": True, "client_lag_max_ms": 6.0},
              {"client_contended": True, "client_lag_max_ms": 24.0}, {"client_contended": False}]  # fmt: skip
    assert contention.contention_ms(rounds) == (True, 24.0)
    assert contention.contention_ms([{"client_contended": False}]) == (False, None)
    # A contended round of an older transcript (no lag recorded) judges nothing.
    assert contention.contention_ms([{"client_contended": True}]) == (True, None)


def _round(name: str, ttft: float, lag: float | None, spec: dict[str, Any]) -> dict[str, Any]:
    rng = random.Random(name)
    values = {"ttft_ms": [ttft * rng.lognormvariate(0, 0.3) for _ in range(16)],
              "tpot_ms": [10 * rng.lognormvariate(0, 0.02) for _ in range(16)]}  # fmt: skip
    return {"as": "direct", "round": name, "fingerprint": "f", "spec": spec, "values": values,
            "client_contended": lag is not None, "client_lag_max_ms": lag}  # fmt: skip


@pytest.mark.parametrize(("lag", "verdict"), [(24.0, "improved"), (400.0, "inconclusive")])
def test_a_contended_comparison_keeps_an_effect_larger_than_its_contention(
    tmp_path: Path, lag: float, verdict: str
) -> None:
    from wizard import playbook
    from wizard.measure import MeasurementSpec
    from wizard.probes.runner import ProbeContext
    from wizard.walk import comparisons
    from wizard.walk.operator import ScriptedOperator
    from wizard.walk.session import Session

    book = playbook.load()
    writer = transcript.TranscriptWriter.create(
        tmp_path / "t.ndjson",
        {"playbook_id": book.id, "target": "http://x"},
        transcript.Redactor([]),
    )
    session = Session(book, ProbeContext(target="http://x"), ScriptedOperator({}), writer)
    spec = dataclasses.asdict(MeasurementSpec("m", "completions", 64, 64, 4, "http://x"))
    node = next(iter(book.nodes.values()))
    try:
        comparisons.compare_states(session, node, [_round("direct", 267, lag, spec)],
                        [_round("direct#2", 27.6, lag, spec)], "baseline")  # fmt: skip
    finally:
        writer.close()
    ttft = next(s for s in session.comparisons[-1]["segments"] if s["segment"] == "ttft_ms")
    assert ttft["verdict"] == verdict and ttft["contention_ms"] == lag
    assert ttft.get("client_contended", False) is (verdict == "inconclusive")
