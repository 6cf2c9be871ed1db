"""The replicas' judgement in words: why a replica is slow and each cause's evidence, said in every
language from the numbers the judgement recorded (``probe replicas``, the walk's lines, and the
finding that quotes ``{replicas.evidence.<cause>}``).

The judgement records its evidence in English (``evidence``, as scripts read it); ``evidence_texts``
has each cause's evidence in every language, which a finding's evidence takes in its own language.
A report recorded before a number was (an older transcript's) shows the recorded English.
"""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import LANGS, count, paren, percent, say, segment_name


def replica_why(cause: str, server: dict[str, Any], lang: str) -> str:
    """Why the judgement named ``cause`` for a slow replica, from its server's metrics."""
    if cause == "kv_cache_preemption":
        return say("view.why_preempted", lang, n=count(server.get("preemptions")))
    if cause == "queue_saturation":
        return say("view.why_queue", lang, waiting=count(server.get("waiting_max") or 0),
                   share=percent(server.get("queue_share_of_ttft")))  # fmt: skip
    return say("view.why_unread" if not server.get("available") else "view.why_elsewhere", lang)


def said_why(replica: dict[str, Any], lang: str) -> str:
    """Why a slow replica is slow, from the round its cause was read in (``why_texts``); a
    replica recorded without it, from its first round's server."""
    return (replica.get("why_texts") or {}).get(lang) or replica_why(
        replica["cause"], replica.get("server") or {}, lang
    )


def replica_evidence(report: dict[str, Any], cause: str, recorded: str, lang: str) -> str:
    """A cause's evidence (recorded in English), said again from the report's numbers; a report
    recorded without them (an older transcript's) shows the recorded text."""
    try:
        return _said_evidence(report, cause, lang)
    except (KeyError, TypeError, StopIteration):
        return recorded


def evidence_texts(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each cause's evidence in every language (English as recorded)."""
    return {
        cause: {lang: text if lang == "en" else replica_evidence(report, cause, text, lang) for lang in LANGS}
        for cause, text in report["evidence"].items()
    }  # fmt: skip


def _said_evidence(report: dict[str, Any], cause: str, lang: str) -> str:
    via = report.get("balancer_round") or {}
    if cause == "balancer_sticky":
        sticky = via["sticky"]
        return say("view.replicas_sticky", lang, total=count(via["total"]), replica=sticky["replica"],
                   others=len(via["served"]) - 1)  # fmt: skip
    if cause == "balancer_unbalanced":
        found = via["unbalanced"]
        weighted = (say("view.replicas_weight", lang, weight=f"{found['weight']:g}")
                    if found["weight"] not in (None, 1.0) else "")  # fmt: skip
        return say("view.replicas_unbalanced", lang, replica=found["replica"], served=count(found["served"]),
                   total=count(found["of"]), share=percent(found["share"]), equal=percent(found["equal_share"]),
                   band=percent(found["band"]), weighted=weighted)  # fmt: skip
    replica = next(r for r in report["replicas"] if r["cause"] == cause)
    slower = say("sep", lang).join(
        say("view.replica_slower", lang, segment=segment_name(s["segment"]), mine=f"{s['after_p50']:.0f}",
            theirs=f"{s['before_p50']:.0f}")
        for s in replica["slower"]
    )  # fmt: skip
    return paren(say("view.replica_slow", lang, url=replica["url"], slower=slower),
                 said_why(replica, lang), lang)  # fmt: skip
