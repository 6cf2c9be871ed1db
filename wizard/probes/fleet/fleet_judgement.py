"""Which replicas of a fleet differ from the rest, why, and which one the walk should look at.

Every signal is judged by ``wizard.measure.outliers`` against the other replicas, with the signal's own
resolution as the smallest spread: a count over the window (requests, preemptions) has Poisson
noise (its square root), a gauge (waiting requests, KV usage) the fluctuation the other replicas
show over the window (``stddev_over_time``; the waiting gauge never less than one request), a
histogram percentile its buckets and its sample size: a replica's p95 differs only when the lowest
bucket it may lie in, given how many requests it rests on, is above the highest the others' may
(interpolating inside a bucket is no evidence, nor is the p95 of a dozen requests). A difference becomes a cause with the same bars as the single-server walk: any
preemption that stands out is the KV cache (LAT010's evidence); queueing that stands out with
most of the TTFT spent in the queue is saturation (LAT013's ``queue_share_of_ttft`` >= 0.5).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from wizard.i18n.fleet_words import signal_value, why_texts
from wizard.measure import outliers

QUEUE_SHARE_OF_TTFT = 0.5  # "most of the TTFT": the playbook's LAT013 bar
PERCENTILE = "p95"
Key = tuple[str, str]


# signal; what sets its resolution (None: a count, Poisson; else the stddev_over_time of the
# gauge) and the least it may be (the waiting gauge counts whole requests); both directions (a
# replica that gets no traffic differs as much as one that gets it all)
PLAIN_SIGNALS = (
    ("requests", None, 1.0, True),
    ("preemptions", None, 1.0, False),
    ("waiting_avg", "waiting_sd", 1.0, False),
    ("kv_peak", "kv_sd", 0.0, False),
)


def _resolution(
    others: list[dict[str, Any]], signal: str, fluctuation: str | None, least: float
) -> float:
    if fluctuation is None:
        # Poisson: a count around N varies by sqrt(N) by chance alone.
        return max(math.sqrt(statistics.median(r[signal] for r in others)), least)
    return max(statistics.median(r[fluctuation] or 0.0 for r in others), least)


def _plain_differences(replica: dict[str, Any], rest: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for signal, fluctuation, least, both_ways in PLAIN_SIGNALS:
        others = [r for r in rest if r[signal] is not None]
        value = replica[signal]
        if value is None or not others:
            continue
        values = [r[signal] for r in others]
        way = outliers.direction(
            value, values, _resolution(others, signal, fluctuation, least), both_ways
        )
        if way is not None:
            centre = statistics.median(values)
            found.append({
                "signal": signal, "direction": way, "value": value, "others_median": centre,
                "text": f"{signal} {signal_value(signal, value)} ({way}; the other replicas' "
                f"median {signal_value(signal, centre)})",
            })  # fmt: skip
    return found


def _percentile_differences(
    replica: dict[str, Any], rest: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    found = []
    for family in ("ttft", "itl", "queue"):
        mine = replica[family].get("p95_span")
        theirs = [r[family]["p95_span"] for r in rest if r[family].get("p95_span")]
        if not mine or not theirs:
            continue
        # Its lowest possible bucket lies above the others' typical highest one.
        typical_high = statistics.median(
            math.inf if t["high_ms"] is None else t["high_ms"] for t in theirs
        )
        if mine["low_ms"] >= typical_high:
            quoted = replica[family][PERCENTILE]
            others = [r[family][PERCENTILE] for r in rest if r[family].get(PERCENTILE)]
            centre = statistics.median(o["interpolated_ms"] for o in others)
            typical = min(others, key=lambda o: abs(o["interpolated_ms"] - centre))
            found.append({
                "signal": f"{family}_{PERCENTILE}", "direction": "high",
                "value": quoted, "others_median": typical,
                "text": f"{family} {quoted['text']} (the other replicas: {typical['text']})",
            })  # fmt: skip
    return found


def _causes(replica: dict[str, Any], differences: list[dict[str, Any]]) -> list[str]:
    signals = {d["signal"] for d in differences if d["direction"] == "high"}
    if "preemptions" in signals:
        return ["kv_cache_preemption"]  # preempted requests wait too: not plain saturation
    queueing = signals & {"queue_p95", "ttft_p95", "waiting_avg"}
    share = replica["queue_share_of_ttft"]
    if queueing and share is not None and share >= QUEUE_SHARE_OF_TTFT:
        return ["queue_saturation"]
    return []


def judge(replicas: dict[Key, dict[str, Any]]) -> dict[str, Any]:
    """Differences and causes per replica, the replicas that differ, and the one to look at."""
    listed = []
    for key, replica in replicas.items():
        rest = [r for k, r in replicas.items() if k != key]
        differences = _plain_differences(replica, rest) + _percentile_differences(replica, rest)
        listed.append({**replica, "differs": differences, "causes": _causes(replica, differences)})
    differing = [r for r in listed if r["differs"]]

    def rank(r: dict[str, Any]) -> tuple[int, int, float]:
        p95 = r["ttft"].get(PERCENTILE) or {}
        return (len(r["causes"]), len(r["differs"]), p95.get("interpolated_ms") or 0.0)

    look_at = None
    if differing:
        chosen = max(differing, key=rank)
        look_at = {
            "instance": chosen["instance"], "job": chosen["job"], "url": chosen["url"],
            "causes": chosen["causes"],
            "why": "; ".join(d["text"] for d in chosen["differs"]),
            # The same in every language (LAT072/LAT073 quote it in the walk's).
            "why_texts": why_texts(chosen["differs"]),
        }  # fmt: skip
    return {
        "replicas": listed,
        "differing": [r["instance"] for r in differing],
        "look_at": look_at,
        "causes": sorted({c for r in listed for c in r["causes"]}),
    }
