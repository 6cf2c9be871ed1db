"""Walk probe ``engine-state``: whether the engine died while serving, wherever the walk is.

Two signatures, each vLLM's own. The log, read again now: an engine-dead line (``EngineCore
encountered a fatal error``, ``EngineDeadError``, ``engine core exited unexpectedly``) in the run
that had started. Without a log, the rounds: a server that answered /health 200 at the start,
whose rounds then failed in every request, and whose /health no longer answers 200 (vLLM answers
503 once its engine is dead, and its API server then exits: facts/vllm.md §4.1). A round whose
every request fails on a healthy server (a wrong model name, a key) is not a death.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from wizard.i18n.words import texts
from wizard.probes.http.lean_http import tls_context
from wizard.probes.http.measure_probe import ALL_FAILED

# vLLM answers /health at once (a dead engine: 503 at once); 5 s leaves a busy server room.
HEALTH_TIMEOUT_S = 5.0


def _rounds_failed(session: Any) -> list[str]:
    """The walk's rounds whose every request failed, in the order they ran."""
    failed = []
    for name, facts in session.facts.items():
        if not isinstance(facts, dict):
            continue
        error = facts.get("error")
        every_request = isinstance(error, str) and error.startswith(ALL_FAILED)
        every_query = facts.get("result") in ("INVALID", "ERROR") and bool(facts.get("failed"))
        if every_request or (every_query and facts.get("failed") == facts.get("queries")):
            failed.append(name)
    return failed


async def _health(target: str) -> int | None:
    try:
        async with httpx.AsyncClient(verify=tls_context(), timeout=HEALTH_TIMEOUT_S) as client:
            return (await client.get(target.rstrip("/") + "/health")).status_code
    except httpx.HTTPError:
        return None


async def _log_facts(path: str) -> dict[str, Any] | None:
    from wizard.probes.readers import vllm_logs

    try:
        report = await asyncio.to_thread(vllm_logs.read_path, path)
    except (OSError, ValueError):
        return None
    return vllm_logs.log_facts(report, path)


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """``died`` and why (in every language), from the log read again and the walk's rounds."""
    session = ctx.session
    facts: dict[str, Any] = session.facts if session is not None else {}
    path = getattr(ctx, "vllm_log", None) or params.get("path")
    log = await _log_facts(str(path)) if path else None
    health = await _health(ctx.target)
    kinds = log["error_kinds"] if log else []
    dead_line = (log or {}).get("error_lines", {}).get("engine_dead")
    # A dead engine in a run that had not started is a failed start (LAT045's, LAT040's ...).
    in_log = dead_line is not None and not (log or {}).get("startup_failed")
    was_healthy = (facts.get("endpoints") or {}).get("health_status") == 200
    failed = _rounds_failed(session) if session is not None else []
    by_requests = was_healthy and bool(failed) and health != 200
    shown = "-" if health is None else str(health)
    if in_log:
        why = texts("serving.dead_in_log", line=dead_line, health=shown)
    elif by_requests:
        why = texts("serving.dead_by_requests", rounds=", ".join(failed), health=shown)
    else:
        why = None
    return {
        "died": in_log or by_requests,
        "died_from": "log" if in_log else "requests" if by_requests else None,
        "why": why["en"] if why else None,
        "why_texts": why,
        "engine_dead_line": dead_line,
        "error_kinds": kinds,
        "health_status": health,
        "rounds_failed": failed,
    }
