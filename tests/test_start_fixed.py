"""A server that refused to start, fixed and started again: the change is judged by its cause's
own evidence (the server answers; its log, read again, has no refusal and shows the new value).

In-process walks (the engine with a scripted operator) against real simulator processes: the
first refuses to start and writes its refusal to the log; the "applier" starts the fixed
simulator on the same port with the computed value, its log appended to the same file, as an
engineer restarting vLLM would. The walk is stopped at the baseline's first question: the
start's verdict comes before any round is measured.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, refused_start, start_sim
from wizard import aio, playbook, transcript
from wizard.engine import Session, walk
from wizard.nginx_runner import free_port
from wizard.operator import Decision, ScriptedOperator
from wizard.playbook import Question
from wizard.probes.runner import ProbeContext

# vLLM 0.32's CPU build, as the simulator plays it: 2,048 tokens of context.
CPU = ("--device", "cpu", "--model", "/models/tiny", "--served-model-name", "tiny",
       "--max-model-len", "2048", "--load-format", "dummy", "--cpu-kvcache-space", "1")  # fmt: skip


class Restarter:
    """Starts the fixed simulator with the computed value, its log written to ``log``."""

    def __init__(self, tmp_path: Path, port: int, log: Path, flags: tuple[str, ...]) -> None:
        self.tmp_path, self.port, self.log, self.flags = tmp_path, port, log, flags
        self.sim: SimProcess | None = None

    def can_apply(self, change: dict[str, Any]) -> bool:
        return change["layer"] == "vllm" and change.get("after") is not None

    def apply(self, change: dict[str, Any]) -> Decision:
        flag = "--" + change["parameter"].replace("_", "-")
        self.sim = start_sim(self.tmp_path, *self.flags, "--port", str(self.port),
                             "--log-file", str(self.log), flag, str(change["after"]))  # fmt: skip
        return Decision(applied=True, layer="vllm", parameter=change["parameter"],
                        before=str(change["before"]), after=str(change["after"]),
                        note="restarted by the test", restarted=True)  # fmt: skip


class Measuring(Exception):
    """The walk reached the baseline round: what this test looks at is decided by then."""


class StopAtBaseline(ScriptedOperator):
    async def ask(self, question: Question, default: Any, lang: str, known: bool = False) -> Any:
        if question.id == "api":
            raise Measuring
        return await super().ask(question, default, lang, known)


def fix_and_walk(
    tmp_path: Path, refused: tuple[str, ...], fixed: tuple[str, ...], code: str,
    fixed_log: Path | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Refuse to start, walk, apply ``code``'s change by starting the fixed server; the events."""
    port, log = free_port(), tmp_path / "vllm.log"
    refused_start(port, log, *refused)
    book = playbook.load()
    path = tmp_path / "walk.ndjson"
    target = f"http://127.0.0.1:{port}"
    writer = transcript.TranscriptWriter.create(
        path, {"playbook_id": book.id, "playbook_sha256": book.sha256, "target": target},
        transcript.Redactor([]),
    )  # fmt: skip
    restarter = Restarter(tmp_path, port, fixed_log or log, fixed)
    operator = StopAtBaseline({code: "apply", "restarted": True}, restarter)
    session = Session(book, ProbeContext(target=target, vllm_log=str(log)), operator, writer)
    try:
        with pytest.raises(Measuring):
            aio.run(walk(session))
    finally:
        writer.close()
        if restarter.sim is not None:
            restarter.sim.stop()
    return transcript.load(path).events


def verdicts(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["data"] for e in events if e["type"] == "verdict"]


def test_a_budget_raised_to_max_model_len_is_proven_by_the_start(tmp_path: Path) -> None:
    events = fix_and_walk(
        tmp_path, ("--scenario", "chunked-prefill-off-bad-budget"),
        ("--scenario", "chunked-prefill-off-bad-budget"), "LAT014",
    )  # fmt: skip
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["parameter"], change["before"], change["after"]) == (
        "max_num_batched_tokens", "2048", "8192",
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["round"]) == ("LAT014", "start#2")
    assert verdict["verdict"] == "cause gone"
    assert verdict["evidence"] == (
        "the server answers (/health 200) and its log's new start has no refusal: "
        "max_num_batched_tokens 8192 for max_model_len 8192, `enable_chunked_prefill=False`"
    )
    # Judged where the server answers again, before the baseline's first round.
    nodes = [e["node"] for e in events if e["type"] in ("verdict", "measurement")]
    assert nodes == ["startup.restarted"]
    [check] = [e["data"] for e in events if e["type"] == "config_check"]
    assert (check["verdict"], check["diff"]) == (
        "confirmed", {"log.max_num_batched_tokens": [2048, 8192]},
    )  # fmt: skip


def test_a_shorter_context_that_fits_the_kv_cache_is_proven_by_the_start(tmp_path: Path) -> None:
    # 16 blocks of 128 tokens cannot hold one request of 2,048 (vLLM needs a 17th, its null block).
    small = (*CPU, "--num-gpu-blocks-override", "16")
    events = fix_and_walk(tmp_path, small, small, "LAT040")
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["parameter"], change["before"]) == ("max_model_len", "2048")
    assert change["after"] == "1920"  # vLLM's own estimate in its refusal
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["verdict"]) == ("LAT040", "cause gone")
    assert verdict["evidence"].endswith("its KV cache holds 2048 tokens for max_model_len 1920")
    [check] = [e["data"] for e in events if e["type"] == "config_check"]
    assert (check["verdict"], check["diff"]) == ("confirmed", {"log.max_model_len": [2048, 1920]})


def test_a_second_change_made_with_the_fix_is_flagged(tmp_path: Path) -> None:
    """The new start's logged arguments differ from the refused start's in more than the
    declared value: the one change is not what ran (LAT091)."""
    small = (*CPU, "--num-gpu-blocks-override", "16")
    events = fix_and_walk(tmp_path, small, (*small, "--max-num-seqs", "64"), "LAT040")
    [check] = [e["data"] for e in events if e["type"] == "config_check"]
    assert check["verdict"] == "several"
    assert check["diff"] == {
        "log.max_model_len": [2048, 1920], "log.max_num_seqs": ["(default)", 64],
    }  # fmt: skip
    [flagged] = [
        e["data"] for e in events if e["type"] == "finding" and e["data"]["code"] == "LAT091"
    ]
    assert flagged["evidence"] == check["text"]


def test_a_log_the_restarted_server_never_wrote_to_judges_nothing(tmp_path: Path) -> None:
    """The server answers, but its log went elsewhere: the file still holds the refusal only."""
    events = fix_and_walk(
        tmp_path, ("--scenario", "chunked-prefill-off-bad-budget"),
        ("--scenario", "chunked-prefill-off-bad-budget"), "LAT014",
        fixed_log=tmp_path / "elsewhere.log",
    )  # fmt: skip
    assert verdicts(events) == []
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    said = "LAT014: the log holds nothing written since the failed start"
    assert any(n.startswith(said) for n in notes)


REAL_LOGS = Path(__file__).parent / "fixtures" / "vllm-log"


@pytest.mark.parametrize(
    ("refused", "then", "code", "gone"),
    [
        ("real-0.32-chunked-off", "real-0.32-healthy", "LAT014", True),  # chunked prefill on
        ("real-0.32-chunked-off", "real-0.32-chunked-off", "LAT014", False),  # refused again
        ("real-0.32-override16", "real-0.32-override17", "LAT040", True),  # one block more
        ("real-0.32-override16", "real-0.32-override16", "LAT040", False),
    ],
)
def test_real_032_logs_of_a_refusal_then_a_start_are_judged_by_the_last_start(
    tmp_path: Path, refused: str, then: str, code: str, gone: bool
) -> None:
    """Real vLLM 0.32 logs, a refused start and the next one appended: the gone checks read the
    last start as the walk reads the log again."""
    from wizard import conditions
    from wizard.probes.vllm_log import read_text, walk_facts

    log = tmp_path / "vllm.log"
    log.write_text(
        (REAL_LOGS / f"{refused}.log").read_text() + (REAL_LOGS / f"{then}.log").read_text()
    )
    with log.open() as handle:
        facts = {"vllmlog": walk_facts(read_text(handle)), "endpoints": {"health_status": 200}}
    assert facts["vllmlog"]["runs_count"] == 2
    assert conditions.evaluate(playbook.load().findings[code].gone, facts, {}) is gone


# A 24 GiB GPU whose profile run cannot hold the sampler's logits for 16,384 sequences (15 GiB of
# weights, 1.5 GiB of activations, 7.83 GiB of float32 logits): PyTorch's CUDA out of memory.
OOM = ("--gpu-memory-gib", "24", "--max-num-batched-tokens", "16384", "--max-num-seqs", "16384")


def test_fewer_sequences_after_a_cuda_oom_at_start_are_proven_by_the_start(tmp_path: Path) -> None:
    events = fix_and_walk(tmp_path, OOM, OOM, "LAT043")
    [found] = [
        e["data"] for e in events if e["type"] == "finding" and e["data"]["code"] == "LAT043"
    ]
    assert found["evidence"].startswith("the vLLM log reports CUDA out of memory at line 6 ")
    assert found["evidence"].endswith("(device memory 24 GiB)")
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["parameter"], change["before"], change["after"]) == (
        "max_num_seqs", "16384", "8192",
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["round"], verdict["verdict"]) == (
        "LAT043", "start#2", "cause gone",
    )  # fmt: skip
    assert verdict["evidence"].startswith(
        "the server answers (/health 200) and its log's new start"
    )
    assert verdict["evidence"].endswith("with no CUDA out of memory: max_num_seqs 8192")
    # The refused start's logged arguments against the new start's: the declared one changed.
    [check] = [e["data"] for e in events if e["type"] == "config_check"]
    assert check["verdict"] == "confirmed"
    assert check["diff"] == {"log.max_num_seqs": [16384, 8192]}


def test_an_oom_start_whose_log_got_nothing_new_judges_nothing(tmp_path: Path) -> None:
    events = fix_and_walk(tmp_path, OOM, OOM, "LAT043", fixed_log=tmp_path / "elsewhere.log")
    assert verdicts(events) == []
    assert not [e for e in events if e["type"] == "config_check"]
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any(
        n.startswith("LAT043: the log holds nothing written since the failed start") for n in notes
    )
