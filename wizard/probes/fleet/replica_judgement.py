"""Which replica is slow and why, and whether the balancer spreads the requests.

**Slow**: each replica's two rounds are compared with the other replicas' rounds pooled
(leave-one-out, so a slow replica does not widen its own yardstick), segment by segment, with the
walk's own comparison (``measure.compare_values``: bootstrap of the medians' ratio) against the
replicas' median A/A band (each replica's two rounds), and in each pass on its own as well (a
burst of load during one of its rounds is not a slow replica). A replica is slow when it comes out "regressed". Its cause is
read from its own server's metrics during its rounds, with the single-server walk's bars: any
preemption is the KV cache (LAT010), most of the TTFT in the queue, or requests waiting in most
scrapes, is saturation (LAT013); else it is slow for a reason its server does not show.

**Sticky**: every request the balancer forwarded went to one replica while the others answer
(by chance that needs N^(1-n): never at the round's size).

**Unbalanced**: a replica that is not slow served a share of the balancer's requests that differs
from an equal share by more than three binomial standard deviations (sqrt(n p (1 - p))). A slow
replica is left out: ``least_conn`` rightly sends it less.
"""

from __future__ import annotations

import math
from typing import Any

from wizard import measure
from wizard.i18n.replica_words import evidence_texts, replica_why, slower_text
from wizard.i18n.words import LANGS
from wizard.measure import outliers
from wizard.probes.fleet.replica_sources import Replicas

SEGMENTS = ("ttft_ms", "tpot_ms")
QUEUE_SHARE_OF_TTFT = 0.5  # LAT013's bar: most of the TTFT spent in the queue
WAITING_MAX, WAITING_SHARE = 2, 0.5  # LAT013's other bar: a queue in most scrapes
# Fewer forwarded requests cannot tell a sticky balancer from chance (3 replicas: 3^-7 at 8).
MIN_FOR_STICKY = 8


def _values(results: list[dict[str, Any]], segment: str) -> list[float]:
    return [v for r in results if "values" in r for v in r["values"][segment]]


def _slower(
    url: str, rounds: dict[str, list[dict[str, Any]]], noise: dict[str, float]
) -> list[dict[str, Any]]:
    others = [r for u, results in rounds.items() if u != url for r in results]
    found = []
    for segment in SEGMENTS:
        mine, pooled = _values(rounds[url], segment), _values(others, segment)
        if not mine or not pooled:
            continue
        result = measure.compare_values(segment, pooled, mine, noise=noise.get(segment, 0.0))
        if result.verdict == "regressed" and _in_each_pass(url, rounds, segment, noise):
            compared = result.to_dict()
            found.append({**compared, "text": slower_text(compared, "en")})
    return found


def _in_each_pass(
    url: str, rounds: dict[str, list[dict[str, Any]]], segment: str, noise: dict[str, float]
) -> bool:
    """Slower in each pass on its own too: a burst of load during one of its rounds is not a
    slow replica."""
    for i in range(len(rounds[url])):
        mine = _values(rounds[url][i : i + 1], segment)
        theirs = _values([r[i] for u, r in rounds.items() if u != url and len(r) > i], segment)
        if not mine or not theirs:
            return False
        result = measure.compare_values(segment, theirs, mine, noise=noise.get(segment, 0.0))
        if result.verdict != "regressed":
            return False
    return True


def _cause(results: list[dict[str, Any]]) -> tuple[str, str, dict[str, str]]:
    """The slow replica's cause from its own server's metrics in either of its rounds (the
    server's own evidence, preemption before queue), and why, in every language from that
    round's server (English as ``why``)."""
    causes = [(_server_cause(r.get("server")), r.get("server") or {}) for r in results]
    cause, server = next((c for c in causes if c[0] != "replica_slow"), causes[0])
    why = {lang: replica_why(cause, server, lang) for lang in LANGS}
    return cause, why["en"], why


def _server_cause(server: dict[str, Any] | None) -> str:
    server = server or {}
    if not server.get("available"):
        return "replica_slow"
    if (server.get("preemptions") or 0) > 0:
        return "kv_cache_preemption"
    share, waiting = server.get("queue_share_of_ttft"), server.get("waiting_max") or 0
    if (share is not None and share >= QUEUE_SHARE_OF_TTFT) or (
        waiting >= WAITING_MAX and (server.get("waiting_share") or 0) >= WAITING_SHARE
    ):
        return "queue_saturation"
    return "replica_slow"


def _balance(via: dict[str, Any], slow: set[str], found: Replicas) -> dict[str, Any]:
    served = {u: n for u, n in via.get("served", {}).items() if n is not None}
    total = sum(served.values())
    shares = {u: n / total for u, n in served.items()} if total else {}
    result: dict[str, Any] = {"served": served, "shares": shares, "total": total,
                              "sticky": None, "unbalanced": None}  # fmt: skip
    if len(served) < 2 or not total:
        return result
    method = (found.upstream or {}).get("method")
    top = max(served, key=lambda u: served[u])
    if total >= MIN_FOR_STICKY and served[top] == total:
        upstream = found.upstream or {}
        result["sticky"] = {"replica": top, "upstream": upstream.get("name"), "method": method}
        return result
    fair = {u: n for u, n in served.items() if u not in slow}
    fair_total = sum(fair.values())
    if len(fair) < 2 or not fair_total:
        return result
    p = 1 / len(fair)
    sd = math.sqrt(fair_total * p * (1 - p))
    off = {u: n for u, n in fair.items() if abs(n - fair_total * p) > outliers.ROBUST_SDS * sd}
    if off:
        worst = max(off, key=lambda u: abs(off[u] - fair_total * p))
        weight = found.weights.get(worst)
        result["unbalanced"] = {
            "replica": worst,
            # The numbers its evidence says, in every language (replica_words).
            "served": off[worst],
            "of": fair_total,
            "share": off[worst] / fair_total,
            "equal_share": p,
            "band": outliers.ROBUST_SDS * sd / fair_total,
            "weight": weight,
        }
    return result


def _against_direct(
    via: dict[str, Any], rounds: dict[str, list[dict[str, Any]]], noise: dict[str, float]
) -> list[dict[str, Any]]:
    """The balancer's path against every replica's direct rounds pooled, segment by segment."""
    direct = [r for results in rounds.values() for r in results]
    if "values" not in via:
        return []
    return [
        measure.compare_values(
            segment, _values(direct, segment), via["values"][segment], noise=noise.get(segment, 0.0)
        ).to_dict()
        for segment in SEGMENTS
        if _values(direct, segment)
    ]  # fmt: skip


def judge(
    rounds: dict[str, list[dict[str, Any]]], via: dict[str, Any] | None, noise: dict[str, float],
    found: Replicas,
) -> dict[str, Any]:  # fmt: skip
    """Per replica: its round, whether it is slow and why; the balancer's share; the causes."""
    listed: list[dict[str, Any]] = []
    causes: set[str] = set()
    for url, results in rounds.items():
        slower = _slower(url, rounds, noise)
        cause, why, why_texts = _cause(results) if slower else (None, None, None)
        result = results[0]
        if cause is not None:
            causes.add(cause)
        listed.append({
            "url": url, "error": result.get("error"), "steady": result.get("steady"),
            "server": result.get("server"),
            "repeat": {k: results[-1].get(k) for k in ("error", "steady", "server")},
            "slower": slower, "cause": cause, "why": why, "why_texts": why_texts,
        })  # fmt: skip
    slow = [r for r in listed if r["cause"] is not None]
    look_at = max(slow, key=lambda r: len(r["slower"]), default=None)
    balance = _balance(via, {r["url"] for r in slow}, found) if via else None
    for key, cause in (("sticky", "balancer_sticky"), ("unbalanced", "balancer_unbalanced")):
        if balance and balance[key]:
            causes.add(cause)
    judged = {
        "replicas": listed,
        "slow": [r["url"] for r in slow],
        "look_at": None if look_at is None
        else {"url": look_at["url"], "cause": look_at["cause"], "why": look_at["why"]},
        "balancer_round": None if via is None else {
            "url": via.get("url"), "error": via.get("error"), "steady": via.get("steady"),
            "against_direct": _against_direct(via, rounds, noise), **(balance or {}),
        },
        "causes": sorted(causes),
    }  # fmt: skip
    # Each cause's evidence in every language, from one sentence each (replica_words): a finding
    # quotes it in its own (LAT074-LAT078); ``evidence`` keeps the English, as scripts read it.
    said = evidence_texts(judged)
    for key, cause in (("sticky", "balancer_sticky"), ("unbalanced", "balancer_unbalanced")):
        if balance and balance[key]:
            balance[key]["text"] = said[cause]["en"]
    return {
        **judged,
        "evidence": {cause: said[cause]["en"] for cause in said},
        "evidence_texts": said,
    }
