"""Sessions killed at any point resume; replay verifies and renders; export writes the summary."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SimProcess, assert_export_contract, assert_walk_exit, wizard_command
from wizard.record import transcript

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((ROOT / "transcripts" / "examples").glob("*.ndjson"))


def answers_file(tmp_path: Path) -> Path:
    path = tmp_path / "answers.yaml"
    path.write_text(json.dumps({"run_loadgen": False}))
    return path


@pytest.mark.parametrize("kill_after_lines", [2, 9, 25])
def test_killed_session_resumes_to_a_valid_complete_transcript(
    healthy_sim: SimProcess, tmp_path: Path, kill_after_lines: int
) -> None:
    path = tmp_path / "killed.ndjson"
    answers = answers_file(tmp_path)
    process = subprocess.Popen(
        wizard_command("run", "--target", healthy_sim.url, "--answers", str(answers), "--transcript", str(path)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_bytes().splitlines()) >= kill_after_lines:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()
    partial = transcript.load(path)  # a SIGKILL leaves a valid prefix
    assert not partial.complete
    resumed = subprocess.run(
        wizard_command("resume", str(path), "--answers", str(answers), "--target", healthy_sim.url),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert_walk_exit(resumed, path)
    assert "resuming" in resumed.stdout
    loaded = transcript.load(path)
    assert loaded.complete
    entered = [e["node"] for e in loaded.events if e["type"] == "node_enter"]
    assert entered[-1] == "audit.closing" and "resources.kv" in entered
    again = subprocess.run(
        wizard_command("resume", str(path), "--auto"), capture_output=True, text=True, timeout=60
    )
    assert again.returncode == 2 and "is a completed session" in again.stderr


def test_a_kill_at_any_line_leaves_a_prefix_that_verifies_and_restores(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """kill -9 at every line of a whole walk, not only at the three above: each event is one write
    of one line, so a kill leaves either every line up to some event (which verifies and restores
    the walk's state, at a node of the playbook) or a torn last line (which --salvage cuts back to
    the same). The three kills above then show the walk really continuing from such a prefix."""
    from wizard import playbook as playbook_module
    from wizard.playbook import END
    from wizard.probes.runner import ProbeContext
    from wizard.walk.resume import restore
    from wizard.walk.session import Session

    path = tmp_path / "whole.ndjson"
    answers = answers_file(tmp_path)
    result = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--answers", str(answers),
                       "--transcript", str(path)),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert_walk_exit(result, path)
    lines = path.read_bytes().splitlines(keepends=True)
    book = playbook_module.load()
    cut = tmp_path / "cut.ndjson"
    for count in range(1, len(lines)):
        cut.write_bytes(b"".join(lines[:count]))
        partial = transcript.load(cut)
        assert not partial.complete and len(partial.events) == count - 1
        session = Session(book, ProbeContext(target=healthy_sim.url), None, None)
        at = restore(session, partial.events)
        assert at == END or at in book.nodes, (count, at)
        # The same kill in the middle of writing the next line: salvage keeps this prefix.
        cut.write_bytes(b"".join(lines[:count]) + lines[count][: len(lines[count]) // 2])
        salvaged = transcript.load(cut, salvage=True)
        assert salvaged.lost is not None and len(salvaged.events) == count - 1


def test_ctrl_c_keeps_the_transcript_and_says_how_to_resume(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    path = tmp_path / "interrupted.ndjson"
    process = subprocess.Popen(
        wizard_command("run", "--target", healthy_sim.url, "--auto", "--transcript", str(path)),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            path.exists() and len(path.read_bytes().splitlines()) >= 6
        ):
            time.sleep(0.01)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130, (out[-2000:], err[-2000:])
    assert f"latency-wizard resume {path}" in out
    assert "Traceback" not in err
    assert not transcript.load(path).complete


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_examples_replay_and_export(example: Path, tmp_path: Path) -> None:
    loaded = transcript.load(example)
    assert loaded.complete
    replay = subprocess.run(
        wizard_command("replay", str(example)), capture_output=True, text=True, timeout=60
    )
    assert (
        replay.returncode == 0 and "verified" in replay.stdout and "walk complete" in replay.stdout
    )
    md = subprocess.run(wizard_command("export", str(example), "--format", "md"), capture_output=True, text=True,
                        timeout=60).stdout  # fmt: skip
    for heading in ("# Latency incident summary", "## TL;DR", "## Evidence", "## Baseline", "## Changes", "## Findings",
                    "## Timeline", "## Audit", "## Replay"):  # fmt: skip
        assert heading in md
    out = tmp_path / "summary.html"
    result = subprocess.run(wizard_command("export", str(example), "--format", "html", "-o", str(out)),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0
    page = out.read_text()
    measured = any(e["type"] == "measurement" for e in loaded.events)
    assert page.startswith("<!doctype html>") and ("<svg" in page) is measured
    assert (
        "<script src=" not in page and 'xlink:href="http' not in page
    )  # self-contained: nothing to fetch
    data = json.loads(subprocess.run(wizard_command("export", str(example), "--format", "json"),
                                     capture_output=True, text=True, timeout=60).stdout)  # fmt: skip
    assert_export_contract(data)


def test_tampered_copy_fails_replay_with_its_line(tmp_path: Path) -> None:
    example = EXAMPLES[0]
    copy = tmp_path / "tampered.ndjson"
    lines = example.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"type":"', '"type":"x', 1)  # one edit, still valid JSON
    copy.write_text("".join(lines))
    result = subprocess.run(
        wizard_command("replay", str(copy)), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard replay: error: {copy}:6: line was edited (its hash does not match)"
    ]
    truncated = tmp_path / "truncated.ndjson"
    truncated.write_bytes(example.read_bytes()[:-40])
    result = subprocess.run(
        wizard_command("export", str(truncated)), capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "last line is truncated" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_replay_rerun_compares_with_now(healthy_sim: SimProcess, tmp_path: Path) -> None:
    path = tmp_path / "short.ndjson"
    shutil.copy(EXAMPLES[0], path)
    result = subprocess.run(
        wizard_command("replay", str(path), "--rerun", "--target", healthy_sim.url),
        capture_output=True, text=True, timeout=600, env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "vs the recording" in result.stdout


def test_resume_finds_the_evidence_from_another_directory(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """Relative --vllm-log / --host-evidence are kept absolute, so resume works from anywhere."""
    start_dir, other_dir = tmp_path / "start", tmp_path / "elsewhere"
    start_dir.mkdir()
    other_dir.mkdir()
    shutil.copy(healthy_sim.log_file, start_dir / "vllm.log")
    shutil.copytree(healthy_sim.host_evidence, start_dir / "host")
    path = tmp_path / "killed.ndjson"
    answers = answers_file(tmp_path)
    process = subprocess.Popen(
        wizard_command("run", "--target", healthy_sim.url, "--answers", str(answers), "--transcript", str(path),
                       "--vllm-log", "vllm.log", "--host-evidence", "host"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=start_dir,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # killed before the first node's probes have run
        if path.exists() and len(path.read_bytes().splitlines()) >= 2:
            break
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait()
    header = transcript.load(path).header
    assert header["vllm_log"] == str(start_dir / "vllm.log")
    assert header["host_evidence"] == str(start_dir / "host")
    resumed = subprocess.run(wizard_command("resume", str(path), "--answers", str(answers), "--target", healthy_sim.url),
                             capture_output=True, text=True, timeout=300, cwd=other_dir)  # fmt: skip
    assert_walk_exit(resumed, path)
    facts = {e["data"]["as"]: e["data"]["facts"] for e in transcript.load(path).events
             if e["type"] == "probe_result"}  # fmt: skip
    assert facts["host"]["source"] == "evidence" and facts["host"]["physical_cores"] == 32
    assert facts["vllmlog"]["available"] and facts["vllmlog"]["kv_cache_tokens"]


def test_the_summary_carries_the_log_and_host_evidence() -> None:
    example = ROOT / "transcripts" / "examples" / "3-did-not-start-from-its-log.ndjson"
    data = json.loads(subprocess.run(wizard_command("export", str(example), "--format", "json"),
                                     capture_output=True, text=True, timeout=60).stdout)  # fmt: skip
    # The log as last read: the restarted server's start (the refused one is the finding's).
    log = data["evidence"]["vllm_log"]
    assert (log["model"], log["max_num_batched_tokens"], log["max_model_len"]) == (
        "meta-llama/Llama-3.1-8B-Instruct", 8192, 8192,
    )  # fmt: skip
    assert log["error_kinds"] == [] and log["kv_cache_tokens"]  # it started
    [finding] = data["findings"]
    assert "max_num_batched_tokens 2048 is smaller than max_model_len 8192" in finding["evidence"]
    md = subprocess.run(wizard_command("export", str(example), "--format", "md"),
                        capture_output=True, text=True, timeout=60).stdout  # fmt: skip
    assert "- **vLLM log (" in md and "max_num_batched_tokens 8,192 tokens" in md


def _killed_after_baseline(url: str, tmp_path: Path) -> Path:
    """A walk SIGKILLed once its baseline round is recorded (the start's facts are in it)."""
    path = tmp_path / "killed.ndjson"
    process = subprocess.Popen(
        wizard_command("run", "--target", url, "--answers", str(answers_file(tmp_path)), "--transcript", str(path)),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and b'"type":"measurement"' not in (
        path.read_bytes() if path.exists() else b""
    ):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return path


def test_resume_keeps_the_servers_limits_and_records_itself(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    """The long-prompt round after a resume must still fit max_model_len (it once sent 12,000-token
    prompts to a 2,048-token model and every request failed)."""
    sim = sim_factory("--max-model-len", "2048")
    path = _killed_after_baseline(sim.url, tmp_path)
    resumed = subprocess.run(
        wizard_command("resume", str(path), "--answers", str(answers_file(tmp_path)), "--target", sim.url),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert_walk_exit(resumed, path)
    loaded = transcript.load(path)
    resumes = [e["data"] for e in loaded.events if e["type"] == "resume"]
    assert len(resumes) == 1 and resumes[0]["differs"] == {}
    assert resumes[0]["server"]["max_model_len"] == 2048
    long = [
        e["data"]
        for e in loaded.events
        if e["type"] == "probe_result" and e["data"]["as"] == "long"
    ]
    assert long and long[0]["error"] is None, long
    assert long[0]["facts"]["spec"]["input_tokens"] + 64 <= 2048


def test_resume_refuses_a_different_server_behind_the_same_url(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    first = sim_factory("--served-model-name", "model-a")
    path = _killed_after_baseline(first.url, tmp_path)
    port = first.url.rsplit(":", 1)[1]
    first.stop()
    sim_factory("--served-model-name", "model-b", "--port", port)
    before = path.read_bytes()
    resumed = subprocess.run(
        wizard_command("resume", str(path), "--answers", str(answers_file(tmp_path)), "--target", first.url),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert resumed.returncode == 1
    assert "a different server answers" in resumed.stderr and "model-a -> model-b" in resumed.stderr
    assert len(resumed.stderr.strip().splitlines()) == 1
    loaded = transcript.load(path)  # kept valid: the prefix plus the refused resume
    assert path.read_bytes().startswith(before) and not loaded.complete
