"""The incident summary (this module: its model), what it leads with, and its formats (doc, md, html,
text). May load anything but cli.

The incident summary's model, built from a transcript (also the JSON export).

JSON follows design §5 (``schema_version``, ``session``, ``baseline``, ``steps``, ``changes``,
``findings``, ``audit``), plus what the summary leads with (``answer``, ``final``, ``rounds``,
``not_applied``, ``notes``, ``audit_flags``; docs/summary.md). The formats draw from it:
``report_md`` (a ticket), ``report_html`` (one self-contained page), ``report_text`` (a paste
for an incident channel).
"""

from __future__ import annotations

from typing import Any

from wizard.record import event_shapes
from wizard.record.transcript import Transcript
from wizard.report import summary, walk_waterfall
from wizard.ui.render_events import pick

REPORT_SCHEMA_VERSION = 1


def build(transcript: Transcript, lang: str = "en") -> dict[str, Any]:
    """The report model (also the JSON export)."""
    from wizard.walk.comparisons import CHANGE_COMPARISONS, MEASUREMENT_CAUSES

    header = transcript.header
    # An event that does not fit its shape (another version's, or edited) is left out, and said.
    events, unreadable = [], []
    for event in transcript.events:
        why = event_shapes.problem(event)
        if why is None:
            events.append(event)
        else:
            unreadable.append(event_shapes.unreadable_note(event, why, lang))
    facts: dict[str, Any] = {}
    steps, findings, changes, comparisons, measurements = [], [], [], [], []
    validation: list[dict[str, Any]] = []
    for event in events:
        kind, data = event["type"], event["data"]
        if kind == "node_enter":
            steps.append({"t": event["t"], "node": event["node"], "stage": data["stage"],
                          "title": pick(data["title"], lang), "covers": data["covers"]})  # fmt: skip
        elif kind == "probe_result" and not data["error"]:
            facts[data["as"]] = data["facts"]
        elif kind == "finding":
            findings.append({"code": data["code"], "cause": data["cause"], "severity": data["severity"],
                             "title": pick(data["title"], lang),
                             "evidence": pick(data.get("evidence_texts") or data["evidence"], lang),
                             "advice": pick(data["advice"], lang), "change": data["change"],
                             "docs": data["docs"], "node": event["node"]})  # fmt: skip
        elif kind == "change":
            changes.append({**data, "t": event["t"], "node": event["node"], "effect": []})
        elif kind == "comparison":
            comparisons.append(data)
            # Credited to the change its round measures (on that change's path); LoadGen's
            # side by side, on the direct path, validates them all and is listed apart.
            if changes and data["against"] in CHANGE_COMPARISONS:
                changes[-1]["effect"].append(data)
            else:
                spec = (facts.get(data["after"]) or {}).get("measured_spec") or {}
                validation.append({**data, "path": _path_of(spec.get("access_path"), header)})
        elif kind == "verdict" and changes:
            said = pick(data.get("evidence_texts") or data["evidence"], lang)
            changes[-1]["verdict"] = {**data, "evidence": said}
        elif kind == "measurement":
            measurements.append(data)
    # The incident's baseline is its first rounds; a later baseline (after a fix) is the final state.
    first, final = summary.first_and_final(measurements, changes)
    baseline = {label: state for label, state in first.items() if label in summary.BASELINE_PATHS}
    audit = facts.get("audit", {})
    causes = sorted({f["cause"] for f in findings} - MEASUREMENT_CAUSES)
    end = events[-1]["data"] if events and events[-1]["type"] == "end" else {}
    report: dict[str, Any] = {
        "schema_version": REPORT_SCHEMA_VERSION,
        "session": {
            "target": header.get("target"),
            "proxy": header.get("proxy"),
            # A server that never started named its model only in its log.
            "model": (facts.get("endpoints") or {}).get("model")
            or (facts.get("vllmlog") or {}).get("model"),
            "version": (facts.get("endpoints") or {}).get("version"),
            "playbook": header.get("playbook_id"),
            "started_at": header.get("started_at"),
            "ended_at": events[-1]["t"] if events else None,
            "complete": transcript.complete,
            # A transcript cut mid-write, exported with --salvage: what was not kept.
            "salvaged": transcript.lost.describe() if transcript.lost else None,
            "salvaged_texts": transcript.lost.said() if transcript.lost else None,
            "transcript": str(transcript.path),
            # What every round sent: the incident's shape, or the wizard's own.
            "workload": summary.workload(header, measurements),
        },
        "tldr": {"causes": causes, "changes": []},
        # What `run`'s exit code said (no_cause | cause_remains | nothing_measured).
        "outcome": end.get("outcome"),
        "causes_remaining": end.get("causes_remaining"),
        # Rules no round could judge: the measuring client stayed contended (contention.py).
        "inconclusive": summary.unjudged(events),
        "baseline": baseline,
        "evidence": _evidence(facts),
        "steps": steps,
        "changes": changes,
        "comparisons": comparisons,
        "validation": validation,
        "findings": findings,
        "loadgen": facts.get("loadgen"),
        "audit": {k: v for k, v in audit.items() if not k.endswith(("_detail", "_detail_texts"))},
        "audit_details": [
            pick(audit.get(f"{k}_texts") or v, lang)
            for k, v in audit.items()
            if k.endswith("_detail") and v
        ],
        "replay": f"latency-wizard replay {transcript.path}",
        "lang": lang,
        "first": first,
        "final": final,
        "rounds": summary.rounds(events),
        # The first token hop by hop on each baseline path (walk_waterfall.py).
        "waterfall": walk_waterfall.build(events),
        "not_applied": summary.not_applied(events, lang),
        "notes": [
            pick(e["data"].get("texts") or e["data"]["text"], lang)
            for e in events
            if e["type"] == "note"
        ]
        + unreadable,
        "unreadable_events": unreadable,
    }
    report["tldr"]["changes"] = [summary.change_line(c, report["rounds"], lang) for c in changes]
    report["audit_flags"] = summary.flags(report, events, lang)
    report["answer"] = summary.answer(report, MEASUREMENT_CAUSES, lang)
    return report


def _path_of(url: str | None, header: dict[str, Any]) -> str | None:
    """Which of the session's paths a round went to: direct (the target), proxy, or its URL."""
    paths = {header.get("target"): "direct", header.get("proxy"): "proxy"}
    return paths.get(url, url) if url else None


LOG_EVIDENCE = ("file", "model", "engine", "tensor_parallel_size", "pipeline_parallel_size",
                "max_model_len", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
                "chunked_prefill", "kv_cache_tokens", "startup_s", "error_kinds")  # fmt: skip
HOST_EVIDENCE = ("source", "physical_cores", "gpus", "gpu_names", "gpu_memory_gib", "interconnect",
                 "cuda_visible_devices")  # fmt: skip


def _evidence(facts: dict[str, Any]) -> dict[str, Any]:
    """What the server's log and its host said, for the reader of the summary."""
    log, host = facts.get("vllmlog") or {}, facts.get("host") or {}
    return {
        "vllm_log": {k: log.get(k) for k in LOG_EVIDENCE} if log.get("available") else None,
        "host": {k: host.get(k) for k in HOST_EVIDENCE} if host else None,
        # The files collected on the GPU host that said it (empty for this machine).
        "host_files": sorted(set((host.get("sources") or {}).values()))
        if host.get("source") == "evidence"
        else [],
    }
