"""The closing audit over a session's own history (P7)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

from wizard.audit import probe


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
    from wizard.engine import evidence_fields

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
