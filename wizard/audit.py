"""The closing audit (P7): what in this session's own history weakens its conclusions.

Run as the walk probe ``audit``; it reads the session's measurements, changes and comparisons.
"""

from __future__ import annotations

from typing import Any


def budget_unjudged(facts: dict[str, Any]) -> str:
    """Why LAT011 (a token budget too large) could not be judged, or "" when it could.

    Without the log the budget is estimated from the long round, and never above its prompt;
    it is claimed only beyond twice the GPU class's default. On a class whose default is large
    (8192 on H100/H200) a prompt the round can send may be too short to show it: the log is
    needed there, and the audit says so rather than let "no cause" stand for "not judged".
    """
    default = (facts.get("host") or {}).get("batch_budget_default")
    prompt = ((facts.get("long") or {}).get("spec") or {}).get("input_tokens")
    if (facts.get("vllmlog") or {}).get("max_num_batched_tokens") is not None:
        return ""
    if not isinstance(default, int) or not isinstance(prompt, int) or prompt > 2 * default:
        return ""
    return (
        f"a token budget too large (LAT011) cannot be judged without the vLLM log here: the long "
        f"round's {prompt}-token prompt shows a budget of at most {prompt}, and one is claimed "
        f"only above twice this GPU class's default ({2 * default}); pass --vllm-log"
    )


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
    facts["cold_steady_mixed_detail"] = (
        f"measured right after a restart with no warm-up: {', '.join(mixed)}" if mixed else ""
    )

    unmeasured = [c for c in changes if not c.get("measured")]
    facts["multiple_changes_in_step"] = len(unmeasured) > 1
    facts["multiple_changes_detail"] = (
        "changed without a measurement in between: "
        + ", ".join(f"{c['parameter']} ({c['code']})" for c in unmeasured)
        if len(unmeasured) > 1
        else ""
    )

    missing = [
        m["round"]
        for m in measurements
        if not m["values"].get("ttft_ms") or not m["values"].get("tpot_ms")
    ]
    facts["total_time_only"] = bool(missing)
    facts["total_time_only_detail"] = f"no TTFT/TPOT in: {', '.join(missing)}" if missing else ""

    crossed = [c for c in session.comparisons if c.get("fingerprint") is None]
    facts["cross_scenario_comparison"] = bool(crossed)
    facts["cross_scenario_detail"] = (
        f"{len(crossed)} comparison(s) across fingerprints" if crossed else ""
    )

    facts["budget_unjudged_detail"] = budget_unjudged(session.facts)
    facts["budget_unjudged"] = bool(facts["budget_unjudged_detail"])

    loadgen = session.facts.get("loadgen") or {}
    facts["offline_as_latency"] = loadgen.get("scenario") == "Offline" and bool(session.comparisons)
    return facts
