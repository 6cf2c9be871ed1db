"""The closing audit (P7): what in this session's own history weakens its conclusions.

Run as the walk probe ``audit``; it reads the session's measurements, changes and comparisons.
"""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import texts


def _detail(facts: dict[str, Any], name: str, key: str, shown: bool, **values: Any) -> None:
    """A rule's one-line detail (English, as the evidence quotes it) and the same in every
    language (``{name}_texts``, which the playbook's zh evidence quotes); empty when not shown."""
    said = texts(key, **values) if shown else {lang: "" for lang in texts(key, **values)}
    facts[name], facts[f"{name}_texts"] = said["en"], said


def budget_unjudged(facts: dict[str, Any]) -> dict[str, int] | None:
    """Why LAT011 (a token budget too large) could not be judged: the long round's prompt and
    the bar, or None when it could be.

    Without the log the budget is estimated from the long round, and never above its prompt;
    it is claimed only beyond twice the GPU class's default. On a class whose default is large
    (8192 on H100/H200) a prompt the round can send may be too short to show it: the log is
    needed there, and the audit says so rather than let "no cause" stand for "not judged".
    """
    default = (facts.get("host") or {}).get("batch_budget_default")
    prompt = ((facts.get("long") or {}).get("spec") or {}).get("input_tokens")
    if (facts.get("vllmlog") or {}).get("max_num_batched_tokens") is not None:
        return None
    if not isinstance(default, int) or not isinstance(prompt, int) or prompt > 2 * default:
        return None
    return {"prompt": prompt, "bar": 2 * default}


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Facts for the audit rules, each with a one-line detail."""
    session = ctx.session
    if session is None:
        return {"available": False}
    measurements: list[dict[str, Any]] = session.measurements
    changes: list[dict[str, Any]] = session.changes
    facts: dict[str, Any] = {
        "available": True,
        "measurements": len(measurements),
        "changes": len(changes),
    }

    mixed = [m["round"] for m in measurements if m.get("restarted_before") and not m.get("cold")]
    facts["cold_steady_mixed"] = bool(mixed)
    _detail(facts, "cold_steady_mixed_detail", "audit.cold_steady_mixed", bool(mixed),
            rounds=", ".join(mixed))  # fmt: skip

    unmeasured = [c for c in changes if not c.get("measured")]
    facts["multiple_changes_in_step"] = len(unmeasured) > 1
    _detail(facts, "multiple_changes_detail", "audit.multiple_changes", len(unmeasured) > 1,
            changes=", ".join(f"{c['parameter']} ({c['code']})" for c in unmeasured))  # fmt: skip

    missing = [
        m["round"]
        for m in measurements
        if not m["values"].get("ttft_ms") or not m["values"].get("tpot_ms")
    ]
    facts["total_time_only"] = bool(missing)
    _detail(facts, "total_time_only_detail", "audit.total_time_only", bool(missing),
            rounds=", ".join(missing))  # fmt: skip

    crossed = [c for c in session.comparisons if c.get("fingerprint") is None]
    facts["cross_scenario_comparison"] = bool(crossed)
    _detail(facts, "cross_scenario_detail", "audit.cross_scenario", bool(crossed), n=len(crossed))

    unjudged = budget_unjudged(session.facts)
    facts["budget_unjudged"] = unjudged is not None
    _detail(facts, "budget_unjudged_detail", "audit.budget_unjudged", unjudged is not None,
            **(unjudged or {"prompt": 0, "bar": 0}))  # fmt: skip

    loadgen = session.facts.get("loadgen") or {}
    facts["offline_as_latency"] = loadgen.get("scenario") == "Offline" and bool(session.comparisons)
    return facts
