"""The closing audit (P7): what in this session's own history weakens its conclusions.

Run as the walk probe ``audit``; it reads the session's measurements, changes and comparisons.
"""

from __future__ import annotations

from typing import Any

from wizard.words import texts


def _detail(facts: dict[str, Any], name: str, key: str, shown: bool, **values: Any) -> None:
    """A rule's one-line detail (English, as the evidence quotes it) and the same in every
    language (``{name}_texts``, which the playbook's zh evidence quotes); empty when not shown."""
    said = texts(key, **values) if shown else {lang: "" for lang in texts(key, **values)}
    facts[name], facts[f"{name}_texts"] = said["en"], said


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

    loadgen = session.facts.get("loadgen") or {}
    facts["offline_as_latency"] = loadgen.get("scenario") == "Offline" and bool(session.comparisons)
    return facts
