"""LAT050: the measuring client found to be the bottleneck lowers its own concurrency itself.

Whether the wizard's client saturates depends on the machine, so the trigger here is a playbook
whose LAT050 rule always holds; what is tested is what the walk does with the finding: nobody is
asked, the wizard halves its own streams, measures the same round again at that concurrency,
judges the cause by its own evidence (is the client still saturated?), refuses to compare rounds
of different concurrency, and keeps every later round under the new cap, across a resume too.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conftest import SimProcess, playbook_with_rule, wizard_command
from wizard import playbook, transcript

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
    from wizard.engine import Session, restore
    from wizard.probes.runner import ProbeContext

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
