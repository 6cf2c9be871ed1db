"""LAT050: the measuring client found to be the bottleneck lowers its own concurrency itself.

First from real saturation: a client starved of CPU (tests/starved_client.py: a CPU quota on its
event loop, between the work of 32 and of 64 streams' events, the simulator on the other core)
measures 64 streams, falls behind, is found saturated, halves its own streams and at 32 keeps up:
the cause is gone by its own evidence.
Then what the walk does with the finding, on a playbook whose LAT050 rule always holds: nobody is
asked, the wizard halves its own streams, measures the same round again at that concurrency,
refuses to compare rounds of different concurrency, and keeps every later round under the new
cap, across a resume too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import URL_LINE, SimProcess, playbook_with_rule, wizard_command
from tests.starved_client import raise_group
from wizard import playbook
from wizard.record import transcript

STARVED_CLIENT = Path(__file__).with_name("starved_client.py")
# Twice what the starved loop keeps up with (starved_client.py), and answers long enough that the
# whole round's first requests are served at that concurrency, not only its connections' set-up.
STARVED_STREAMS = 64
STARVED_TOKENS = 512


# The starved client's quota, as a share of its calibrated one (starved_client.py), in the order
# tried: the calibration times one parse on a machine that may be busy, and a slow timing gives a
# quota the loop keeps up with at all its streams (lag p90 3 ms over a 0.2 ms floor, alone after
# CI's parallel part). Then the harness starved nothing, and it tries once more with less.
QUOTA_SCALES = (1.0, 0.75)


def kept_up(client: dict[str, float]) -> bool:
    """Whether the loop kept up (its lag within LAGGING_P90_MS of its floor): not starved."""
    from wizard.probes.http.load import LAGGING_P90_MS

    return client["loop_lag_p90_ms"] <= client["loop_lag_floor_ms"] + LAGGING_P90_MS


@pytest.fixture
def pinned_sim(tmp_path: Path) -> Iterator[tuple[SimProcess, int]]:
    """A simulator alone on one core of the two the tests may use, and the other core. Its steps
    are tp-over-pcie's (~30 ms: a slow all-reduce), so it serves 64 streams a token each a step
    without running out of its own core, every stream's token of a step sent together.

    In a session of its own, raised above the machine's other groups where the test may (root),
    so that what it serves, and so the client's work, does not hang on what else runs there."""
    cores = sorted(os.sched_getaffinity(0))
    if len(cores) < 2:
        pytest.skip("a starved client needs a core of its own beside the simulator's")

    def own_core() -> None:
        os.sched_setaffinity(0, {cores[0]})
        raise_group()

    log = tmp_path / "sim.log"
    command = wizard_command(
        "sim", "--port", "0", "--quiet", "--log-file", str(log), "--scenario", "tp-over-pcie"
    )
    with (tmp_path / "sim.stderr").open("w") as err:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=err, text=True,
                                   start_new_session=True, preexec_fn=own_core)  # fmt: skip
    assert process.stdout is not None
    match = URL_LINE.search(process.stdout.readline())
    sim = SimProcess(match.group(1) if match else "", process, log, tmp_path / "sim.stderr",
                     tmp_path / "no-host")  # fmt: skip
    try:
        assert match, (tmp_path / "sim.stderr").read_text()
        sim.wait_ready()
        yield sim, cores[1]
    finally:
        sim.stop()


# Alone: its quota is calibrated to a core that nothing else uses; beside another xdist worker the
# client was kept off its core (contended, not saturated: no LAT050), once in a CI rehearsal.
@pytest.mark.slow
@pytest.mark.alone
def test_a_starved_client_is_saturated_and_halving_its_streams_clears_it(
    pinned_sim: tuple[SimProcess, int], tmp_path: Path
) -> None:
    sim, core = pinned_sim
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    for scale in QUOTA_SCALES:
        path = tmp_path / f"walk-{scale}.ndjson"
        result = subprocess.run(
            [sys.executable, str(STARVED_CLIENT), str(core), "run", "--target", sim.url,
             "--concurrency", str(STARVED_STREAMS), "--output-tokens", str(STARVED_TOKENS),
             "--answers", str(answers), "--transcript", str(path)],
            capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
            start_new_session=True, env={**os.environ, "WIZARD_STARVED_QUOTA_SCALE": str(scale)},
        )  # fmt: skip
        assert result.returncode in (0, 3), result.stderr
        events = transcript.load(path).events
        rounds = {e["data"]["round"]: e["data"]["facts"] for e in events
                  if e["type"] == "probe_result" and e["data"]["probe"] == "measure"}  # fmt: skip
        if not kept_up(rounds["direct"]["client"]) or scale == QUOTA_SCALES[-1]:
            break
        # The harness did not starve it: the loop kept up at all its streams, and the walk was
        # right not to call it saturated (nothing else may have been said of its client).
        assert "direct#2" not in rounds and not rounds["direct"]["client"]["saturated"]
    first, again = rounds["direct"], rounds["direct#2"]
    # Saturated by its own evidence: its process filled the core and its loop fell behind its
    # own floor; at half the streams, on the same core, it kept up.
    quota = next(line for line in result.stderr.splitlines() if line.startswith("starved client"))
    assert first["spec"]["concurrency"] == STARVED_STREAMS
    assert first["client"]["saturated"], (quota, first["client"])
    assert first["client"]["cpu_fraction"] > 0.9
    assert again["spec"]["concurrency"] == STARVED_STREAMS // 2
    assert not again["client"]["saturated"], (quota, again["client"])
    codes = [e["data"]["code"] for e in events if e["type"] == "finding"]
    assert codes.count("LAT050") == 1, codes
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["code"], change["parameter"], change["before"], change["after"]) == (
        "LAT050", "concurrency", str(STARVED_STREAMS), str(STARVED_STREAMS // 2),
    )  # fmt: skip
    verdict = next(
        e["data"] for e in events if e["type"] == "verdict" and e["data"]["code"] == "LAT050"
    )
    assert verdict["verdict"] == "cause gone", verdict


ALWAYS = {"fact": "direct.steady.requests", "ge": 1}


def test_the_wizard_lowers_its_own_concurrency_and_measures_again(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    path = tmp_path / "walk.ndjson"
    result = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--playbook",
                       str(playbook_with_rule(tmp_path, "baseline.direct", "LAT050", ALWAYS)), "--answers", str(answers),
                       "--transcript", str(path)),
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode in (0, 3), result.stderr
    events = transcript.load(path).events
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["code"], change["layer"], change["parameter"]) == (
        "LAT050",
        "measurement",
        "concurrency",
    )
    assert (change["before"], change["after"]) == ("4", "2")
    assert "the wizard lowered its own concurrency" in change["note"]
    assert not any(e["type"] == "question" and e["data"]["id"] == "LAT050" for e in events)
    measured = [e["data"] for e in events if e["type"] == "measurement"]
    again = next(m for m in measured if m["round"] == "direct#2")
    assert again["spec"]["concurrency"] == 2
    # Every round after the change stays under the cap (the loaded rounds ask for more).
    later = measured[measured.index(again) :]
    assert len(later) > 1 and all(m["spec"]["concurrency"] <= 2 for m in later)
    verdict = next(e["data"] for e in events if e["type"] == "verdict")
    assert verdict["code"] == "LAT050" and verdict["verdict"] in ("cause gone", "cause still there")
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any("not compared with the baseline" in n and "concurrency" in n for n in notes), notes
    # A measurement cause is never a cause of the incident.
    end = next(e["data"] for e in events if e["type"] == "end")
    assert "client_saturated" not in end["causes_remaining"]


def test_a_resumed_walk_keeps_the_lowered_concurrency(tmp_path: Path) -> None:
    from wizard.probes.runner import ProbeContext
    from wizard.walk.resume import restore
    from wizard.walk.session import Session

    path = tmp_path / "walk.ndjson"
    writer = transcript.TranscriptWriter.create(
        path, {"target": "http://127.0.0.1:9"}, transcript.Redactor()
    )
    change = {"code": "LAT050", "layer": "measurement", "parameter": "concurrency", "before": "4",
              "after": "2", "note": "", "restarted": False, "measured": True}  # fmt: skip
    writer.append("change", "baseline.direct", change)
    session = Session(playbook.load(), ProbeContext(target="http://127.0.0.1:9"), None, None)  # type: ignore[arg-type]
    restore(session, transcript.load(path).events)
    assert session.ctx.client_concurrency == 2
