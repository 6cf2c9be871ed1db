"""Every start-up refusal a configuration can cause, on the simulator: the walk names its own cause
(not LAT045's "the engine failed to start", not another refusal's) and proposes a value computed
from the refusal's numbers, and the simulator starts with that value (the start proves it).

The simulator refuses in vLLM's words (its checks: config/scheduler.py, config/model.py, the KV
cache's sizing); what the walk reads is the log the refused simulator wrote.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import start_sim
from tests.test_start_fixed import fix_and_walk, verdicts


def found_and_changed(events: list[dict[str, Any]], code: str) -> dict[str, Any]:
    """The one cause the walk found (``code``, alone among the start's findings) and its change."""
    causes = [e["data"]["code"] for e in events if e["type"] == "finding"]
    assert causes == [code], causes
    change = next(e["data"] for e in events if e["type"] == "change")
    assert "<" not in str(change["after"]), change  # a value, never a placeholder
    return change


@pytest.mark.parametrize(
    ("refused", "code", "parameter", "before", "after"),
    [
        # Both set by hand: vLLM's scheduler check; the budget rises to max_num_seqs.
        (("--max-num-batched-tokens", "64", "--max-num-seqs", "128"), "LAT036",
         "max_num_batched_tokens", "64", "128"),
        # Above the model's config.json (Llama-3.1-8B: 131,072): the model's own limit.
        (("--max-model-len", "200000"), "LAT037", "max_model_len", "200000", "131072"),
        # 32 attention heads on 3 GPUs: 2 is the largest size below 3 that divides them.
        (("-tp", "3"), "LAT033", "tensor_parallel_size", "3", "2"),
    ],
)  # fmt: skip
def test_an_argument_refusal_is_its_own_cause_and_its_change_starts(
    tmp_path: Path, refused: tuple[str, ...], code: str, parameter: str, before: str, after: str
) -> None:
    events = fix_and_walk(tmp_path, refused, refused, code)
    change = found_and_changed(events, code)
    assert (change["parameter"], change["before"], change["after"]) == (parameter, before, after)
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["round"], verdict["verdict"]) == (
        code,
        "start#2",
        "cause gone",
    )


@pytest.mark.parametrize(
    ("flags", "earlier_start", "code", "before", "after"),
    [
        # 0.2 of 80 GiB leaves nothing after 15 GiB of weights and the overhead (the log says
        # -1.30 GiB); the KV bytes per token come from the server's earlier start in the same
        # log: 0.23 holds one 8,192-token request.
        (("--gpu-memory-utilization", "0.2"), True, "LAT038", "0.2", "0.23"),
        # The refusal says 8 GiB is needed and 2.7 GiB was there: 5.31 GiB more of 80 is 0.32.
        (("--gpu-memory-utilization", "0.25", "--max-model-len", "65536"), False, "LAT040",
         "0.25", "0.32"),
    ],
)  # fmt: skip
def test_a_kv_cache_short_on_a_gpu_gets_the_memory_it_lacks(
    tmp_path: Path, flags: tuple[str, ...], earlier_start: bool, code: str, before: str, after: str
) -> None:
    """The utilization raised by what the log says is missing, on the device's memory from the
    GPU host's evidence (nvidia-smi): the simulator starts with it."""
    if earlier_start:
        earlier = start_sim(tmp_path, "--log-file", str(tmp_path / "vllm.log"), "--port", "0")
        earlier.stop()
    events = fix_and_walk(tmp_path, flags, flags, code, host_evidence=tmp_path / "host")
    change = found_and_changed(events, code)
    assert (change["parameter"], change["before"], change["after"]) == (
        "gpu_memory_utilization", before, after,
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["verdict"]) == (code, "cause gone")


REAL_LOGS = Path(__file__).parent / "fixtures" / "vllm-log"


@pytest.mark.parametrize(
    ("log", "code", "parameter", "before", "after"),
    [
        # Recorded from the real vLLM 0.32 CPU build (the tiny model of the real tier: 4 attention
        # heads, max_position_embeddings 4096), each refused by pydantic in the API server.
        ("real-0.32-seqs-above-budget", "LAT036", "max_num_batched_tokens", 64, 128),
        ("real-0.32-model-len-above-model", "LAT037", "max_model_len", 8192, 4096),
        ("real-0.32-tp3", "LAT033", "tensor_parallel_size", 3, 2),
    ],
)  # fmt: skip
def test_real_032_refusals_are_read_as_their_own_cause_with_a_value_vllm_accepts(
    log: str, code: str, parameter: str, before: int, after: int
) -> None:
    from wizard import playbook
    from wizard.levers.changes import propose
    from wizard.levers.refusals import refusals, server_config
    from wizard.playbook import conditions
    from wizard.probes.readers.vllm_log import read_text, walk_facts

    with (REAL_LOGS / f"{log}.log").open() as handle:
        facts = {"vllmlog": walk_facts(read_text(handle)), "endpoints": {"health_status": None}}
    book = playbook.load()
    raised = {
        rule.finding
        for rule in book.nodes["startup.failed"].rules
        if conditions.evaluate(rule.when, facts, {})
    }
    assert raised == {code}, raised
    change = propose(book.findings[code].change, facts, {})
    assert change is not None and "not_applicable" not in change, change
    assert (change["parameter"], change["before"], change["after"]) == (parameter, before, after)
    assert refusals({**server_config(facts), parameter: after}) == []
