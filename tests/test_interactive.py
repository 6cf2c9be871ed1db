"""The interactive operator through a real pty: prompts, Ctrl-C that keeps the transcript, resume."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect
import pytest

from tests.conftest import SimProcess
from wizard import transcript

DOWN = "\x1b[B"
CLEAR = "\x15"  # Ctrl-U: the prompt is pre-filled with the default


def spawn(*args: str) -> pexpect.spawn:
    env = {
        **os.environ,
        "PROMPT_TOOLKIT_NO_CPR": "1",
        "TERM": "xterm",
        "COLUMNS": "120",
        "LINES": "40",
    }
    return pexpect.spawn(sys.executable, ["-m", "wizard", *args], env=env, encoding="utf-8", timeout=120,
                         dimensions=(40, 120))  # fmt: skip


@pytest.mark.timeout(400)
def test_prompts_ctrl_c_and_resume(healthy_sim: SimProcess, tmp_path: Path) -> None:
    path = tmp_path / "interactive.ndjson"
    child = spawn("run", "--target", healthy_sim.url, "--transcript", str(path))
    child.expect("How many GPUs")
    child.sendintr()  # Ctrl-C at the first question
    child.expect("continue with: latency-wizard resume")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 130
    partial = transcript.load(path)
    assert not partial.complete
    assert any(e["type"] == "measurement" for e in partial.events)  # the baseline is kept

    child = spawn("resume", str(path))
    child.expect("resuming")
    prompts = [
        "How many GPUs", "physical CPU cores", r"LAT\d{3}: apply", "tensor-parallel-size",
        "How are the GPUs linked", "How many nodes", r"LoadGen SingleStream validation[^\n]*\(Y/n\)",
        "walk complete",
    ]  # fmt: skip
    declined = []
    previous: tuple[int, str] | None = None
    while True:
        index = child.expect(prompts)
        if (index, child.after) == previous:
            continue  # the same prompt, redrawn after a keystroke
        previous = (index, child.after)
        # prompt_toolkit draws the question before it reads keys; typing too early loses them
        time.sleep(1.0)
        if index == 0:
            child.sendline(CLEAR + "2")
        elif index == 1:
            child.sendline(CLEAR + "2")  # 2 cores for 2 GPUs: fewer than 2 + N
        elif index == 2:
            declined.append(child.after)
            child.send(DOWN)  # the last choice is "skip"
            time.sleep(0.5)
            child.send("\r")
        elif index == 3:
            child.sendline(CLEAR + "1")
        elif index == 4:
            child.send("\r")  # the default choice
        elif index == 5:
            child.sendline(CLEAR + "1")
        elif index == 6:
            child.sendline("n")
        else:
            break
    child.expect(pexpect.EOF)
    child.close()
    assert "LAT030: apply" in declined
    assert child.exitstatus == 0
    loaded = transcript.load(path)
    assert loaded.complete
    answers = {e["data"]["id"]: e["data"]["value"] for e in loaded.events if e["type"] == "answer"}
    assert (
        answers["gpus"] == 2 and answers["physical_cores"] == 2 and answers["run_loadgen"] is False
    )
    assert "LAT030" in {e["data"]["code"] for e in loaded.events if e["type"] == "finding"}
    notes = [e["data"]["text"] for e in loaded.events if e["type"] == "note"]
    assert any("LAT030: change not applied (skipped by the operator)" in n for n in notes)
