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
from wizard import playbook
from wizard.levers.nginx_runner import free_port
from wizard.playbook import Question
from wizard.probes.runner import ProbeContext
from wizard.record import transcript
from wizard.ui import aio
from wizard.walk.engine import walk
from wizard.walk.operator import Decision, ScriptedOperator
from wizard.walk.session import Session

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
    fixed_log: Path | None = None, host_evidence: Path | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Refuse to start, walk, apply ``code``'s change by starting the fixed server; the events.
    With ``host_evidence`` the refused simulator writes the GPU host's files there."""
    port, log = free_port(), tmp_path / "vllm.log"
    evidence = ("--host-evidence", str(host_evidence)) if host_evidence else ()
    refused_start(port, log, *refused, *evidence)
    return walk_events(
        tmp_path, port, log, Restarter(tmp_path, port, fixed_log or log, fixed), code,
        host_evidence=host_evidence,
    )  # fmt: skip


def walk_events(
    tmp_path: Path, port: int, log: Path, restarter: Restarter, code: str,
    book: playbook.Playbook | None = None, start: str | None = None,
    host_evidence: Path | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Walk (from ``start``, its log read first) to the baseline's first question or the end,
    ``restarter`` applying ``code``'s change; the events."""
    from wizard.probes.readers import vllm_logs

    book = book or playbook.load()
    path = tmp_path / "walk.ndjson"
    target = f"http://127.0.0.1:{port}"
    writer = transcript.TranscriptWriter.create(
        path, {"playbook_id": book.id, "playbook_sha256": book.sha256, "target": target},
        transcript.Redactor([]),
    )  # fmt: skip
    operator = StopAtBaseline({code: "apply", "restarted": True}, restarter)
    ctx = ProbeContext(target=target, vllm_log=str(log),
                       host_evidence=str(host_evidence) if host_evidence else None)  # fmt: skip
    session = Session(book, ctx, operator, writer)
    try:
        if start is None:
            with pytest.raises(Measuring):
                aio.run(walk(session))
        else:  # a node past the first: the log as the first node would have read it
            session.facts["vllmlog"] = aio.run(vllm_logs.probe(ctx, {}))
            aio.run(walk(session, start=start))
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
    from wizard.playbook import conditions
    from wizard.probes.readers.vllm_log import read_text, walk_facts

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
        "max_num_seqs", "16384", "15673",
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["round"], verdict["verdict"]) == (
        "LAT043", "start#2", "cause gone",
    )  # fmt: skip
    assert verdict["evidence"].startswith(
        "the server answers (/health 200) and its log's new start"
    )
    assert verdict["evidence"].endswith("with no CUDA out of memory: max_num_seqs 15673")
    # The refused start's logged arguments against the new start's: the declared one changed.
    [check] = [e["data"] for e in events if e["type"] == "config_check"]
    assert check["verdict"] == "confirmed"
    assert check["diff"] == {"log.max_num_seqs": [16384, 15673]}


def test_an_oom_start_whose_log_got_nothing_new_judges_nothing(tmp_path: Path) -> None:
    events = fix_and_walk(tmp_path, OOM, OOM, "LAT043", fixed_log=tmp_path / "elsewhere.log")
    assert verdicts(events) == []
    assert not [e for e in events if e["type"] == "config_check"]
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any(
        n.startswith("LAT043: the log holds nothing written since the failed start") for n in notes
    )


# What a GPU vLLM writes when a worker runs out of memory while serving (PyTorch's text, with a
# tensor-parallel worker's prefix, facts/vllm.md §5), and the engine core dying of it.
SERVING_OOM = (
    "(Worker_TP1 pid=4112) ERROR 12-05 10:02:11 [multiproc_executor.py:702] torch.OutOfMemoryError: "
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.19 GiB of "
    "which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.12 GiB memory in "
    "use. Of the allocated memory 75.40 GiB is allocated by PyTorch, and 1.21 GiB is reserved by "
    "PyTorch but unallocated. If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"
    "(EngineCore pid=4110) ERROR 12-05 10:02:11 [core.py:1759] EngineCore encountered a fatal error.\n"
)


class Replacer(Restarter):
    """Stops the running simulator before starting the fixed one on its port (a restart);
    ``then`` is what the new server's log says after its start."""

    def __init__(self, running: SimProcess, then: str, *args: Any) -> None:
        super().__init__(*args)
        self.running, self.then = running, then

    def apply(self, change: dict[str, Any]) -> Decision:
        self.running.stop()
        decision = super().apply(change)
        with self.log.open("a") as handle:
            handle.write(self.then)
        return decision


@pytest.mark.parametrize(
    ("fixed_log", "oom_again", "cut"),
    [(True, False, False), (True, True, False), (False, False, False), (True, False, True)],
)
def test_an_oom_while_serving_is_not_called_gone_by_a_clean_start(
    tmp_path: Path, fixed_log: bool, oom_again: bool, cut: bool
) -> None:
    """A server that started, served and ran out of memory: a new start without the OOM shows
    only that it starts (inconclusive, with the reason); an OOM in the new start is still there."""
    from dataclasses import replace

    from wizard.playbook import END, Edge

    port, log = free_port(), tmp_path / "vllm.log"
    flags = ("-tp", "2", "--max-num-seqs", "256")
    running = start_sim(tmp_path, *flags, "--port", str(port), "--log-file", str(log))
    if cut:  # the command that started it in place of its logged arguments (a script's log)
        command = "vllm serve meta-llama/Llama-3.1-8B-Instruct -tp 2 --max-num-seqs 256\n"
        log.write_text(command + log.read_text().split("\n", 1)[1])
    with log.open("a") as handle:
        handle.write(SERVING_OOM)
    book = playbook.load()
    # The walk ends after the node that judges the log's memory (the test looks at nothing more).
    node = book.nodes["parallelism.startup"]
    book = replace(book, nodes={**book.nodes, node.id: replace(node, next=(Edge(END),))})
    new_log = log if fixed_log else tmp_path / "elsewhere.log"
    replacer = Replacer(running, SERVING_OOM if oom_again else "", tmp_path, port, new_log, flags)
    try:
        events = walk_events(tmp_path, port, log, replacer, "LAT043", book, start=node.id)
    finally:
        running.stop()
    # Found while serving: the log's last run had started.
    [found] = [e["data"] for e in events if e["type"] == "finding"]
    assert found["code"] == "LAT043" and found["evidence"].endswith("(device memory 79.2 GiB)")
    # The step asked 2.00 GiB with 1.06 GiB free: 256 x (1.06 - 0.005) / (2.00 + 0.005) = 134.7.
    change = next(e["data"] for e in events if e["type"] == "change")
    assert [change[k] for k in ("parameter", "before", "after")] == ["max_num_seqs", "256", "134"]
    if not fixed_log:
        assert verdicts(events) == []
        notes = [e["data"]["text"] for e in events if e["type"] == "note"]
        assert any(
            n.startswith("LAT043: the log holds nothing written since the change") for n in notes
        )
        return
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["round"]) == ("LAT043", "start#2")
    checks = [e["data"] for e in events if e["type"] == "config_check"]
    if cut:
        assert checks == []
        notes = [e["data"]["text"] for e in events if e["type"] == "note"]
        assert any(n.startswith("the earlier start logged no configuration") for n in notes)
    else:
        assert [(c["verdict"], c["diff"]) for c in checks] == [
            ("confirmed", {"log.max_num_seqs": [256, 134]}),
        ]  # fmt: skip
    if oom_again:
        assert verdict["verdict"] == "cause still there"
        return
    assert verdict["verdict"] == "inconclusive"
    said = "but LAT043 came while the server was serving, after its start"
    assert verdict["reason"].startswith(said)
    assert verdict["reason_texts"]["zh"].startswith("但 LAT043 出现在服务运行期间")
    # The verdict's line says why with its evidence (the summary and the replay show that line).
    assert verdict["evidence"].endswith(f"max_num_seqs 134; {verdict['reason']}")
    assert verdict["evidence_texts"]["zh"].endswith(verdict["reason_texts"]["zh"])


class LogAppender(Restarter):
    """The real vLLM's next start, recorded: a simulator answers on the port (its own log
    elsewhere) while the recorded log of the real server's start is appended to the walk's."""

    def __init__(self, recorded: str, *args: Any) -> None:
        super().__init__(*args)
        self.recorded = recorded

    def apply(self, change: dict[str, Any]) -> Decision:
        log, self.log = self.log, self.tmp_path / "answering-sim.log"
        decision = super().apply(change)
        with log.open("a") as handle:
            handle.write(self.recorded)
        return decision


@pytest.mark.parametrize(
    ("refused", "skip", "then", "code", "check"),
    [
        # chunked prefill back on and the budget flag dropped: two flags gone, one declared
        ("real-0.32-chunked-off", 0, "real-0.32-healthy", "LAT014", "several"),
        # one block more, where a shorter context was declared
        ("real-0.32-override16", 0, "real-0.32-override17", "LAT040", "other"),
        # the refused start's log cut after its arguments (as `tail` gives it): nothing to compare
        ("real-0.32-override16", 12, "real-0.32-override17", "LAT040", None),
    ],
)
def test_real_032_starts_are_checked_for_one_change_by_their_logged_arguments(
    tmp_path: Path, refused: str, skip: int, then: str, code: str, check: str | None
) -> None:
    """vLLM 0.32 logs `non-default args` before it checks them (line 12 of a refused start):
    the new start's logged arguments are compared with the refused start's."""
    port, log = free_port(), tmp_path / "vllm.log"
    lines = (REAL_LOGS / f"{refused}.log").read_text().splitlines(keepends=True)
    log.write_text("".join(lines[skip:]))
    restarter = LogAppender((REAL_LOGS / f"{then}.log").read_text(), tmp_path, port, log, CPU)
    events = walk_events(tmp_path, port, log, restarter, code)
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["verdict"]) == (code, "cause gone")
    checks = [e["data"] for e in events if e["type"] == "config_check"]
    flagged = [e for e in events if e["type"] == "finding" and e["data"]["code"] == "LAT091"]
    if check is None:
        assert checks == [] and flagged == []
        [said] = [e["data"] for e in events if e["type"] == "note"
                  and e["data"]["text"].startswith("the refused start logged no configuration")]  # fmt: skip
        assert said["texts"]["zh"].startswith("被拒绝的启动没有记录配置")
        return
    [found] = checks
    assert found["verdict"] == check
    assert len(flagged) == 1
    if check == "several":
        assert found["diff"] == {
            "log.enable_chunked_prefill": [False, "(default)"],
            "log.max_num_batched_tokens": [512, "(default)"],
        }
    else:
        assert found["diff"] == {"log.num_gpu_blocks_override": [16, 17]}


def test_a_tensor_parallel_oom_start_is_read_from_its_worker_line(tmp_path: Path) -> None:
    """With tensor parallelism the rank that ran out says it, with its worker prefix."""
    from wizard.probes.readers.vllm_log import read_text, walk_facts

    log = tmp_path / "vllm.log"
    refused_start(free_port(), log, *OOM, "-tp", "2", "--gpu-memory-gib", "16")
    [line] = [line for line in log.read_text().splitlines() if "OutOfMemoryError" in line]
    assert line.startswith("(Worker_TP0 pid=")
    with log.open() as handle:
        facts = walk_facts(read_text(handle))
    assert "oom" in facts["error_kinds"] and facts["startup_failed"] is True
    assert facts["device_memory_gib"] == 16.0
    assert facts["logged_args"]["max_num_seqs"] == 16384
