"""Release-dependent facts: a proposed change must be valid for the release the server runs."""

from __future__ import annotations

from typing import Any

import pytest

from wizard.levers import vllm_versions
from wizard.levers.changes import propose


def test_releases_are_read_from_the_server_first_then_its_log() -> None:
    assert vllm_versions.parse("0.34.0") == (0, 34, 0)
    assert vllm_versions.parse("v0.9.2rc1") == (0, 9, 2)
    assert vllm_versions.parse("0.11") == (0, 11, 0)
    assert vllm_versions.parse("dev") is None and vllm_versions.parse(None) is None
    facts = {"endpoints": {"version": "0.34.0"}, "vllmlog": {"version": "0.32.0"}}
    assert vllm_versions.server_release(facts) == ((0, 34, 0), "endpoints.version")
    assert vllm_versions.server_release({"endpoints": {"version": None}, "vllmlog": {"version": "0.32.0"}}) == (
        (0, 32, 0), "vllmlog.version")  # fmt: skip
    assert vllm_versions.server_release({}) is None


def test_a_flag_the_servers_release_does_not_have_is_never_proposed() -> None:
    """--swap-space left EngineArgs in 0.18.0: valid for a 0.17 server, not for 0.34."""
    assert vllm_versions.missing_flags("--swap-space 8", (0, 17, 1)) == []
    assert vllm_versions.missing_flags("--swap-space 8", (0, 34, 0))
    assert vllm_versions.missing_flags("--gpu-memory-utilization 0.9", (0, 34, 0)) == []


def test_every_computed_vllm_change_is_checked_against_the_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from wizard.levers import changes

    def swap(
        facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
    ) -> dict[str, Any]:
        return {"layer": "vllm", "parameter": "swap_space", "before": 4, "after": 8,
                "apply": "--swap-space 8", "basis": "test"}  # fmt: skip

    monkeypatch.setitem(changes.COMPUTERS, "swap_test", swap)
    template = {"layer": "vllm", "parameter": "swap_space", "compute": "swap_test"}
    new = propose(template, {"endpoints": {"version": "0.34.0"}}, {})
    assert (
        new is not None
        and "0.34.0" in new["not_applicable"]
        and "--swap-space" in new["not_applicable"]
    )
    old = propose(template, {"endpoints": {"version": "0.17.1"}}, {})
    assert old is not None and "not_applicable" not in old
    unknown = propose(template, {}, {})  # no release known: nothing claimed either way
    assert unknown is not None and "not_applicable" not in unknown


def test_graphs_memory_depends_on_the_release() -> None:
    assert "sizes the KV cache with the graphs" in vllm_versions.graph_memory_note((0, 34, 0))
    assert "after sizing the KV cache" in vllm_versions.graph_memory_note((0, 9, 2))
    eager = {"vllmlog": {"enforce_eager": True}}
    new = propose({"layer": "vllm", "parameter": "enforce_eager", "compute": "graphs_on"},
                  {**eager, "endpoints": {"version": "0.34.0"}}, {})  # fmt: skip
    old = propose({"layer": "vllm", "parameter": "enforce_eager", "compute": "graphs_on"},
                  {**eager, "endpoints": {"version": "0.9.2"}}, {})  # fmt: skip
    assert new and old and new["after"] is False and new["basis"] != old["basis"]


def test_an_unset_utilization_resolves_by_the_kv_cache_kind() -> None:
    """vLLM 0.34 reports an unset --gpu-memory-utilization as None: 0.92, or 1.0 with the
    extensible KV cache (its default on CUDA), where raising it is no lever at all."""
    template = {"layer": "vllm", "parameter": "gpu_memory_utilization", "direction": "raise",
                "compute": "kv_room"}  # fmt: skip
    server = {"preemptions": 5, "num_gpu_blocks": 900, "block_size": 64}
    # 24 streams of 2,048 + 512 tokens hold 24 x (ceil(2561 / 64) + 1) + 1 = 1,009 blocks of 64:
    # 64,576 tokens against 900 x 64 = 57,600, 6,976 x 1/8192 GiB = 0.85 GiB of 80: 0.9306 -> 0.94.
    demand = {"spec": {"concurrency": 24, "input_tokens": 2048, "output_tokens": 512}}
    log = {"kv_gib_per_token": 1 / 8192, "device_memory_gib": 80}
    plain = propose(template, {"loaded": {**demand, "server": server}, "vllmlog": log}, {})
    assert plain and (plain["parameter"], plain["before"], plain["after"]) == (
        "gpu_memory_utilization", 0.92, 0.94)  # fmt: skip
    extensible = propose(
        template,
        {"loaded": {**demand, "server": {**server, "enable_extensible_kv_cache": True}},
         "vllmlog": {"max_num_seqs": 256}},
        {},
    )  # fmt: skip
    assert extensible and (extensible["parameter"], extensible["direction"]) == (
        "max_num_seqs",
        "lower",
    )
    # As many as the cache holds at the round's length: 57,600 // 2,560 = 22.
    assert extensible["after"] == 22 and "extensible" in extensible["basis"]


def test_speculation_is_spelled_for_the_release() -> None:
    """--speculative-config came in 0.8.0 (vLLM PR #14434); the separate flags left by 0.9."""
    old, new = (0, 7, 3), (0, 34, 0)
    assert vllm_versions.speculation_apply(old, 2) == (
        "--num-speculative-tokens 2 (--speculative-model as now)"
    )
    assert "--speculative-config" in vllm_versions.speculation_apply(new, 2)
    assert "--speculative-config" in vllm_versions.speculation_apply(None, 0)
    assert vllm_versions.missing_flags(vllm_versions.speculation_apply(new, 2), old)
    assert vllm_versions.missing_flags(vllm_versions.speculation_apply(old, 2), new)
    assert not vllm_versions.missing_flags(vllm_versions.speculation_apply(old, 0), old)
