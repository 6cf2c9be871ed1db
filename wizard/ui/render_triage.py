"""Triage for people: the same sections as rich output on a terminal and as plain lines for the
incident channel (``--format text``), in English or Chinese, said from the report's ids and
numbers (``wizard.triage``, ``words_triage``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.text import Text

from wizard.i18n.fleet_words import bounds
from wizard.i18n.words import WORDS, count, joined, ms, percent, plain, say

Section = tuple[str, list[str]]
RISK_STYLE = {"none": "green", "low": "green", "medium": "yellow", "high": "bold red"}


def _value(name: str, value: Any, lang: str) -> str:
    """A check's number as a person reads it."""
    if value is None:
        return say("unknown", lang)
    if name.endswith("_ms"):
        return ms(value)
    if name == "kv_max":
        return percent(value)
    if name in ("per_s", "cores", "window_s"):
        return f"{value:.2g}" if value < 10 else f"{value:.0f}"
    if name == "bar":
        return percent(value)
    if isinstance(value, float):
        return count(value)
    return plain(value, lang)


def check_text(check: dict[str, Any], lang: str) -> str:
    """One check's sentence from its numbers."""
    numbers = {k: _value(k, v, lang) for k, v in check["numbers"].items()}
    why = f"triage.why.{check['numbers'].get('why')}"
    if why in WORDS:
        numbers["why"] = say(why, lang)
    if check["check"] == "queue_saturation" and check["result"] == "fired":
        numbers["bound"] = say(f"triage.bound.{check['numbers']['bound']}", lang,
                               max_num_seqs=numbers["max_num_seqs"])  # fmt: skip
    return say(f"triage.check.{check['check']}.{check['result']}", lang, **numbers)


def _clock(at: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(at))


def _level(change: dict[str, Any], key: str, lang: str) -> str:
    value = change[key]
    if change["unit"] == "ms":
        return f"{ms(value)} ms"
    if change["unit"] == "fraction":
        return percent(value)
    return count(value)


def _changes(changed: dict[str, Any], lang: str) -> str:
    def before(change: dict[str, Any]) -> str:
        if change.get("before_is_default"):
            return say("triage.event.default", lang)
        return plain(change["before"], lang)

    return joined([say("triage.event.changed", lang, name=name, after=plain(v["after"], lang),
                       before=before(v)) for name, v in changed.items()], lang, "comma")  # fmt: skip


def event_text(event: dict[str, Any], lang: str) -> str:
    """What happened to a replica: ``restarted with gpu_memory_utilization 0.5 (was 0.92)``."""
    if event["kind"] == "restart" and event.get("changed"):
        return say("triage.event.restart_with", lang, changes=_changes(event["changed"], lang))
    if event["kind"] == "config_change":
        return say("triage.event.config_change", lang, changes=_changes(event["changed"], lang))
    return say(f"triage.event.{event['kind']}", lang)


def change_text(change: dict[str, Any], lang: str) -> str:
    """``TTFT mean rose from 40 to 900 ms at 14:02:05 UTC (p50 ...), 3 s after X restarted ...``."""
    text = say("triage.change", lang, instance=change["instance"],
               signal=say(f"triage.signal.{change['signal']}", lang),
               direction=say(f"triage.dir.{change['direction']}", lang),
               before=_level(change, "before", lang), after=_level(change, "after", lang),
               at=_clock(change["at"]))  # fmt: skip
    if change.get("p50_before") and change.get("p50_after"):
        text += say("triage.change_p50", lang, before=bounds(change["p50_before"], lang),
                    after=bounds(change["p50_after"], lang))  # fmt: skip
    event = change.get("event")
    if event:
        text += say("triage.change_event", lang, seconds=f"{max(event['seconds_before_onset'], 0):.0f}",
                    instance=event["instance"], event=event_text(event, lang))  # fmt: skip
    return text


def sections(report: dict[str, Any], lang: str) -> list[Section]:
    """Every section of the triage, in the order the on-call channel reads it."""
    found: list[Section] = [
        (say("triage.h.class", lang), [say(f"triage.cause.{report['class']}", lang)]),
        (say("triage.h.checked", lang), _sources(report, lang)),
        (say("triage.h.signal", lang), [check_text(report["signal"], lang)]),
        (say("triage.h.ruled_out", lang),
         [check_text(c, lang) for c in report["checks"] if c["result"] == "clear"]),
        (say("triage.h.not_judged", lang),
         [check_text(c, lang) for c in report["checks"] if c["result"] == "unknown"]),
    ]  # fmt: skip
    step, risk = report["next_step"], report["risk"]
    found.append((say("triage.h.next", lang),
                  [step["command"], say(f"triage.next.{step['why']}", lang)]))  # fmt: skip
    concurrency = risk.get("concurrency") or say("triage.unknown_concurrency", lang)
    found.append((say("triage.h.risk", lang),
                  [say("triage.line", lang, label=say(f"triage.risk.level.{risk['level']}", lang),
                       text=say(f"triage.risk.{risk['why']}", lang, concurrency=concurrency))]))  # fmt: skip
    found.append((say("triage.h.waterfall", lang), waterfall_lines(report["waterfall"], lang)))
    history = report.get("history")
    if history is not None or (report["evidence"].get("log") or {}).get("runs", 0) > 1:
        window = (history or {}).get("window", "-")
        found.append((say("triage.h.history", lang, window=window), history_lines(report, lang)))
    return [(heading, lines) for heading, lines in found if lines]


def _sources(report: dict[str, Any], lang: str) -> list[str]:
    server, evidence = report["evidence"]["server"], report["evidence"]
    lines = []
    if server.get("reachable"):
        models = ", ".join(server.get("models") or []) or say("unknown", lang)
        lines.append(say("triage.src.endpoints", lang, health=server["health_status"],
                         version=server.get("version") or say("unknown", lang), models=models))  # fmt: skip
        delta = server.get("delta") or {}
        if server.get("metrics_error") or not delta:
            lines.append(say("triage.src.metrics_missing", lang,
                             why=server.get("metrics_error") or say("triage.why.no_metrics", lang)))  # fmt: skip
        else:
            lines.append(say("triage.src.metrics", lang, n=server["scrapes"],
                             window=_value("window_s", delta.get("window_s"), lang)))  # fmt: skip
    log = evidence.get("log")
    if log is not None and not log["recognised"]:
        lines.append(say("triage.src.log_unrecognised", lang))
    elif log is not None:
        lines.append(say("triage.src.log", lang, runs=log["runs"], errors=len(log["errors"])))
    if evidence.get("nginx_findings") is not None:
        locations = next((c["numbers"].get("locations") for c in report["checks"]
                          if c["check"] == "proxy_buffering"), None)  # fmt: skip
        lines.append(say("triage.src.nginx", lang, n=plain(locations, lang)))
    if evidence.get("access_log") is not None:
        lines.append(say("triage.src.access", lang, n=evidence["access_log"]["requests"]))
    history = report.get("history")
    if history is not None:
        if history.get("available"):
            lines.append(say("triage.src.prometheus", lang, n=len(history["replicas"]),
                             window=history["window"]))  # fmt: skip
        else:
            lines.append(say("triage.src.prometheus_error", lang, error=history.get("error")))
    missing = [flag for flag, given in (("--vllm-log", log is not None),
               ("--nginx-conf", evidence.get("nginx_findings") is not None),
               ("--nginx-access-log", evidence.get("access_log") is not None),
               ("--prometheus", history is not None)) if not given]  # fmt: skip
    if missing:
        lines.append(say("triage.src.not_given", lang, flags=joined(missing, lang, "comma")))
    return lines


def remainder_text(unexplained_ms: float, lang: str) -> str:
    """The client's TTFT less its hops: a time, or nothing left. The hops' means are taken over
    every request of the round and the client's over its steady requests, so they can add up to
    a little more than the client's: that is said, never printed as a negative time."""
    if unexplained_ms >= 0:
        return f"{ms(unexplained_ms)} ms"
    return say("waterfall.overshoot", lang, ms=ms(-unexplained_ms))


def waterfall_lines(waterfall: dict[str, Any], lang: str) -> list[str]:
    """Each hop with its mean (over how many requests, where its source counts them), what has
    no evidence, and the client's part (triage's, and the walk's summary: walk_waterfall)."""
    lines = [say("triage.hop.row" if p["requests"] is not None else "triage.hop.row_bare", lang,
                 hop=say(f"triage.hop.{p['hop']}", lang), ms=ms(p["ms"]),
                 requests=count(p["requests"])) for p in waterfall["parts"]]  # fmt: skip
    if waterfall["unexplained_ms"] is not None:
        lines.append(say("triage.line", lang, label=say("triage.hop.unexplained", lang),
                         text=remainder_text(waterfall["unexplained_ms"], lang)))  # fmt: skip
    if waterfall["missing"]:
        hops = joined([say(f"triage.hop.{h}", lang) for h in waterfall["missing"]], lang, "comma")
        lines.append(say("triage.hop.missing", lang, hops=hops))
    if waterfall["client_ttft_ms"] is None:
        lines.append(say("triage.hop.client", lang))
    return lines


def history_lines(report: dict[str, Any], lang: str) -> list[str]:
    """The changes with what they line up with, the replicas' events, the log's restarts."""
    history = report.get("history") or {}
    lines = [change_text(c, lang) for c in history.get("changes", [])]
    if history.get("available") and not lines:
        lines.append(say("triage.history.none", lang))
    for event in history.get("events", []):
        if event["kind"] != "config_change":
            lines.append(say("triage.event.line", lang, at=_clock(event["at"]),
                             instance=event["instance"], event=event_text(event, lang)))  # fmt: skip
    log = report["evidence"].get("log") or {}
    if (log.get("runs") or 0) > 1:
        at = log.get("last_started") or say("unknown", lang)
        if log["changed"]:
            lines.append(say("triage.history.log", lang, runs=log["runs"], at=at,
                             changes=_changes(log["changed"], lang)))  # fmt: skip
        else:
            lines.append(say("triage.history.log_same", lang, runs=log["runs"], at=at))
    return lines


def triage_lines(report: dict[str, Any], lang: str) -> list[str]:
    """Plain text for the incident channel: a title, then each section's heading and lines."""
    lines = [
        say("triage.title", lang, target=report["target"], elapsed=f"{report['elapsed_s']:.1f}")
    ]
    for heading, body in sections(report, lang):
        lines.append(say("triage.heading", lang, heading=heading))
        lines.extend(f"  - {line}" for line in body)
    return lines


def triage_view(report: dict[str, Any], lang: str, mask: Callable[[str], str]) -> Group:
    """The same sections for a terminal: the class and the risk coloured, commands kept whole."""
    parts: list[Any] = [Text(mask(say("triage.title", lang, target=report["target"],
                                      elapsed=f"{report['elapsed_s']:.1f}")), style="bold")]  # fmt: skip
    for heading, body in sections(report, lang):
        parts.append(Text(heading, style="bold underline"))
        style = ""
        if heading == say("triage.h.class", lang):
            style = "green" if report["class"] == "none" else "bold red"
        elif heading == say("triage.h.risk", lang):
            style = RISK_STYLE[report["risk"]["level"]]
        parts.extend(Text("  " + mask(line), style=style) for line in body)
    return Group(*parts)
