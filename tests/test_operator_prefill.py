"""A change recorded from an answers file: what the file leaves out is the proposal's values."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

from wizard import playbook
from wizard.walk.operator import ScriptedOperator


def test_an_answers_file_without_the_value_before_takes_the_evidence(tmp_path: Path) -> None:
    book = playbook.load()
    answers = tmp_path / "answers.yaml"
    answers.write_text("LAT010:\n  parameter: gpu_memory_utilization\n  after: '0.95'\n")
    operator = ScriptedOperator.from_file(answers, book)
    # The proposal as changes.propose computes it from the server's log (0.9 there).
    proposal = {"layer": "vllm", "parameter": "gpu_memory_utilization", "before": 0.9,
                "before_from": "vllmlog.gpu_memory_utilization", "after": 0.95,
                "apply": "--gpu-memory-utilization 0.95"}  # fmt: skip
    finding = replace(book.findings["LAT010"], change=proposal)
    decision = asyncio.run(operator.decide(finding, "en"))
    assert decision.applied
    assert (decision.parameter, decision.before, decision.after) == (
        "gpu_memory_utilization", "0.9", "0.95",
    )  # fmt: skip
