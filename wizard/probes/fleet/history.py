"""What changed when: every replica's latency series over the window, read from Prometheus.

Raw counters are read with one range query each (a point per scrape-sized step) and differenced
here, step by step: a step's TTFT is the mean of the requests whose first token came in it
(its ``_sum`` increase over its ``_count`` increase), so an onset is placed within one step, not
smeared over a ``rate()`` window. A counter that went down is a restarted process counting from
zero again. Each series is split where its level changed (``wizard.measure.changepoint``), and the
split is lined up with what happened to the replicas at that moment: a process start
(``process_start_time_seconds`` changes; its value is the start itself), a new
``vllm:cache_config_info`` label set (which label changed, from what to what), a replica that
appeared or vanished (``up``). Percentiles before and after are quoted as their bucket.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import httpx

from wizard.measure.bucket_quantile import quantile_bounds
from wizard.measure.changepoint import best_split
from wizard.numbers import parse_float
from wizard.probes.fleet import FleetQuery
from wizard.probes.fleet.prometheus_api import PrometheusClient, Series
from wizard.probes.readers.metrics import ITL

Key = tuple[str, str]  # (job, instance)
# Latency histograms: their per-step mean (ms) is the series; their buckets give the p50.
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ITL,
    "queue": ("vllm:request_queue_time_seconds",),
}
COUNTERS = {
    "preemptions": "vllm:num_preemptions_total",
    "prefix_queries": "vllm:prefix_cache_queries_total",
    "prefix_hits": "vllm:prefix_cache_hits_total",
}
# Labels of cache_config_info that say nothing about the configuration.
IDENTITY_LABELS = frozenset({"__name__", "job", "instance", "engine", "model_name"})
# At most this many steps a range query asks for (Prometheus refuses above 11,000 points).
MAX_STEPS = 1000


@dataclass(frozen=True)
class Window:
    """The range read: from ``start`` to ``end`` (Prometheus' clock, unix seconds) by ``step_s``."""

    start: float
    end: float
    step_s: float


def window_seconds(text: str) -> float:
    """A Prometheus duration (already checked by FleetQuery) in seconds."""
    units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
    unit = "ms" if text.endswith("ms") else text[-1]
    return float(text.removesuffix(unit)) * units[unit]


async def read_history(client: httpx.AsyncClient, query: FleetQuery) -> dict[str, Any]:
    """Every replica's changes over the window and the events they line up with."""
    prom = PrometheusClient(client, query.prometheus)
    clock = await prom.query("vector(time())")
    end = clock[0].value if clock and clock[0].value is not None else None
    targets = await prom.targets()
    if end is None:
        end = 0.0
    length = window_seconds(query.window)
    interval = min((t.scrape_interval_s for t in targets if t.scrape_interval_s), default=None)
    # A step of one scrape interval places an onset within one scrape; never more steps than
    # Prometheus answers for.
    step = max(interval or 1.0, length / MAX_STEPS)
    window = Window(end - length, end, step)
    sel = query.selector()
    exprs: dict[str, str] = {
        "start_time": f"max by (job, instance) (process_start_time_seconds{{{sel}}})",
        "up": f"max by (job, instance) (up{{{sel}}})",
        "waiting": f"sum by (job, instance) (vllm:num_requests_waiting{{{sel}}})",
        "config": f"vllm:cache_config_info{{{sel}}}",
    }
    for name, metric in COUNTERS.items():
        exprs[name] = f"sum by (job, instance) ({metric}{{{sel}}})"
    for signal, family in HISTOGRAMS.items():
        for metric in family:
            exprs[f"{signal}:sum:{metric}"] = f"sum by (job, instance) ({metric}_sum{{{sel}}})"
            exprs[f"{signal}:count:{metric}"] = f"sum by (job, instance) ({metric}_count{{{sel}}})"
            exprs[f"{signal}:bucket:{metric}"] = (
                f"sum by (job, instance, le) ({metric}_bucket{{{sel}}})"
            )
    answers = await asyncio.gather(
        *(prom.query_range(e, window.start, window.end, window.step_s) for e in exprs.values())
    )
    results = dict(zip(exprs, answers, strict=True))
    events = _events(results, window)
    changes = _changes(results, window, events)
    return {
        "available": True,
        "prometheus": query.prometheus,
        "window": query.window,
        "job": query.job,
        "start": window.start,
        "end": window.end,
        "step_s": window.step_s,
        "replicas": sorted({instance for _, instance in _keys(results)}),
        "events": events,
        "changes": changes,
    }


def _key(series: Series) -> Key:
    return series.labels.get("job", ""), series.labels.get("instance", "")


def _keys(results: dict[str, list[Series]]) -> set[Key]:
    return {_key(s) for name in ("up", "start_time") for s in results.get(name, [])}


def _by_key(series: list[Series]) -> dict[Key, list[tuple[float, float]]]:
    return {_key(s): s.points for s in series}


def steps(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A counter's increase at each point after the first: (time, increase). A point below the
    one before is a restart counting from zero (its value is the increase)."""
    out = []
    for (_, before), (at, value) in itertools.pairwise(points):
        out.append((at, value if value < before else value - before))
    return out


def _family(results: dict[str, list[Series]], signal: str, part: str) -> list[Series]:
    """The first metric name of ``signal`` that has series (both generations' ITL names)."""
    for metric in HISTOGRAMS[signal]:
        found = results.get(f"{signal}:{part}:{metric}") or []
        if found:
            return found
    return []


def _mean_series(
    sums: list[tuple[float, float]], counts: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Per step: the mean (ms) of the observations that step added."""
    by_time = dict(steps(counts))
    out = []
    for at, total in steps(sums):
        count = by_time.get(at)
        if count and count > 0:
            out.append((at, total / count * 1000))
    return out


def _ratio_series(
    hits: list[tuple[float, float]], queries: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    by_time = dict(steps(queries))
    return [(at, h / by_time[at]) for at, h in steps(hits) if by_time.get(at)]


def signals(results: dict[str, list[Series]]) -> dict[Key, dict[str, list[tuple[float, float]]]]:
    """Every replica's series, one point per step: TTFT/ITL/queue means (ms), waiting requests,
    preemptions per step, prefix-cache hit rate (0..1)."""
    found: dict[Key, dict[str, list[tuple[float, float]]]] = defaultdict(dict)
    for signal in HISTOGRAMS:
        counts = _by_key(_family(results, signal, "count"))
        for key, sums in _by_key(_family(results, signal, "sum")).items():
            found[key][signal] = _mean_series(sums, counts.get(key, []))
    for key, points in _by_key(results.get("waiting", [])).items():
        found[key]["waiting"] = points
    for key, points in _by_key(results.get("preemptions", [])).items():
        found[key]["preemptions"] = steps(points)
    queries = _by_key(results.get("prefix_queries", []))
    for key, hits in _by_key(results.get("prefix_hits", [])).items():
        found[key]["prefix_hit_rate"] = _ratio_series(hits, queries.get(key, []))
    return found


def transform(signal: str, value: float) -> float:
    """The scale a level change is judged on: a ratio for times (ms) and counts (log(1 + x),
    defined at zero: a queue of 0 -> 10 is a change, 0.2 -> 0.4 ms is not one worth a page), the
    fraction itself for the hit rate (bounded, already a ratio)."""
    return value if signal == "prefix_hit_rate" else math.log1p(max(value, 0.0))


def _events(results: dict[str, list[Series]], window: Window) -> list[dict[str, Any]]:
    """Process starts, configuration changes, replicas appearing or vanishing, by time."""
    events: list[dict[str, Any]] = []
    for key, points in _by_key(results.get("start_time", [])).items():
        for (_, before), (at, value) in itertools.pairwise(points):
            if value != before:
                # The series' value is the new process's own start (unix seconds); ``back_at`` is
                # the first scrape it answered, after its start-up (minutes for a real vLLM).
                restart = _event("restart", key, value if value <= at else at)
                events.append({**restart, "back_at": at})
    # A replica appeared (vanished) when the rest of the fleet was scraped before (after) it:
    # judged against the fleet, not the window, whose start may precede Prometheus itself.
    up = {key: points for key, points in _by_key(results.get("up", [])).items() if points}
    if up:
        first_seen = min(points[0][0] for points in up.values())
        last_seen = max(points[-1][0] for points in up.values())
        for key, points in up.items():
            if points[0][0] > first_seen + 2 * window.step_s:
                events.append(_event("appeared", key, points[0][0]))
            if points[-1][0] < last_seen - 2 * window.step_s:
                events.append(_event("vanished", key, points[-1][0]))
    configs: dict[Key, list[Series]] = defaultdict(list)
    for series in results.get("config", []):
        if series.points:
            configs[_key(series)].append(series)
    for key, label_sets in configs.items():
        label_sets.sort(key=lambda s: s.points[0][0])
        for old, new in itertools.pairwise(label_sets):
            changed = {
                name: {"before": old.labels.get(name), "after": new.labels.get(name)}
                for name in sorted(set(old.labels) | set(new.labels))
                if name not in IDENTITY_LABELS and old.labels.get(name) != new.labels.get(name)
            }
            if changed:
                events.append(
                    {**_event("config_change", key, new.points[0][0]), "changed": changed}
                )
    events.sort(key=lambda e: (e["at"], e["kind"]))
    _attach_config(events)
    return events


def _event(kind: str, key: Key, at: float) -> dict[str, Any]:
    return {"kind": kind, "job": key[0], "instance": key[1], "at": at}


def _attach_config(events: list[dict[str, Any]]) -> None:
    """A restart takes the configuration change its new process reported (the same replica's
    next config_change within its first scrapes), so one line says both."""
    for event in events:
        if event["kind"] != "restart":
            continue
        later = [e for e in events if e["kind"] == "config_change"
                 and e["instance"] == event["instance"] and e["at"] >= event["at"]]  # fmt: skip
        if later:
            event["changed"] = later[0]["changed"]


def _changes(
    results: dict[str, list[Series]], window: Window, events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    found = []
    buckets = {signal: _bucket_steps(_family(results, signal, "bucket")) for signal in HISTOGRAMS}
    for key, by_signal in signals(results).items():
        for signal, points in by_signal.items():
            split = best_split([transform(signal, v) for _, v in points])
            if split is None:
                continue
            before = [v for _, v in points[: split.index]]
            after = [v for _, v in points[split.index :]]
            last_before, onset = points[split.index - 1][0], points[split.index][0]
            change: dict[str, Any] = {
                "job": key[0], "instance": key[1], "signal": signal,
                "direction": "rose" if split.after > split.before else "fell",
                "before": _median(before), "after": _median(after),
                "unit": {"prefix_hit_rate": "fraction", "waiting": "requests",
                         "preemptions": "per_step"}.get(signal, "ms"),
                "at": onset, "after_point": last_before, "resolution_s": window.step_s,
                "points": len(points),
            }  # fmt: skip
            if signal in buckets:
                per_step = buckets[signal].get(key, {})
                change["p50_before"] = _p50(per_step, float("-inf"), last_before)
                change["p50_after"] = _p50(per_step, last_before, float("inf"))
            change["event"] = _lined_up(events, last_before, onset, window.step_s)
            found.append(change)
    found.sort(key=lambda c: (c["at"], c["instance"], c["signal"]))
    return found


def _lined_up(
    events: list[dict[str, Any]], last_before: float, onset: float, step_s: float
) -> dict[str, Any] | None:
    """The event the onset follows: the last one seen between the last point of the old level
    and the onset (a scrape's step of slack on either side), else None. A restart is seen when
    the new process first answers a scrape (``back_at``), not when it started: a new level
    cannot begin before the replica serves again."""

    def seen(event: dict[str, Any]) -> float:
        return float(event.get("back_at", event["at"]))

    near = [e for e in events if last_before - step_s <= seen(e) <= onset + step_s
            and e["kind"] != "config_change"]  # fmt: skip
    near = near or [e for e in events if last_before - step_s <= seen(e) <= onset + step_s]
    if not near:
        return None
    event = max(near, key=seen)
    return {**event, "seconds_before_onset": onset - event["at"]}


def _bucket_steps(series: list[Series]) -> dict[Key, dict[float, list[tuple[float, float]]]]:
    """Per replica and bucket bound: the bucket's increase at each step."""
    found: dict[Key, dict[float, list[tuple[float, float]]]] = defaultdict(dict)
    for s in series:
        le = s.labels.get("le")
        bound = math.inf if le == "+Inf" else parse_float(le)
        if bound is not None:
            found[_key(s)][bound] = steps(s.points)
    return found


def _p50(
    per_bound: dict[float, list[tuple[float, float]]], after: float, until: float
) -> dict[str, Any] | None:
    """The median's bucket over the steps in (``after``, ``until``] (their increases added)."""
    totals = {bound: sum(v for at, v in points if after < at <= until)
              for bound, points in per_bound.items()}  # fmt: skip
    bounds = quantile_bounds(totals, 0.5)
    return None if bounds is None else bounds.to_dict()


def _median(values: list[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
