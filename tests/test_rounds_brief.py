"""`--rounds brief`: half of each load round's requests, never below one look of the sequential
engine; LoadGen keeps the 64 queries its early stopping needs; the choice is recorded and resumed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard import playbook
from wizard.record import transcript
from wizard.walk import budget
from wizard.workload import Workload, brief_round


@pytest.mark.parametrize(
    ("requests", "concurrency", "brief"),
    [
        (16, 4, 8),  # the baseline rounds: half
        (16, 8, 8),  # the loaded round: half, one request per stream
        (8, 4, 8),  # long prompts: half would be 4, below one look of 4 streams (5 samples -> 8)
        (8, 2, 6),  # the prompt-shape rounds: one look is 5 samples, whole looks of 2 -> 6
        (16, 1, 8),
        (4, 4, 4),  # never more than the round asked for
    ],
)
def test_a_brief_round_is_half_never_below_one_look(
    requests: int, concurrency: int, brief: int
) -> None:
    params = {"requests": requests, "concurrency": concurrency, "warmup": 2, "max_tokens": 64}
    assert brief_round("measure", params) == {**params, "requests": brief}


def test_loadgen_keeps_its_queries() -> None:
    params = {"scenario": "SingleStream", "min_queries": 64, "min_duration_s": 2}
    assert brief_round("validate", params) == params


def test_the_incident_shape_is_applied_before_the_round_is_halved() -> None:
    workload = Workload(concurrency=16, output_tokens=32, rounds="brief")
    params = {"shape": "incident", "concurrency": 4, "requests": 16, "max_tokens": 64}
    assert workload.round_params("measure", params, "completions") == {
        "concurrency": 16, "requests": 16, "max_tokens": 32, "endpoint": "completions",
    }  # fmt: skip
    assert not Workload(rounds="brief").given and Workload(rounds="brief").to_header() is None
    assert "rounds" not in (workload.to_header() or {})  # the header keeps it apart


def test_the_plan_shows_the_brief_walk() -> None:
    book = playbook.load()
    session = {"has_proxy": False}
    full = sum(s["requests"] for s in budget.plan(book, Workload(), session))
    brief = sum(s["requests"] for s in budget.plan(book, Workload(rounds="brief"), session))
    assert 0.5 * full < brief < full, (full, brief)


def run_cli(*args: str, rounds: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "LATENCY_WIZARD_ROUNDS"}
    if rounds is not None:
        env["LATENCY_WIZARD_ROUNDS"] = rounds
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def test_a_bad_environment_value_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    done = run_cli("run", "--target", "http://127.0.0.1:9", "--auto", "--transcript", str(path),
                   rounds="quick")  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "latency-wizard run: error: LATENCY_WIZARD_ROUNDS must be full or brief, got 'quick'"
    ]
    assert not path.exists()
    done = run_cli("demo", "--rounds", "quick", rounds=None)
    assert done.returncode == 2 and "invalid choice: 'quick'" in done.stderr


@pytest.mark.slow
def test_a_brief_walk_records_its_rounds_and_resumes_brief(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """The flag wins over the environment; the header keeps it; a resumed walk measures brief."""
    path = tmp_path / "walk.ndjson"
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"run_loadgen": False}))
    done = run_cli("run", "--target", healthy_sim.url, "--answers", str(answers), "--rounds",
                   "brief", "--transcript", str(path), rounds="full")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "(--rounds brief: half of each load round's requests" in done.stdout
    record = transcript.load(path)
    assert record.header["rounds"] == "brief"
    steady = {e["data"]["round"]: e["data"]["facts"]["steady"]["requests"]
              for e in record.events if e["type"] == "probe_result"
              and e["data"]["probe"] == "measure"}  # fmt: skip
    assert steady["direct"] == 8 and steady["direct_aa"] == 8 and steady["loaded"] == 8, steady
    # Cut the walk after its baseline and resume it: the rest is measured brief as well.
    lines = path.read_text(encoding="utf-8").splitlines()
    cut = next(i for i, line in enumerate(lines)
               if json.loads(line).get("type") == "node_enter"
               and json.loads(line).get("node", "").startswith("resources"))  # fmt: skip
    path.write_text("\n".join(lines[:cut]) + "\n", encoding="utf-8")
    done = run_cli("resume", str(path), "--target", healthy_sim.url, "--answers", str(answers),
                   rounds="full")  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    loaded = [e["data"]["facts"]["steady"]["requests"] for e in transcript.load(path).events
              if e["type"] == "probe_result" and e["data"]["round"] == "loaded"]  # fmt: skip
    assert loaded == [8], loaded


def test_a_header_with_rounds_of_another_kind_is_refused_in_one_line(tmp_path: Path) -> None:
    """`resume` takes the depth from the header: one it does not know is refused on load."""
    from tests.forge import write_rechained
    from tests.test_fuzz_transcripts import SEEDS

    header, events = dict(SEEDS[0][0]), list(SEEDS[0][1])
    header["rounds"] = "quick"
    path = write_rechained(tmp_path / "edited.ndjson", header, events)
    with pytest.raises(transcript.TranscriptError) as refused:
        transcript.load(path)
    assert str(refused.value).endswith("header.rounds is 'quick', not one of full, brief"), str(
        refused.value
    )


def test_the_demo_is_brief_unless_asked_and_run_is_full(tmp_path: Path) -> None:
    """The demo shows the answer in half a minute (brief rounds); `run` measures the playbook's
    full rounds. Each --help says its own default."""
    path = tmp_path / "demo.ndjson"
    done = run_cli("demo", "--auto", "--no-nginx", "--max-requests", "1", "--transcript",
                   str(path), rounds=None)  # fmt: skip
    # (one request allowed: every round is skipped, and the walk ends "nothing was measured")
    assert done.returncode == 4, done.stdout[-2000:] + done.stderr[-2000:]
    assert transcript.load(path).header["rounds"] == "brief"
    assert "(--rounds brief: half of each load round's requests" in done.stdout
    flat = {name: " ".join(run_cli(name, "--help", rounds=None).stdout.split())
            for name in ("demo", "run")}  # fmt: skip
    assert "Default: $LATENCY_WIZARD_ROUNDS, else brief" in flat["demo"]
    assert "Default: $LATENCY_WIZARD_ROUNDS, else full" in flat["run"]
