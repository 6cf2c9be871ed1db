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


def test_no_memory_for_the_kv_cache_raises_the_share_by_what_one_request_needs(
    tmp_path: Path,
) -> None:
    """0.2 of 80 GiB leaves nothing after 15 GiB of weights and the overhead (the log says -1.30
    GiB); the KV bytes per token come from the server's earlier start in the same log, the
    device's memory from the GPU host's evidence: 0.23 holds one 8,192-token request."""
    log = tmp_path / "vllm.log"
    earlier = start_sim(tmp_path, "--log-file", str(log), "--port", "0")
    earlier.stop()
    low = ("--gpu-memory-utilization", "0.2")
    events = fix_and_walk(tmp_path, low, low, "LAT038", host_evidence=tmp_path / "host")
    change = found_and_changed(events, "LAT038")
    assert (change["parameter"], change["before"], change["after"]) == (
        "gpu_memory_utilization", "0.2", "0.23",
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["verdict"]) == ("LAT038", "cause gone")


def test_a_kv_cache_short_of_one_request_on_a_gpu_gets_the_memory_it_lacks(
    tmp_path: Path,
) -> None:
    """The refusal says 8 GiB is needed and 2.7 GiB was there; 5.31 GiB more of 80 is 0.32."""
    short = ("--gpu-memory-utilization", "0.25", "--max-model-len", "65536")
    events = fix_and_walk(tmp_path, short, short, "LAT040", host_evidence=tmp_path / "host")
    change = found_and_changed(events, "LAT040")
    assert (change["parameter"], change["before"], change["after"]) == (
        "gpu_memory_utilization", "0.25", "0.32",
    )  # fmt: skip
    [verdict] = verdicts(events)
    assert (verdict["code"], verdict["verdict"]) == ("LAT040", "cause gone")
