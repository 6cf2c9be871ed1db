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
    facts = audit(measurements=[measurement("direct", ttft=False)])
    assert facts["total_time_only"] and "direct" in facts["total_time_only_detail"]
    assert audit(comparisons=[{"fingerprint": None}])["cross_scenario_comparison"]
    offline = audit(facts={"loadgen": {"scenario": "Offline"}}, comparisons=[{"fingerprint": "x"}])
    assert offline["offline_as_latency"]
