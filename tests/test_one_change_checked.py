"""After a restart, the one declared change is checked against what the server says about itself.

In-process walks (the engine with a scripted operator) against real simulator processes: an
Applier restarts the simulator on the same port and log file, with the declared flag only, or
with a second, undeclared one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_sim
from wizard import playbook
from wizard.probes.runner import ProbeContext
from wizard.record import transcript
from wizard.ui import aio
from wizard.walk.engine import walk
from wizard.walk.operator import Decision, ScriptedOperator
from wizard.walk.session import Session


class RestartingApplier:
    """Restarts the simulator with the proposed flag (and optionally an undeclared extra)."""

    def __init__(self, tmp_path: Path, extra: tuple[str, ...]) -> None:
        self.tmp_path = tmp_path
        self.extra = extra
        self.log = tmp_path / "vllm.log"
        self.sim = start_sim(tmp_path, "--scenario", "kv-pressure")
        self.port = self.sim.url.rsplit(":", 1)[1]
        # The first server writes to a log of its own: copy it where the restarts append.
        self.log.write_text(self.sim.log())

    def can_apply(self, change: dict[str, Any]) -> bool:
        return change["layer"] == "vllm" and change.get("after") is not None

    def apply(self, change: dict[str, Any]) -> Decision:
        self.sim.stop()
        flag = "--" + change["parameter"].replace("_", "-")
        self.sim = start_sim(self.tmp_path, "--scenario", "kv-pressure", "--port", self.port,
                             flag, str(change["after"]), *self.extra)  # fmt: skip
        with self.log.open("a") as log:
            log.write(self.sim.log())
        return Decision(applied=True, layer="vllm", parameter=change["parameter"],
                        before=str(change["before"]), after=str(change["after"]),
                        note="restarted by the test", restarted=True)  # fmt: skip


def walk_with(tmp_path: Path, applier: RestartingApplier) -> transcript.Transcript:
    book = playbook.load()
    path = tmp_path / "walk.ndjson"
    writer = transcript.TranscriptWriter.create(
        path, {"playbook_id": book.id, "playbook_sha256": book.sha256, "target": applier.sim.url},
        transcript.Redactor([]),
    )  # fmt: skip
    # The GPU host's files too, as a walk on the host has them: LAT010's share is computed from
    # the device's memory, which the simulator's log (like vLLM's) does not print.
    ctx = ProbeContext(target=applier.sim.url, vllm_log=str(applier.log),
                       host_evidence=str(applier.sim.host_evidence))  # fmt: skip
    answers = {"run_loadgen": False, "LAT010": "apply"}
    session = Session(book, ctx, ScriptedOperator(answers, applier), writer)
    try:
        aio.run(walk(session))
    finally:
        writer.close()
        applier.sim.stop()
    return transcript.load(path)


def checks(loaded: transcript.Transcript) -> list[dict[str, Any]]:
    return [e["data"] for e in loaded.events if e["type"] == "config_check"]


@pytest.mark.slow
def test_the_declared_change_is_confirmed_by_the_server(tmp_path: Path) -> None:
    loaded = walk_with(tmp_path, RestartingApplier(tmp_path, extra=()))
    [check] = checks(loaded)
    assert check["verdict"] == "confirmed", check
    assert check["declared"] == "gpu_memory_utilization"
    assert "LAT091" not in {e["data"]["code"] for e in loaded.events if e["type"] == "finding"}


@pytest.mark.slow
def test_an_undeclared_second_change_is_flagged_with_the_diff(tmp_path: Path) -> None:
    loaded = walk_with(tmp_path, RestartingApplier(tmp_path, extra=("--max-num-seqs", "64")))
    [check] = checks(loaded)
    assert check["verdict"] == "several", check
    assert set(check["changed"]) == {"gpu_memory_utilization", "max_num_seqs"}
    flagged = [
        e["data"] for e in loaded.events if e["type"] == "finding" and e["data"]["code"] == "LAT091"
    ]
    assert flagged and "max_num_seqs" in flagged[0]["evidence"]


def test_what_vllm_derives_from_the_declared_change_is_no_second_change() -> None:
    """Chunked prefill on moves an unset budget with it (vLLM derives max_num_batched_tokens from
    it), CUDA graphs on move the KV blocks: consequences, not undeclared changes. The same budget
    move without chunked prefill changing is one."""
    from wizard.levers import config_check

    before = config_check.reported(
        {}, {"chunked_prefill": False, "max_num_batched_tokens": None, "enforce_eager": True}
    )
    after = config_check.reported(
        {}, {"chunked_prefill": True, "max_num_batched_tokens": 8192, "enforce_eager": True}
    )
    diffs = config_check.differences(before, after)
    verdict = config_check.judge("enable_chunked_prefill", diffs, set(before) & set(after))
    assert verdict["verdict"] == "confirmed", verdict
    budget_only = {"log.max_num_batched_tokens": diffs["log.max_num_batched_tokens"]}
    assert (
        config_check.judge("enable_chunked_prefill", budget_only, set(before))["verdict"] == "other"
    )
    graphs = {"log.enforce_eager": [True, False], "metrics.num_gpu_blocks": [7000, 6800]}
    assert config_check.judge("enforce_eager", graphs, set(graphs))["verdict"] == "confirmed"
    # The server check is said in Chinese too (issue #13: zh throughout).
    assert verdict["texts"]["zh"] == "服务已确认：enable_chunked_prefill 否 -> 是"
