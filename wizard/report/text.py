"""The incident summary as plain text for an incident channel: the answer in at most 15 lines."""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import joined, ms, paren, path_name, say
from wizard.report.summary import segment_effect, validation_word, workload_text
from wizard.report.walk_waterfall import compact

MAX_LINES = 15


def text(report: dict[str, Any]) -> str:
    """Plain lines, the answer first; `code` stays in backticks, which chat tools show as code."""
    lang = report["lang"]
    session = report["session"]
    head = say(
        "title", lang, model=session["model"] or say("unknown", lang), target=session["target"]
    )
    if session["proxy"]:
        head += say("via_proxy", lang, proxy=session["proxy"])
    if not session["complete"]:
        head += say("session_incomplete", lang)
    if session.get("salvaged"):
        head += say(
            "salvaged",
            lang,
            lost=(session.get("salvaged_texts") or {}).get(lang, session["salvaged"]),
        )
    lines = [head, *answer_lines(report)]
    lines += _baseline_lines(report, lang)
    lines += compact(report.get("waterfall") or [], lang)
    for comparison in report.get("validation") or []:  # LoadGen: every change, on its own path
        label = say(validation_word(report), lang, path=path_name(comparison.get("path"), lang))
        effects = [segment_effect(s, lang) for s in comparison["segments"]]
        lines.append(say("labelled", lang, label=label, text=joined(effects, lang)))
    if session.get("workload"):
        lines.append(workload_text(session["workload"], lang))
    rounds = report["rounds"]
    if rounds:
        failed = sum(1 for r in rounds if r["status"] != "ok")
        counted = say("rounds_count", lang, total=len(rounds), failed=failed)
        lines.append(say("labelled", lang, label=say("rounds_label", lang), text=counted))
    flags = report["audit_flags"]
    audit = flags[0] if flags else say("nothing_to_flag", lang)
    if len(flags) > 1:
        audit += " " + say("more_flags", lang, n=len(flags) - 1)
    lines.append(say("labelled", lang, label=say("audit", lang), text=audit))
    lines.append(say("labelled", lang, label=say("replay", lang), text=report["replay"]))
    if len(lines) > MAX_LINES:  # the answer and the replay command are kept; the middle gives way
        lines = lines[: MAX_LINES - 1] + lines[-1:]
    return "\n".join(lines) + "\n"


def answer_lines(report: dict[str, Any]) -> list[str]:
    """What the summary leads with (root cause, symptom, the one change, its effect), one line
    each: the text summary's first lines, and what ``run`` and ``demo`` print at their end."""
    return [
        say("labelled", report["lang"], label=line["label"], text=line["text"])
        for line in report["answer"]["lines"]
    ]


def _baseline_lines(report: dict[str, Any], lang: str) -> list[str]:
    """Per baseline path: the incident's TTFT/TPOT p50 -> the final state's."""
    out = []
    for label, first in report["first"].items():
        final = report["final"].get(label)
        before = first.get("steady") or {}
        after = (final or {}).get("steady") or {}
        parts = [
            f"{name} {ms(before.get(key))}" + (f" -> {ms(after.get(key))}" if after else "") + " ms"
            for name, key in (("TTFT", "ttft_p50"), ("TPOT", "tpot_p50"))
        ]
        start = say("after_fix" if first.get("after_fix") else "incident", lang)
        when = f"{start} -> {say('final', lang)}" if after else start
        out.append(
            say(
                "labelled",
                lang,
                label=paren(f"{label} p50", when, lang),
                text=joined(parts, lang, "comma"),
            )
        )
    return out
