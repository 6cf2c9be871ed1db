"""``triage`` against a real vLLM (the CPU build, a tiny model; docs/real-vllm.md) under the
test's own traffic: ``--max-num-seqs 1`` under eight streams is queue saturation, bound by its
one slot; 17 KV blocks under eight streams preempt; the healthy server is none. Each time the
server's own request counter grows by exactly the test's requests: triage sent none."""

from __future__ import annotations

import pytest

from tests.realvllm import RealVllm
from tests.traffic import triage_under


@pytest.mark.real_vllm("seqs1")
def test_one_slot_under_eight_streams_is_slot_bound_queueing(real_vllm: RealVllm) -> None:
    code, report = triage_under(real_vllm.url, 8, 20, 16, "--vllm-log", str(real_vllm.log_file))
    assert code == 3 and report["class"] == "queue_saturation"
    numbers = report["signal"]["numbers"]
    assert numbers["max_num_seqs"] == 1 and numbers["bound"] == "slots"
    assert "kv_cache_preemption" in report["ruled_out"]


@pytest.mark.real_vllm("override17")
def test_seventeen_blocks_under_eight_streams_is_kv_pressure(real_vllm: RealVllm) -> None:
    # 8 prompts of ~200 tokens fit in 17 blocks of 128 (2 each); at 256 tokens each needs a third
    # block, so the running requests preempt one another as long as the load lasts. The CPU
    # build decodes slowly: a window of 8 s holds several preemptions, 3 s may hold none.
    code, report = triage_under(real_vllm.url, 8, 200, 200, "--vllm-log", str(real_vllm.log_file),
                                "--scrapes", "5", "--interval", "2")  # fmt: skip
    assert code == 3 and report["class"] == "kv_cache_preemption"
    assert report["signal"]["numbers"]["preemptions"] > 0


@pytest.mark.real_vllm("healthy")
def test_the_healthy_real_server_gets_no_class(real_vllm: RealVllm) -> None:
    code, report = triage_under(real_vllm.url, 2, 20, 16)
    assert code == 0 and report["class"] == "none"
    assert report["signal"]["check"] == "healthy"
