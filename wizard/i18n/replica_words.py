"""The replicas' judgement in words: why a replica is slow and each cause's evidence, said in every
language from the numbers the judgement recorded (``probe replicas``, the walk's lines, and the
finding that quotes ``{replicas.evidence.<cause>}``).

Each sentence is said here once, in every language, English included: the judgement records each
cause's evidence in every language (``evidence_texts``, which a finding's evidence takes in its
own) and its English as ``evidence`` (as scripts read it). A report recorded before it said every
language (an older transcript's) is said again from its numbers, else shows the recorded English.
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
    """Why a slow replica is slow, as the judgement said it (``why_texts``); a replica recorded
    without it, in English as recorded, else from its first round's server."""
    said = (replica.get("why_texts") or {}).get(lang)
    if said:
        return str(said)
    if lang == "en" and replica.get("why"):
        return str(replica["why"])
    return replica_why(replica["cause"], replica.get("server") or {}, lang)


def slower_text(compared: dict[str, Any], lang: str) -> str:
    """One segment a replica is slower in, from its comparison with the other replicas."""
    return say("view.replica_slower", lang, segment=segment_name(compared["segment"]),
               mine=f"{compared['after_p50']:.0f}", theirs=f"{compared['before_p50']:.0f}")  # fmt: skip


def replica_evidence(report: dict[str, Any], cause: str, recorded: str, lang: str) -> str:
    """A cause's evidence in ``lang``: as the judgement said it (``evidence_texts``), else (a
    report recorded before it said every language) from the report's numbers, else the
    recorded English."""
    said = (report.get("evidence_texts") or {}).get(cause, {}).get(lang)
    if said:
        return str(said)
    if lang == "en":
        return recorded
    try:
        return _said_evidence(report, cause, lang)
    except (KeyError, TypeError, StopIteration):
        return recorded


def evidence_texts(report: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Each cause's evidence in every language, each from the one sentence that says it."""
    return {cause: {lang: _said_evidence(report, cause, lang) for lang in LANGS}
            for cause in report["causes"]}  # fmt: skip


def _said_evidence(report: dict[str, Any], cause: str, lang: str) -> str:
    via = report.get("balancer_round") or {}
    if cause == "balancer_sticky":
        sticky = via["sticky"]
        by = (say("view.replicas_by", lang, upstream=sticky["upstream"], method=sticky["method"])
              if sticky.get("upstream") else "")  # fmt: skip
        return say("view.replicas_sticky", lang, total=count(via["total"]), replica=sticky["replica"],
                   others=len(via["served"]) - 1, by=by)  # fmt: skip
    if cause == "balancer_unbalanced":
        found = via["unbalanced"]
        weighted = (say("view.replicas_weight", lang, weight=f"{found['weight']:g}")
                    if found["weight"] not in (None, 1.0) else "")  # fmt: skip
        return say("view.replicas_unbalanced", lang, replica=found["replica"], served=count(found["served"]),
                   total=count(found["of"]), share=percent(found["share"]), equal=percent(found["equal_share"]),
                   band=percent(found["band"]), weighted=weighted)  # fmt: skip
    replica = next(r for r in report["replicas"] if r["cause"] == cause)
    slower = say("sep", lang).join(slower_text(s, lang) for s in replica["slower"])
    return paren(say("view.replica_slow", lang, url=replica["url"], slower=slower),
                 said_why(replica, lang), lang)  # fmt: skip
