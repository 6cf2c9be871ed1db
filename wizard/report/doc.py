"""The incident summary as a document: headings, lines, tables and charts, in one language.

Markdown and HTML draw the same document (``report_md``, ``report_html``), so they cannot say
different things. Text is plain with `code` in backticks; a tone (fail, warn, info, good, bad)
says how a line or cell is coloured where colour exists.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wizard.i18n.words import (
    count,
    evidence_item,
    ms,
    outside_engine,
    path_name,
    percent,
    say,
    segment_name,
    signed_percent,
    verdict_word,
)
from wizard.report.summary import validation_word, verdict_text, workload_text

SEGMENTS = ("ttft", "tpot", "itl", "e2e")
VERDICT_TONE = {"improved": "good", "regressed": "bad", "expected": "info", "inconclusive": "warn",
                "cause gone": "good", "cause still there": "bad"}  # fmt: skip


@dataclass
class Cell:
    text: str
    tone: str = ""  # good / warn / fail / bad, or "word": a short word kept on one line


@dataclass
class Heading:
    level: int
    text: str
    tone: str = ""


@dataclass
class Lines:
    """A bulleted list; a line may carry a bold label."""

    items: list[tuple[str, str, str]]  # label ("" for none), text, tone


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Cell]]


@dataclass
class Chart:
    """One bar chart with its own scale: a segment's p50 per group (path), one bar per series."""

    title: str
    groups: list[str]
    series: list[tuple[str, list[float | None]]]


@dataclass
class Charts:
    charts: list[Chart] = field(default_factory=list)


@dataclass
class Code:
    text: str


Block = Heading | Lines | Table | Charts | Code


def document(report: dict[str, Any]) -> list[Block]:
    """Every block of the summary, the answer first."""
    lang = report["lang"]
    session = report["session"]
    blocks: list[Block] = [
        Heading(1, say("title", lang, model=session["model"] or say("unknown", lang), target=session["target"])),
        Lines([
            ("", say("window", lang, start=session["started_at"], end=session["ended_at"])
             + ("" if session["complete"] else say("session_incomplete", lang))
             + (say("salvaged", lang, lost=(session.get("salvaged_texts") or {}).get(lang, session["salvaged"])) if session.get("salvaged") else ""), ""),
            ("", say("target", lang, target=session["target"])
             + (say("via_proxy", lang, proxy=session["proxy"]) if session["proxy"] else ""), ""),
            ("", say("server_version", lang, version=session["version"] or say("unknown", lang),
                     playbook=session["playbook"]), ""),
            *([("", workload_text(session["workload"], lang), "")] if session.get("workload") else []),
        ]),
        Heading(2, say("tldr", lang)),
        Lines([(line["label"], line["text"], line["tone"]) for line in report["answer"]["lines"]]),
    ]  # fmt: skip
    blocks += _baseline(report, lang)
    blocks += _changes(report, lang)
    blocks += _server(report, lang)
    blocks += _waterfall(report, lang)
    blocks += _rounds(report, lang)
    blocks += _findings(report, lang)
    blocks += [
        Heading(2, say("evidence", lang)),
        Lines(_evidence(report.get("evidence") or {}, lang)),
    ]
    if report["notes"]:
        blocks += [
            Heading(2, say("notes", lang)),
            Lines([("", note, "") for note in report["notes"]]),
        ]
    blocks += [Heading(2, say("timeline", lang)),
               Lines([("", f"{s['t']} {s['title']} ({s['stage']})", "") for s in report["steps"]])]  # fmt: skip
    flags = report["audit_flags"]
    blocks += [Heading(2, say("audit", lang)),
               Lines([("", flag, "warn") for flag in flags] or [("", say("nothing_to_flag", lang), "good")])]  # fmt: skip
    blocks += [Heading(2, say("replay", lang)), Code(report["replay"])]
    return blocks


def _baseline(report: dict[str, Any], lang: str) -> list[Block]:
    first, final = report["first"], report["final"]
    # The first rounds: the incident's, or (a server that did not start) after the fix.
    after_fix = bool(first) and all(s.get("after_fix") for s in first.values())
    changed = bool(report["changes"])
    heading = (
        "baseline_after_fix"
        if after_fix
        else "baseline_vs_final"
        if changed
        else "baseline_unchanged"
    )
    blocks: list[Block] = [Heading(2, say(heading, lang))]
    if not first:
        return [*blocks, Lines([("", say("no_rounds", lang), "warn")])]
    headers = [say("col.round", lang), say("col.state", lang),
               *(say("ms_pair", lang, segment=segment.upper()) for segment in SEGMENTS)]  # fmt: skip
    rows = []
    for label, state in first.items():
        start = say("after_fix" if state.get("after_fix") else "incident", lang)
        # Nothing changed: no final state to set beside the incident's (summary.first_and_final).
        states = ((start, state), (say("final", lang), final.get(label)))[: 2 if changed else 1]
        for when, data in states:
            if data is None:
                rows.append(
                    [
                        Cell(label),
                        Cell(when),
                        *(Cell(say("not_measured_again", lang)) for _ in SEGMENTS),
                    ]
                )
                continue
            for kind in ("steady", "cold"):
                row = data.get(kind)
                if row:
                    name = label if data["round"] == label else f"{label} ({data['round']})"
                    rows.append([Cell(name), Cell(f"{when}, {say(kind, lang)}"),
                                 *(Cell(f"{ms(row[f'{s}_p50'])} / {ms(row[f'{s}_p99'])}") for s in SEGMENTS)])  # fmt: skip

    def p50(state: dict[str, Any] | None, segment: str) -> float | None:
        return ((state or {}).get("steady") or {}).get(f"{segment}_p50")

    first_word = "after_fix" if after_fix else "incident"
    charts = Charts([
        Chart(say("chart.baseline_after_fix" if after_fix else "chart.baseline", lang,
                  segment=segment.upper()), list(first), [
            (say(when, lang), [p50(states.get(label), segment) for label in first])
            for when, states in ((first_word, first), ("final", final))[: 2 if changed else 1]
        ])
        for segment in SEGMENTS
    ])  # fmt: skip
    return [*blocks, Table(headers, rows), charts]


def _changes(report: dict[str, Any], lang: str) -> list[Block]:
    blocks: list[Block] = [Heading(2, say("changes", lang))]
    headers = [say("col.change", lang), say("col.judged", lang), say("col.before", lang),
               say("col.after", lang), say("col.delta", lang), say("col.verdict", lang)]  # fmt: skip
    rows, charts = [], Charts()
    for change in report["changes"]:
        name = f"{change['parameter']}: {change['before']} -> {change['after']}"
        evidence = change.get("verdict")
        if evidence:  # the cause's own evidence first, then the latency segments
            rows.append([Cell(name), Cell(f"{evidence['code']} ({evidence['round']})"), Cell(evidence["evidence"]),
                         Cell(""), Cell(""), Cell(verdict_word(evidence["verdict"], lang),
                                                  VERDICT_TONE.get(evidence["verdict"], ""))])  # fmt: skip
        for comparison in change["effect"]:
            rows += _segment_rows(name, comparison, lang)
            if comparison["against"] == "baseline":
                charts.charts += [
                    Chart(say("chart.change", lang, segment=segment_name(s["segment"]), parameter=change["parameter"]),
                          [segment_name(s["segment"])],
                          [(say("col.before", lang), [s["before_p50"]]), (say("col.after", lang), [s["after_p50"]])])
                    for s in comparison["segments"]
                ]  # fmt: skip
    for comparison in report.get("validation") or []:  # every change together, on its own path
        rows += _segment_rows(say(validation_word(report), lang, path=path_name(comparison.get("path"), lang)),
                              comparison, lang)  # fmt: skip
    if rows:
        blocks += [Table(headers, rows), charts]
    else:
        blocks.append(Lines([("", say("none", lang), "")]))
    if report["not_applied"]:
        blocks.append(Lines([
            (say("not_applied", lang), f"{row['code']} {row['title']}: `{row['apply']}`"
             + (f" ({row['reason']})" if row["reason"] else ""), "")
            for row in report["not_applied"]
        ]))  # fmt: skip
    return blocks


def _segment_rows(name: str, comparison: dict[str, Any], lang: str) -> list[list[Cell]]:
    """One row per compared segment: the rounds on each side, their p50s and the verdict."""
    rows = []
    for s in comparison["segments"]:
        verdict = "expected" if s.get("expected") else s["verdict"]
        judged = f"{segment_name(s['segment'])} p50, {_sides(comparison, 'before')} -> {_sides(comparison, 'after')}"
        rows.append([Cell(name), Cell(judged),
                     Cell(f"{ms(s['before_p50'])} ms"), Cell(f"{ms(s['after_p50'])} ms"),
                     Cell(signed_percent(s.get("relative_change"))),
                     Cell(verdict_text(s, lang), VERDICT_TONE.get(verdict, ""))])  # fmt: skip
    return rows


def _sides(comparison: dict[str, Any], side: str) -> str:
    """The round (or pooled rounds) on one side of a comparison: ``proxy#2 + proxy#3``."""
    pooled = comparison.get(f"{side}_rounds")
    return (
        " + ".join(map(str, pooled))
        if isinstance(pooled, list) and pooled
        else str(comparison[side])
    )


def _server(report: dict[str, Any], lang: str) -> list[Block]:
    rows = [
        [Cell(row["round"]), Cell(count(server["waiting_max"])), Cell(count(server["running_max"])),
         Cell(count(server["preemptions"]), "bad" if server["preemptions"] else ""),
         Cell(percent(server["kv_usage_max"])), Cell(ms(outside_engine(server["ttft_outside_engine_ms"])))]
        for row in report["rounds"] if (server := row.get("server"))
    ]  # fmt: skip
    if not rows:
        return []
    headers = [say("col.round", lang), say("col.waiting", lang), say("col.running", lang),
               say("col.preemptions", lang), say("col.kv_peak", lang), say("col.outside", lang)]  # fmt: skip
    return [Heading(2, say("server_side", lang)), Table(headers, rows)]


def _waterfall(report: dict[str, Any], lang: str) -> list[Block]:
    """The first token hop by hop on each baseline path, or why a path has none."""
    from wizard.report.walk_waterfall import lines

    rows = report.get("waterfall") or []
    if not rows:
        return []
    blocks: list[Block] = [Heading(2, say("triage.h.waterfall", lang))]
    for row in rows:
        head, *rest = lines(row, lang)
        tone = "warn" if "absent" in row else ""
        blocks += [Heading(3, head.rstrip(":："), tone), Lines([("", line, tone) for line in rest])]
    return blocks


def _rounds(report: dict[str, Any], lang: str) -> list[Block]:
    blocks: list[Block] = [Heading(2, say("rounds", lang))]
    if not report["rounds"]:
        return [*blocks, Lines([("", say("no_rounds", lang), "warn")])]
    steps = {s["node"]: s["title"] for s in report["steps"]}
    headers = [say("col.round", lang), say("col.step", lang), say("col.path", lang), say("col.requests", lang),
               *(say("ms_p50", lang, segment=s) for s in ("TTFT", "TPOT")), say("ms_p99", lang, segment="ITL"),
               say("ms_p50", lang, segment="E2E"),
               say("col.bursts", lang), say("col.result", lang)]  # fmt: skip
    rows = []
    for row in report["rounds"]:
        step = Cell(steps.get(row["node"], row["node"]))
        if row["error"]:
            rows.append([Cell(row["round"]), step, *(Cell("-") for _ in range(7)),
                         Cell(say("failed", lang, error=row["error"]), "fail")])  # fmt: skip
        elif row.get("loadgen"):
            run = row["loadgen"]
            detail = (say("loadgen_ok", lang, succeeded=run["succeeded"], queries=run["queries"])
                      if run["result"] == "VALID" else "; ".join(run["reasons"]) or "-")  # fmt: skip
            rows.append([Cell(row["round"]), step, Cell("-"),
                         Cell(f"{run['succeeded']}/{run['queries']}" if run["queries"] is not None else "-"),
                         *(Cell("-") for _ in range(5)),
                         Cell(say("loadgen", lang, scenario=run["scenario"], result=run["result"], detail=detail),
                              "good" if run["result"] == "VALID" else "fail")])  # fmt: skip
        else:
            steady, reads = row["steady"], row.get("events_per_read") or {}
            result = (Cell(say("ok", lang), "good") if row["status"] == "ok" else
                      Cell(say("partial", lang, failed=row["requests"] - row["succeeded"], requests=row["requests"]),
                           "fail" if row["status"] == "failed" else "warn"))  # fmt: skip
            rows.append([Cell(row["round"]), step, Cell(path_name(row["path"], lang), "word"), Cell(f"{row['succeeded']}/{row['requests']}"),
                         Cell(ms(steady["ttft_p50"])), Cell(ms(steady["tpot_p50"])), Cell(ms(steady["itl_p99"])),
                         Cell(ms(steady["e2e_p50"])),
                         Cell(f"{count(reads.get('typical'))} / {count(reads.get('max'))}"), result])  # fmt: skip
    return [*blocks, Table(headers, rows)]


def _findings(report: dict[str, Any], lang: str) -> list[Block]:
    blocks: list[Block] = [Heading(2, say("findings", lang))]
    for f in report["findings"]:
        severity = say(f"severity.{f['severity']}", lang)
        lines = [
            (say("finding_evidence", lang), f["evidence"], ""),
            (say("finding_advice", lang), f["advice"], ""),
        ]
        if f["change"] and f["change"].get("apply"):
            lines.append((say("the_change", lang), f"`{f['change']['apply']}`", ""))
        lines.append((say("finding_docs", lang), " ".join(f["docs"]), ""))
        blocks += [Heading(3, say("finding_head", lang, code=f["code"], severity=severity, cause=f"`{f['cause']}`",
                                  title=f["title"]), f["severity"]), Lines(lines)]  # fmt: skip
    if not report["findings"]:
        blocks.append(Lines([("", say("none", lang), "")]))
    return blocks


def _evidence(evidence: dict[str, Any], lang: str) -> list[tuple[str, str, str]]:
    lines = []
    log = evidence.get("vllm_log")
    if log:
        shown = [
            evidence_item(k, v, lang)
            for k, v in log.items()
            if k != "file" and v not in (None, [], "")
        ]
        lines.append((say("vllm_log", lang, file=log.get("file")), ", ".join(shown), ""))
    host = evidence.get("host")
    if host:
        key = "host.evidence" if host.get("source") == "evidence" else "host.this machine"
        source = say(key, lang, files=", ".join(evidence.get("host_files") or []))
        shown = [
            evidence_item(k, v, lang)
            for k, v in host.items()
            if k != "source" and v not in (None, [], "")
        ]
        lines.append((source, ", ".join(shown), "" if host.get("source") == "evidence" else "warn"))
    return lines or [("", say("no_evidence", lang), "")]
