"""What the incident summary leads with, derived from a transcript's own events.

The answer (root cause, symptom, the one change, its proven effect) comes from the finding,
change, verdict and comparison events the walk recorded: nothing is re-judged here. Beside it:
every round (failed ones and LoadGen runs that never succeeded included), the incident's first
rounds beside the last ones, and what the audit must flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from wizard.i18n.words import (
    count,
    joined,
    ms,
    paren,
    percent,
    say,
    segment_name,
    signed_percent,
    verdict_word,
)
from wizard.probes.http.stream import ENDPOINT_PATHS
from wizard.ui.render_events import band_word, loadgen_outcome, pick

BASELINE_PATHS = ("direct", "proxy")
# The engine's notes that say it refused a step (two parameters in one change, rounds that may
# not be compared): the audit lists them.
REFUSAL_PREFIXES = ("refused:", "not compared with the")


def rounds(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every measuring round (``measure`` and LoadGen ``validate``), failed ones included."""
    out = []
    for event in events:
        data = event["data"]
        if event["type"] != "probe_result" or data["probe"] not in ("measure", "validate"):
            continue
        facts = data["facts"] or {}
        row: dict[str, Any] = {"round": data.get("round") or data["as"], "as": data["as"],
                               "node": event["node"], "probe": data["probe"], "error": data["error"],
                               "status": "failed" if data["error"] else "ok"}  # fmt: skip
        if data["error"]:
            pass
        elif data["probe"] == "validate":
            run = loadgen_outcome(facts)
            row["loadgen"] = run
            row["status"] = "ok" if run["result"] == "VALID" else "failed"
        else:
            row.update(_measured(facts))
        out.append(row)
    return out


def _measured(facts: dict[str, Any]) -> dict[str, Any]:
    states = [facts.get(state) or {} for state in ("steady", "cold")]
    requests = sum(int(s.get("requests") or 0) for s in states)
    succeeded = sum(int(s.get("succeeded") or 0) for s in states)
    server = facts.get("server") or {}
    burst = facts.get("burst") or {}
    return {
        "path": facts.get("path"),
        "url": facts.get("url"),
        "requests": requests,
        "succeeded": succeeded,
        "status": "ok" if succeeded == requests else "failed" if succeeded == 0 else "partial",
        "steady": {k: (facts.get("steady") or {}).get(k) for k in ("ttft_p50", "tpot_p50", "itl_p99", "e2e_p50")},
        "server": {k: server.get(k) for k in ("preemptions", "waiting_max", "running_max", "kv_usage_max",
                                              "ttft_outside_engine_ms")}
        if server.get("available") else None,
        "events_per_read": {"typical": burst.get("p50_events_per_read"), "max": burst.get("max_events_per_read")}
        if burst else None,
    }  # fmt: skip


def first_and_final(
    measurements: list[dict[str, Any]],
    changes: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The incident's first round of each baseline path, and the last round of the same.

    A round measured again (after a change, or a later baseline) has a final state; one measured
    once has none, and no round has one on a walk where nothing was changed. A round a change was judged on (``loaded``) is listed beside the baselines.
    A/A repeats only calibrate noise and are left out. A first round measured only after a change
    to the service (a server that did not start until it was fixed) is no incident's state: it
    says ``after_fix``.
    """
    by_as: dict[str, list[dict[str, Any]]] = {}
    for m in measurements:
        if not m.get("repeat_of"):
            by_as.setdefault(m["as"], []).append(m)
    first = {label: {**_state(ms_[0]), "after_fix": _after_fix(ms_[0], changes)}
             for label, ms_ in by_as.items() if label in BASELINE_PATHS or len(ms_) > 1}  # fmt: skip
    if not changes:
        # Nothing was changed: a later round of the same path is the same server measured again,
        # no "final state" whose difference from the incident a reader could credit to a change.
        return first, {}
    final = {
        label: _state(ms_[-1]) for label, ms_ in by_as.items() if label in first and len(ms_) > 1
    }
    return first, final


def _after_fix(m: dict[str, Any], changes: Sequence[dict[str, Any]]) -> bool:
    """Whether a change to the service (not the wizard's own concurrency) came before the round."""
    made = changes[: m.get("changes_before") or 0]
    return any(c.get("layer") != "measurement" for c in made)


def _state(m: dict[str, Any]) -> dict[str, Any]:
    return {"steady": m["steady"], "cold": m["cold"], "url": m["spec"]["access_path"],
            "fingerprint": m["fingerprint"], "round": m["round"]}  # fmt: skip


# What of the incident's request shape makes a round the incident's, not the wizard's own.
SHAPE_KEYS = ("model", "input_tokens", "output_tokens", "concurrency", "body")


def workload(header: dict[str, Any], measurements: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The request shape the baseline was measured with (its spec), and whether it was the
    incident's (``run --model/--endpoint/... or --request-body``) or the wizard's own."""
    given = header.get("workload") or {}
    first = next((m for m in measurements if m["as"] in BASELINE_PATHS), None)
    if first is None:
        return None
    spec = first["spec"]
    return {
        # The API alone (the demo names it) leaves the lengths and streams the wizard's own.
        "incident": any(given.get(key) is not None for key in SHAPE_KEYS),
        "model": spec.get("model"), "endpoint": spec.get("endpoint"),
        "input_tokens": spec.get("input_tokens"), "output_tokens": spec.get("output_tokens"),
        "concurrency": spec.get("concurrency"), "request_body": given.get("body_file"),
        "request_body_sha256": given.get("body_sha256"),
    }  # fmt: skip


def workload_text(shape: dict[str, Any], lang: str) -> str:
    """One line: what every round sent, and whose shape it is."""
    prompt = (
        say("workload.body", lang, file=shape["request_body"])
        if shape["request_body"]
        else say(
            "workload.tokens", lang, input=shape["input_tokens"], output=shape["output_tokens"]
        )
    )
    whose = say("workload.incident" if shape["incident"] else "workload.own", lang)
    return say("workload.line", lang, whose=whose, model=shape["model"], prompt=prompt,
               concurrency=shape["concurrency"],
               endpoint=ENDPOINT_PATHS.get(shape["endpoint"], shape["endpoint"]))  # fmt: skip


def not_applied(events: list[dict[str, Any]], lang: str) -> list[dict[str, Any]]:
    """Changes the findings proposed that were not made, with the walk's reason."""
    out: list[dict[str, Any]] = []
    pending: dict[str, Any] | None = None
    for event in events:
        kind, data = event["type"], event["data"]
        if kind == "finding":
            pending = data if data.get("change") else None
            if pending is not None:
                out.append({"code": data["code"], "title": pick(data["title"], lang),
                            "apply": data["change"].get("apply"), "reason": None})  # fmt: skip
        elif kind == "change" and pending is not None:
            out = [row for row in out if row["code"] != data["code"]]
            pending = None
        elif kind == "note" and pending is not None and out and out[-1]["reason"] is None:
            out[-1]["reason"] = pick(data.get("texts") or data["text"], lang)
    return out


def refusals(events: list[dict[str, Any]]) -> list[str]:
    """The steps the engine refused, in its own words."""
    return [e["data"]["text"] for e in events
            if e["type"] == "note" and e["data"]["text"].startswith(REFUSAL_PREFIXES)]  # fmt: skip


def flags(report: dict[str, Any], events: list[dict[str, Any]], lang: str) -> list[str]:
    """What the audit lists: its own findings, failed rounds, unsuccessful LoadGen runs, refusals."""
    out = list(report["audit_details"])
    for row in report["rounds"]:
        if row["error"]:
            out.append(say("flag.failed", lang, round=row["round"], error=row["error"]))
        elif row.get("loadgen") and row["status"] == "failed":
            run = row["loadgen"]
            out.append(say("flag.loadgen", lang, scenario=run["scenario"], round=row["round"],
                           result=run["result"], detail="; ".join(run["reasons"]) or "-"))  # fmt: skip
        elif row["status"] in ("failed", "partial"):
            out.append(say("flag.partial", lang, round=row["round"], requests=row["requests"],
                           failed=row["requests"] - row["succeeded"]))  # fmt: skip
    out += refusals(events)  # the engine's own words say what was refused
    return out


def unjudged(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rules the walk could not judge (its client contended) that never fired after all."""
    raised = {e["data"]["code"] for e in events if e["type"] == "finding"}
    said = {e["data"]["code"]: e["data"] for e in events if e["type"] == "inconclusive"}
    return [
        {
            "code": code,
            "rounds": data["rounds"],
            "reason": data["reason"],
            "reason_texts": data.get("reason_texts") or {"en": data["reason"]},
        }
        for code, data in said.items()
        if code not in raised
    ]


def answer(report: dict[str, Any], measurement_causes: frozenset[str], lang: str) -> dict[str, Any]:
    """Root cause, symptom, the one change and its proven effect, as data and as lines."""
    changes = report["changes"]
    gone = {c["verdict"]["code"] for c in changes
            if c.get("verdict") and c["verdict"]["verdict"] == "cause gone"}  # fmt: skip
    causes = [f for f in report["findings"]
              if f["severity"] in ("warn", "fail") and f["cause"] not in measurement_causes]  # fmt: skip
    root = (next((f for f in causes if f["code"] in gone), None)
            or next((f for f in causes if f["severity"] == "fail"), None)
            or next(iter(causes), None))  # fmt: skip
    change = next((c for c in changes if root and c["code"] == root["code"]), None)
    effect = _effect(change, report["rounds"]) if change else None
    others = [
        f for f in report["findings"] if f is not root and f["cause"] not in measurement_causes
    ]
    data = {
        "cause": {k: root[k] for k in ("code", "title", "severity", "cause")} if root else None,
        "symptom": root["evidence"] if root else None,
        "change": _change_of(change, root) if change or (root and root["change"]) else None,
        "effect": effect,
        "also_found": [{k: f[k] for k in ("code", "title", "severity")} for f in others],
    }
    data["lines"] = _lines(data, report, lang)
    return data


def _change_of(change: dict[str, Any] | None, root: dict[str, Any] | None) -> dict[str, Any]:
    proposed = (root or {}).get("change") or {}
    if change is None:  # proposed, never made
        return {"apply": proposed.get("apply"), "parameter": proposed.get("parameter"),
                "before": proposed.get("before"), "after": proposed.get("after"), "applied": False}  # fmt: skip
    return {"apply": proposed.get("apply"), "parameter": change["parameter"], "before": change["before"],
            "after": change["after"], "layer": change["layer"], "applied": True}  # fmt: skip


def _effect(change: dict[str, Any], all_rounds: list[dict[str, Any]]) -> dict[str, Any] | None:
    against = next((c for c in change["effect"] if c["against"] == "baseline"), None)
    if against is None and not change.get("verdict"):
        return None
    before, after = _rounds_compared(all_rounds, against) if against else (None, None)
    return {
        "cause_verdict": change.get("verdict"),
        "against": against["against"] if against else None,
        "before_round": against["before"] if against else None,
        "after_round": against["after"] if against else None,
        "segments": against["segments"] if against else [],
        "events_per_read": _pair(before, after, "events_per_read"),
        "server": _pair(before, after, "server"),
    }


def _rounds_compared(
    all_rounds: list[dict[str, Any]], comparison: dict[str, Any]
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The rounds a comparison names: labels repeat (a later baseline is "proxy" again), so the
    "before" is the last round of its label ahead of the "after"."""
    before = None
    for row in all_rounds:
        if row["round"] == comparison["before"]:
            before = row
        elif row["round"] == comparison["after"] and before is not None:
            return before, row
    return None, None


def _pair(
    before: dict[str, Any] | None, after: dict[str, Any] | None, key: str
) -> dict[str, Any] | None:
    if not before or not after or not before.get(key) or not after.get(key):
        return None
    return {"before": before[key], "after": after[key]}


def _lines(data: dict[str, Any], report: dict[str, Any], lang: str) -> list[dict[str, str]]:
    """The answer in sentences: label, text, and a tone for colour (fail, warn, good, bad)."""
    cause = data["cause"]
    unjudged_rules = report.get("inconclusive") or []
    if cause is None:
        lines = [{"label": say("root_cause", lang), "tone": "warn" if unjudged_rules else "good",
                  "text": say("no_cause_inconclusive" if unjudged_rules else "no_cause", lang)}]  # fmt: skip
    else:
        severity = say(f"severity.{cause['severity']}", lang)
        lines = [
            {"label": say("root_cause", lang), "text": paren(f"{cause['code']} {cause['title']}", severity, lang),
             "tone": cause["severity"]},
            {"label": say("symptom", lang), "text": str(data["symptom"]), "tone": ""},
        ]  # fmt: skip
    change = data["change"]
    if change:
        text = f"`{change['apply']}`" if change.get("apply") else ""
        if change["before"] is not None or change["after"] is not None:
            text = paren(
                text, f"{change['parameter']} {change['before']} -> {change['after']}", lang
            )
        if not change["applied"]:
            text = joined([text, say("not_applied", lang)], lang)
        lines.append({"label": say("the_change", lang), "text": text.strip(), "tone": ""})
    elif cause is not None:
        lines.append({"label": say("the_change", lang), "text": say("no_change", lang), "tone": ""})
    if change and change["applied"]:
        lines.append({"label": say("effect", lang), **_effect_text(data["effect"], lang)})
    outcome = report.get("outcome")
    if (
        outcome or not report["session"]["complete"]
    ):  # transcripts before outcomes were recorded have none
        outcome = outcome or "unknown"
        remaining = joined(report.get("causes_remaining") or [], lang, "comma")
        tone = "bad" if outcome == "cause_remains" else "good" if outcome == "no_cause" else ""
        lines.append({"label": say("outcome", lang), "text": say(f"outcome.{outcome}", lang, causes=remaining),
                      "tone": tone})  # fmt: skip
    if unjudged_rules:
        codes = joined(
            [f"{u['code']} ({', '.join(u['rounds'])})" for u in unjudged_rules], lang, "comma"
        )
        lines.append({"label": say("inconclusive_label", lang), "tone": "warn",
                      "text": say("inconclusive_rules", lang, codes=codes)})  # fmt: skip
    if data["also_found"]:
        lines.append({"label": say("also_found", lang), "tone": "", "text": joined([
            paren(f"{f['code']} {f['title']}", say("severity." + f["severity"], lang), lang) for f in data["also_found"]], lang)})  # fmt: skip
    return lines


def change_line(change: dict[str, Any], all_rounds: list[dict[str, Any]], lang: str) -> str:
    """One change and what it did: ``proxy_buffering on -> off: LAT001 cause gone ...``."""
    effect = _effect(change, all_rounds)
    return f"{change['parameter']} {change['before']} -> {change['after']}: {_effect_text(effect, lang)['text']}"


def _effect_text(effect: dict[str, Any] | None, lang: str) -> dict[str, str]:
    if effect is None:
        return {"text": say("not_remeasured", lang), "tone": "warn"}
    parts = []
    verdict = effect["cause_verdict"]
    if verdict:
        parts.append(say("cause_verdict", lang, code=verdict["code"], round=verdict["round"],
                         verdict=verdict_word(verdict["verdict"], lang), evidence=verdict["evidence"]))  # fmt: skip
    parts += [segment_effect(s, lang) for s in effect["segments"]]
    reads = effect["events_per_read"]
    if reads:
        # The typical read; transcripts recorded before it was kept have the largest only.
        kind = "typical" if reads["before"]["typical"] is not None else "max"
        before, after = reads["before"][kind], reads["after"][kind]
        if max(before or 0, after or 0) > 1:
            parts.append(say(f"bursts.{kind}", lang, before=count(before), after=count(after)))
    server = server_change(effect, lang)
    if server:
        parts.append(server)
    gone = bool(verdict) and verdict["verdict"] == "cause gone"
    return {"text": joined(parts, lang), "tone": "good" if gone else "bad" if verdict else ""}


def verdict_text(segment: dict[str, Any], lang: str) -> str:
    """A segment's verdict as words, with the noise band it was judged against."""
    word = verdict_word("expected" if segment.get("expected") else segment["verdict"], lang)
    if not segment.get("expected") and (band := band_word(segment, lang)):
        word = paren(word, band, lang)
    return word


def segment_effect(segment: dict[str, Any], lang: str) -> str:
    """``TTFT p50 141 -> 24.6 ms (-83 %), within noise (±147 % noise)``."""
    word = verdict_text(segment, lang)
    relative = segment.get("relative_change")
    return say("segment_effect" if relative is not None else "segment_effect_bare", lang,
               segment=segment_name(segment["segment"]), before=ms(segment["before_p50"]),
               after=ms(segment["after_p50"]), change=signed_percent(relative), verdict=word)  # fmt: skip


def server_change(effect: dict[str, Any], lang: str) -> str | None:
    """What the server saw in the rounds before and after: preemptions, waiting, KV peak."""
    pair = effect.get("server")
    if not pair:
        return None
    before, after = pair["before"], pair["after"]
    items = [
        f"{say(key, lang)} {fmt(before.get(field))} -> {fmt(after.get(field))}"
        for key, field, fmt in (("srv.preemptions", "preemptions", count), ("srv.waiting", "waiting_max", count),
                                ("srv.kv_peak", "kv_usage_max", percent))
        if before.get(field) != after.get(field)
    ]  # fmt: skip
    return say("server_pair", lang, before=effect["before_round"], after=effect["after_round"],
               items=joined(items, lang, "comma")) if items else None  # fmt: skip


def validation_word(report: dict[str, Any]) -> str:
    """The validation's label: every change together, or, when nothing was changed, the same
    server measured again (a difference there is no change's effect)."""
    return "validation_on" if report["changes"] else "validation_again"
