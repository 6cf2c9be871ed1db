"""The incident summary: a report model built from a transcript, in Markdown, HTML and JSON.

JSON follows design §5 (``schema_version``, ``session``, ``baseline``, ``steps``, ``changes``,
``findings``, ``audit``). Markdown pastes into a ticket. HTML is one self-contained file whose
charts are SVG drawn by pygal, inlined, so it opens offline.
"""

from __future__ import annotations

import html
from typing import Any

from wizard.render_events import pick
from wizard.transcript import Transcript

REPORT_SCHEMA_VERSION = 1
SEGMENTS = (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E"))


def build(transcript: Transcript, lang: str = "en") -> dict[str, Any]:
    """The report model (also the JSON export)."""
    header, events = transcript.header, transcript.events
    facts: dict[str, Any] = {}
    steps, findings, changes, comparisons, measurements = [], [], [], [], []
    for event in events:
        kind, data = event["type"], event["data"]
        if kind == "node_enter":
            steps.append({"t": event["t"], "node": event["node"], "stage": data["stage"],
                          "title": pick(data["title"], lang), "covers": data["covers"]})  # fmt: skip
        elif kind == "probe_result" and not data["error"]:
            facts[data["as"]] = data["facts"]
        elif kind == "finding":
            findings.append({"code": data["code"], "cause": data["cause"], "severity": data["severity"],
                             "title": pick(data["title"], lang), "evidence": data["evidence"],
                             "advice": pick(data["advice"], lang), "change": data["change"],
                             "docs": data["docs"], "node": event["node"]})  # fmt: skip
        elif kind == "change":
            changes.append({**data, "t": event["t"], "node": event["node"], "effect": []})
        elif kind == "comparison":
            comparisons.append(data)
            if changes:
                changes[-1]["effect"].append(data)
        elif kind == "verdict" and changes:
            changes[-1]["verdict"] = data
        elif kind == "measurement":
            measurements.append(data)
    baseline = {
        label: {"steady": m["steady"], "cold": m["cold"], "url": m["spec"]["access_path"], "fingerprint": m["fingerprint"]}
        for m in measurements
        if (label := m["as"]) in ("direct", "proxy") and m["round"] == label
    }  # fmt: skip
    audit = facts.get("audit", {})
    from wizard.engine import MEASUREMENT_CAUSES

    causes = sorted({f["cause"] for f in findings} - MEASUREMENT_CAUSES)
    end = events[-1]["data"] if events and events[-1]["type"] == "end" else {}
    return {
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
            "transcript": str(transcript.path),
        },
        "tldr": {"causes": causes, "changes": [_change_line(c) for c in changes]},
        # What `run`'s exit code said (no_cause | cause_remains | nothing_measured).
        "outcome": end.get("outcome"),
        "causes_remaining": end.get("causes_remaining"),
        "baseline": baseline,
        "evidence": _evidence(facts),
        "steps": steps,
        "changes": changes,
        "comparisons": comparisons,
        "findings": findings,
        "loadgen": facts.get("loadgen"),
        "audit": {k: v for k, v in audit.items() if not k.endswith("_detail")},
        "audit_details": [v for k, v in audit.items() if k.endswith("_detail") and v],
        "replay": f"latency-wizard replay {transcript.path}",
    }


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
    }


def _evidence_lines(evidence: dict[str, Any]) -> list[str]:
    lines = []
    for label, values in (("vLLM log", evidence.get("vllm_log")), ("Host", evidence.get("host"))):
        if not values:
            continue
        known = [f"{k} {_plain(v)}" for k, v in values.items() if v not in (None, [], "")]
        lines.append(f"- {label}: " + ", ".join(known))
    return lines or ["None given (`--vllm-log FILE`, `--host-evidence DIR`)."]


def _plain(value: Any) -> str:
    if isinstance(value, list):
        return "/".join(sorted({str(v) for v in value}))
    return str(value)


def _change_line(change: dict[str, Any]) -> str:
    verdicts = "; ".join(
        f"{s['segment']} {'expected (predicted)' if s.get('expected') else s['verdict']}"
        for comparison in change["effect"] if comparison["against"] == "baseline"
        for s in comparison["segments"]
    )  # fmt: skip
    evidence = change.get("verdict")
    head = f"{evidence['code']} {evidence['verdict']}: " if evidence else ""
    return (
        f"{change['parameter']}: {change['before']} -> {change['after']} "
        f"({head}{verdicts or 'not re-measured'})"
    )


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def baseline_rows(report: dict[str, Any]) -> list[list[str]]:
    """Rows of path, state, then p50/p99 per segment."""
    rows = []
    for path, data in report["baseline"].items():
        for state in ("steady", "cold"):
            row = data.get(state)
            if row:
                rows.append(
                    [
                        path,
                        state,
                        *(f"{_ms(row[f'{k}_p50'])} / {_ms(row[f'{k}_p99'])}" for k, _ in SEGMENTS),
                    ]
                )
    return rows


def markdown(report: dict[str, Any]) -> str:
    """The summary as Markdown for a ticket."""
    session = report["session"]
    out = [
        f"# Latency incident summary: {session['model'] or 'unknown model'} at {session['target']}",
        "",
        f"- Window: {session['started_at']} to {session['ended_at']}"
        + ("" if session["complete"] else " (session incomplete)"),
        f"- Target: {session['target']}"
        + (f", via proxy {session['proxy']}" if session["proxy"] else ""),
        f"- Server version: {session['version'] or 'unknown'}; playbook: {session['playbook']}",
        "",
        "## TL;DR",
        "",
        f"- Causes found: {', '.join(f'`{c}`' for c in report['tldr']['causes']) or 'none'}",
    ]
    out += [f"- Change: {line}" for line in report["tldr"]["changes"]] or [
        "- No change was applied."
    ]
    out += ["", "## Evidence", "", *_evidence_lines(report.get("evidence") or {})]
    out += ["", "## Baseline (ms, p50 / p99)", ""]
    rows = baseline_rows(report)
    if rows:
        out += ["| path | state | TTFT | TPOT | ITL | E2E |", "|---|---|---|---|---|---|"]
        out += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        out.append("Nothing was measured (see the findings: the server may not have been running).")
    out += ["", "## Changes", ""]
    if report["changes"]:
        out += [
            "| parameter | before | after | against | segment | before p50 | after p50 | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for change in report["changes"]:
            evidence = change.get("verdict")
            if evidence:  # the cause's own evidence first, then the latency segments
                out.append(f"| {change['parameter']} | {change['before']} | {change['after']} | "
                           f"{evidence['round']} | {evidence['code']}: {evidence['evidence']} | | | "
                           f"**{evidence['verdict']}** |")  # fmt: skip
            for comparison in change["effect"]:
                for s in comparison["segments"]:
                    verdict = (
                        "expected (the finding predicted it)" if s.get("expected") else s["verdict"]
                    )
                    out.append(f"| {change['parameter']} | {change['before']} | {change['after']} | "
                               f"{comparison['against']} | {s['segment']} | {_ms(s['before_p50'])} | "
                               f"{_ms(s['after_p50'])} | {verdict} |")  # fmt: skip
    else:
        out.append("None.")
    out += ["", "## Findings", ""]
    for f in report["findings"]:
        out += [f"### {f['code']} ({f['severity']}, `{f['cause']}`): {f['title']}", "",
                f"- Evidence: {f['evidence']}", f"- Advice: {f['advice']}"]  # fmt: skip
        if f["change"]:
            out.append(f"- The one change: `{f['change']['apply']}`")
        out += [f"- Docs: {' '.join(f['docs'])}", ""]
    if not report["findings"]:
        out += ["None.", ""]
    out += ["## Timeline", ""] + [
        f"- {s['t']} {s['title']} ({s['stage']})" for s in report["steps"]
    ]
    out += ["", "## Audit", ""]
    out += [f"- {line}" for line in report["audit_details"]] or ["- Nothing to flag."]
    out += ["", "## Replay", "", f"    {report['replay']}", ""]
    return "\n".join(out)


def html_page(report: dict[str, Any]) -> str:
    """One self-contained HTML file: the same content, with inline SVG charts."""
    import markdown_it

    body = markdown_it.MarkdownIt("commonmark").enable("table").render(markdown(report))
    charts = "".join(_chart(change) for change in report["changes"]) + _baseline_chart(report)
    title = html.escape(f"Latency incident summary: {report['session']['target']}")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font-family:sans-serif;max-width:60em;margin:2em auto}}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}"
        "figure{margin:1em 0}</style></head><body>"
        f"{body}{'<h2>Charts</h2>' + charts if charts else ''}</body></html>"
    )


def _svg(chart: Any) -> str:
    svg: bytes = chart.render(is_unicode=False)
    return "<figure>" + svg.decode("utf-8") + "</figure>"


def _baseline_chart(report: dict[str, Any]) -> str:
    import pygal

    if not report["baseline"]:
        return ""
    chart = pygal.Bar(
        title="Baseline p50 (ms)", height=300, width=700, js=[]
    )  # js=[]: nothing to fetch
    chart.x_labels = [label for _, label in SEGMENTS]
    for path, data in report["baseline"].items():
        steady = data["steady"]
        chart.add(f"{path} steady", [steady[f"{key}_p50"] for key, _ in SEGMENTS])
    return _svg(chart)


def _chart(change: dict[str, Any]) -> str:
    import pygal

    baseline = next((c for c in change["effect"] if c["against"] == "baseline"), None)
    if baseline is None:
        return ""
    chart = pygal.Bar(
        title=f"{change['parameter']}: {change['before']} -> {change['after']} (p50 ms)",
        js=[],
        height=300,
        width=700,
    )
    chart.x_labels = [s["segment"] for s in baseline["segments"]]
    chart.add("before", [s["before_p50"] for s in baseline["segments"]])
    chart.add("after", [s["after_p50"] for s in baseline["segments"]])
    return _svg(chart)
