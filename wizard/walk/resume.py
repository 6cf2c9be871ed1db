"""A walk continued from its transcript: the state rebuilt from the events, and the server checked
to be the one the transcript measured.
"""

from __future__ import annotations

from typing import Any

from wizard.playbook import END
from wizard.probes.runner import run_probe
from wizard.walk.rounds import calibrated
from wizard.walk.session import Session, visited_key


def restore(session: Session, events: list[dict[str, Any]]) -> str:
    """Rebuild the session's state from recorded events; return the node to continue at."""
    session.facts.setdefault("visited", {})
    next_node = session.playbook.start
    for event in events:
        kind, data, node = event["type"], event["data"], event["node"]
        if kind == "node_enter":
            session.enter_stage(data.get("stage"))
            key = visited_key(node)
            session.facts["visited"][key] = session.facts["visited"].get(key, 0) + 1
            next_node = node
        elif kind == "answer":
            session.answers[data["id"]] = data["value"]
        elif kind == "probe_result":
            session.stage_errors += bool(data["error"])
            session.facts[data["as"]] = (
                data["facts"] if not data["error"] else {"error": data["error"]}
            )
            if not data["error"]:
                session.ran_after[data["as"]] = len(session.changes)
        elif kind == "finding":
            session.findings.append(data)
        elif kind == "measurement":
            session.measurements.append(data)
        elif kind == "change":
            session.changes.append(data)
            if data.get("layer") == "measurement" and data.get("after") is not None:
                session.ctx.client_concurrency = int(data["after"])
        elif kind == "comparison":
            session.comparisons.append(data)
        elif kind == "noise":
            calibrated(session, data)
        elif kind == "verdict":
            session.verdicts.append(data)
        elif kind == "inconclusive":
            session.inconclusive[data["code"]] = data
        elif kind == "node_exit":
            next_node = data["next"]
        elif kind == "end":
            next_node = END
    # What the first node learned about the server limits later rounds (a long prompt must fit).
    endpoints = session.facts.get("endpoints") or {}
    session.ctx.max_model_len = session.ctx.max_model_len or endpoints.get("max_model_len")
    return next_node


IDENTITY = ("model", "version", "max_model_len")


async def check_resumed_server(session: Session, at: str) -> None:
    """Before a resumed walk goes on: record the resume, and refuse a different server."""
    from wizard.errors import WizardError

    recorded = {k: (session.facts.get("endpoints") or {}).get(k) for k in IDENTITY}
    result = await run_probe("endpoints", session.ctx, {})
    now = {k: (result.facts or {}).get(k) for k in IDENTITY} if result.error is None else {}
    differs = {k: [recorded[k], now.get(k)] for k in IDENTITY
               if recorded[k] is not None and now.get(k) is not None and recorded[k] != now[k]}  # fmt: skip
    session.record("resume", None, {"at": at, "server": now, "recorded": recorded,
                                    "differs": differs, "error": result.error})  # fmt: skip
    if differs:
        what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in differs.items())
        raise WizardError(
            f"a different server answers at {session.ctx.target} now ({what}); its numbers cannot "
            "continue this walk: start a new one with 'latency-wizard run'"
        )
