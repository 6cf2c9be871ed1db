"""The closing audit (P7): what in this session's own history weakens its conclusions.

Run as the walk probe ``audit``; it reads the session's measurements, changes and comparisons.
"""

from __future__ import annotations

from typing import Any


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

    loadgen = session.facts.get("loadgen") or {}
    facts["offline_as_latency"] = loadgen.get("scenario") == "Offline" and bool(session.comparisons)
    return facts
