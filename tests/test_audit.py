"""The closing audit over a session's own history (P7)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from wizard.walk.audit import probe


def audit(**session: Any) -> dict[str, Any]:
    base = {"measurements": [], "changes": [], "comparisons": [], "facts": {}}
    ctx = SimpleNamespace(session=SimpleNamespace(**{**base, **session}))
    return asyncio.run(probe(ctx, {}))


def measurement(
    round_label: str, *, restarted: bool = False, cold: Any = None, ttft: bool = True
) -> dict[str, Any]:
    values = {"ttft_ms": [1.0] if ttft else [], "tpot_ms": [1.0] if ttft else [], "e2e_ms": [2.0]}
    return {"round": round_label, "restarted_before": restarted, "cold": cold, "values": values}


def test_a_clean_session_flags_nothing() -> None:
    facts = audit(measurements=[measurement("direct", cold={"ttft_p50": 1})],
                  changes=[{"parameter": "p", "code": "LAT001", "measured": True}])  # fmt: skip
    assert not any(facts[k] for k in ("cold_steady_mixed", "multiple_changes_in_step", "total_time_only",
                                      "cross_scenario_comparison", "offline_as_latency"))  # fmt: skip


def test_an_audit_finding_speaks_chinese() -> None:
    """LAT091's evidence in zh is the audit's own detail in zh, no English sentence in it."""
    from tests.text_checks import english_sentences
    from wizard import playbook
    from wizard.walk.evidence import evidence_fields

    facts = audit(changes=[{"parameter": "a", "code": "LAT010", "measured": False},
                           {"parameter": "b", "code": "LAT013", "measured": False}])  # fmt: skip
    finding = playbook.load().findings["LAT091"]
    said = evidence_fields("evidence", finding.evidence, {"audit": facts}, {})["evidence_texts"]
    assert said["zh"].startswith("两次变更之间没有测量") and english_sentences(said["zh"]) == []


def test_each_audit_flag() -> None:
    assert audit(measurements=[measurement("loaded#2", restarted=True)])["cold_steady_mixed"]
    two = [
        {"parameter": "a", "code": "LAT010", "measured": False},
        {"parameter": "b", "code": "LAT013", "measured": False},
    ]
    facts = audit(changes=two)
    assert (
        facts["multiple_changes_in_step"]
        and "a (LAT010), b (LAT013)" in facts["multiple_changes_detail"]
    )
    # The detail in Chinese too: LAT091's zh evidence quotes it (issue #13: zh throughout).
    assert (
        facts["multiple_changes_detail_texts"]["zh"]
        == "两次变更之间没有测量：a (LAT010), b (LAT013)"
    )
    facts = audit(measurements=[measurement("direct", ttft=False)])
    assert facts["total_time_only"] and "direct" in facts["total_time_only_detail"]
    assert audit(comparisons=[{"fingerprint": None}])["cross_scenario_comparison"]
    offline = audit(facts={"loadgen": {"scenario": "Offline"}}, comparisons=[{"fingerprint": "x"}])
    assert offline["offline_as_latency"]


def test_a_budget_the_long_round_cannot_show_is_said_to_need_the_log() -> None:
    """On an H100-class host (default budget 8192) the long round's 12,000-token prompt can show
    a budget of at most 12,000, below the 16,384 LAT011 needs: "no cause" there means "not
    judged", and the audit says the log is needed. With the log, or on an A100-class host
    (default 2048), the rule could judge, and nothing is said."""
    long_round = {"spec": {"input_tokens": 12000}}
    h100 = audit(facts={"host": {"batch_budget_default": 8192}, "long": long_round})
    assert h100["budget_unjudged"] is True
    assert (
        "--vllm-log" in h100["budget_unjudged_detail"] and "16384" in h100["budget_unjudged_detail"]
    )
    with_log = {"host": {"batch_budget_default": 8192}, "long": long_round,
                "vllmlog": {"max_num_batched_tokens": 8192}}  # fmt: skip
    assert audit(facts=with_log)["budget_unjudged"] is False
    a100 = audit(facts={"host": {"batch_budget_default": 2048}, "long": long_round})
    assert a100["budget_unjudged"] is False and a100["budget_unjudged_detail"] == ""
    # No long round (its stage was not walked): nothing to say about it.
    assert audit(facts={"host": {"batch_budget_default": 8192}})["budget_unjudged"] is False
