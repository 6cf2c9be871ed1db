"""A change's "before" is the server's own value, never the walk's parameters (issue #26)."""

from __future__ import annotations

from typing import Any

from wizard import playbook
from wizard.levers.changes import propose
from wizard.levers.vllm_defaults import configured_max_num_seqs

BOOK = playbook.load()


def lat013(facts: dict[str, Any]) -> dict[str, Any]:
    change = propose(BOOK.findings["LAT013"].change, facts, {})
    assert change is not None
    return change


def test_the_rounds_stream_count_is_never_the_servers_max_num_seqs() -> None:
    """A real vLLM: 8 streams ran at once and its log did not set max_num_seqs. The running
    count is not the limit ("--max-num-seqs 16 from 8" was the walk's own 8): unknown, said so."""
    facts = {"loaded": {"spec": {"concurrency": 8, "input_tokens": 64, "output_tokens": 64},
                        "server": {"running_max": 8, "waiting_max": 3}}}  # fmt: skip
    change = lat013(facts)
    assert change["before"] is None and change["after"] is None
    assert "<" in change["apply"] and "max_num_seqs" in change["basis"]


def test_no_constant_step_above_a_limit_the_round_never_filled() -> None:
    """256 -> 512 with 8 requests running was twice the limit, not the demand."""
    facts = {"vllmlog": {"max_num_seqs": 256},
             "loaded": {"spec": {"concurrency": 8, "input_tokens": 64, "output_tokens": 64},
                        "server": {"running_max": 8, "waiting_max": 0}}}  # fmt: skip
    change = lat013(facts)
    assert change["after"] is None and "256" in change["apply"]


def test_the_servers_default_is_its_release_and_device_s() -> None:
    """Unset, max_num_seqs is vLLM's default for the device the log names, lowered to a smaller
    budget as vLLM lowers it; unknown without the device or the release."""
    cpu = {"kv_cache_device": "CPU", "tensor_parallel_size": None, "pipeline_parallel_size": None,
           "max_num_batched_tokens": 64, "version": "0.32.0"}  # fmt: skip
    assert configured_max_num_seqs(cpu)[0] == 64
    assert configured_max_num_seqs({**cpu, "max_num_batched_tokens": None})[0] == 128
    h100 = {"device_memory_gib": 79.19, "version": "0.34.0"}
    assert configured_max_num_seqs(h100) == (1024, "vLLM's default for a 79.19 GiB GPU")
    assert configured_max_num_seqs({"device_memory_gib": 79.19, "version": None}) == (None, None)
    assert configured_max_num_seqs({"max_num_seqs": 4}) == (4, "the log")
