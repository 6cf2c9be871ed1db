"""Probes over a fleet of replicas (this module: ``fleet``, through Prometheus), their history and
judgements, where the replicas are. May load the HTTP probes and readers, measure, record and
i18n; never ui, report, walk or cli.

Probe ``fleet``: every vLLM replica over the incident window, read through Prometheus.

One instant query per family, evaluated at one moment (Prometheus' own clock), grouped by
``job`` and ``instance``: counters through ``increase()`` over the window (a lifetime counter
says nothing about now: an idle server that preempted yesterday is not preempting), gauges
through ``avg_over_time``/``max_over_time``/``stddev_over_time``, histograms as per-bucket
increases from which each percentile is quoted with its bucket (``wizard.measure.bucket_quantile``).
Both metric generations are read (``wizard.probes.readers.metrics``' names); a replica exposing both
ITL names (vLLM 0.11's deprecation period) is read under the current one. ``fleet_judgement``
then says which replicas differ from the rest and which one the walk should look at.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import httpx

from wizard.errors import UsageError, WizardError
from wizard.measure import outliers
from wizard.measure.bucket_quantile import quantile_bounds
from wizard.numbers import parse_float
from wizard.probes.fleet import fleet_judgement
from wizard.probes.fleet.prometheus_api import PrometheusClient, Sample, Target
from wizard.probes.http.lean_http import tls_context
from wizard.probes.readers.metrics import ITL, KV_USAGE

# Prometheus' duration syntax, one unit (what an on-call engineer types: 5m, 30s, 1h).
WINDOW = re.compile(r"[1-9][0-9]{0,5}(ms|s|m|h|d|w)")
HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "ttft": ("vllm:time_to_first_token_seconds",),
    "itl": ITL,
    "queue": ("vllm:request_queue_time_seconds",),
}
QUANTILES = (0.5, 0.95)
Key = tuple[str, str]  # (job, instance)


@dataclass(frozen=True)
class FleetQuery:
    """Which Prometheus, over which window, for which scrape job (None: every job)."""

    prometheus: str
    window: str = "5m"
    job: str | None = None

    def __post_init__(self) -> None:
        if not self.prometheus.startswith(("http://", "https://")):
            raise UsageError(f"--prometheus must be an http(s) URL, got {self.prometheus!r}")
        if WINDOW.fullmatch(self.window) is None:
            raise UsageError(
                f"--window must be a Prometheus duration like 5m or 30s, got {self.window!r}"
            )

    def selector(self) -> str:
        """The label matchers every query carries."""
        if self.job is None:
            return ""
        escaped = self.job.replace("\\", "\\\\").replace('"', '\\"')
        return f'job="{escaped}"'


def queries(query: FleetQuery) -> dict[str, str]:
    """Every PromQL expression the fleet step evaluates, by the name its result is kept under."""
    sel, window = query.selector(), query.window

    def over(func: str, name: str, agg: str = "sum") -> str:
        return f"{agg} by (job, instance) ({func}({name}{{{sel}}}[{window}]))"

    exprs = {
        "requests": over("increase", "vllm:request_success_total"),
        "preemptions": over("increase", "vllm:num_preemptions_total"),
        "waiting_avg": over("avg_over_time", "vllm:num_requests_waiting"),
        "waiting_max": over("max_over_time", "vllm:num_requests_waiting"),
        "waiting_sd": over("stddev_over_time", "vllm:num_requests_waiting"),
        "running_avg": over("avg_over_time", "vllm:num_requests_running"),
    }
    for name in KV_USAGE:
        exprs[f"kv_peak:{name}"] = over("max_over_time", name, "max")
        exprs[f"kv_sd:{name}"] = over("stddev_over_time", name, "max")
    for family in HISTOGRAMS.values():
        for name in family:
            exprs[f"buckets:{name}"] = (
                f"sum by (job, instance, le) (increase({name}_bucket{{{sel}}}[{window}]))"
            )
            exprs[f"sum:{name}"] = over("increase", f"{name}_sum")
    return exprs


async def read_fleet(client: httpx.AsyncClient, query: FleetQuery) -> dict[str, Any]:
    """Query Prometheus and judge the fleet; WizardError when Prometheus cannot be read."""
    prom = PrometheusClient(client, query.prometheus)
    # Every query at one moment of Prometheus' own clock (the wizard's may be skewed from it).
    clock = await prom.query("vector(time())")
    at = clock[0].value if clock else None
    exprs = queries(query)
    answers = await asyncio.gather(*(prom.query(e, at) for e in exprs.values()), prom.targets())
    targets: list[Target] = answers[-1]  # type: ignore[assignment]
    results: dict[str, list[Sample]] = dict(zip(exprs, answers[:-1], strict=True))  # type: ignore[arg-type]
    replicas = _replicas(results, targets, query)
    report = {
        "available": True,
        "prometheus": query.prometheus,
        "window": query.window,
        "job": query.job,
        "evaluated_at": at,
        "queries": len(exprs) + 2,
        "replica_count": len(replicas),
        "targets_down": _down(targets, query),
        "fleet": _whole_fleet(results),
    }
    report.update(fleet_judgement.judge(replicas))
    if not replicas:
        report["note"] = (
            f"no vllm:* series in Prometheus over the last {query.window}"
            + (f" for job {query.job!r}" if query.job else "")
            + ": is it scraping the replicas (and are they run without --disable-log-stats)?"
        )
    return report


def _down(targets: list[Target], query: FleetQuery) -> list[str]:
    return sorted(t.instance for t in targets if t.health != "up" and query.job in (None, t.job))


def _by_key(samples: list[Sample]) -> dict[Key, float]:
    return {
        (s.labels.get("job", ""), s.labels.get("instance", "")): s.value
        for s in samples
        if s.value is not None
    }


def _buckets(samples: list[Sample]) -> dict[Key, dict[float, float]]:
    found: dict[Key, dict[float, float]] = defaultdict(dict)
    for s in samples:
        le = s.labels.get("le")
        bound = math.inf if le == "+Inf" else parse_float(le)
        if bound is not None and s.value is not None:
            found[(s.labels.get("job", ""), s.labels.get("instance", ""))][bound] = s.value
    return found


def _histogram(cumulative: dict[float, float] | None, total_s: float | None) -> dict[str, Any]:
    """Observations, mean and the percentiles with their buckets, of one window's increases."""
    if not cumulative:
        return {"observations": 0.0, "mean_ms": None}
    count = cumulative.get(math.inf, 0.0)
    shown: dict[str, Any] = {
        "observations": count,
        "mean_ms": total_s / count * 1000 if total_s is not None and count > 0 else None,
    }
    for q in QUANTILES:
        bounds = quantile_bounds(cumulative, q)
        shown[f"p{q * 100:g}"] = bounds.to_dict() if bounds else None
    shown["p95_span"] = _sampling_span(cumulative, 0.95, count)
    return shown


Raw = tuple[dict[float, float], float | None]  # cumulative bucket increases, increase of _sum


def _sampling_span(
    cumulative: dict[float, float], quantile: float, count: float
) -> dict[str, float | None] | None:
    """The buckets the quantile may lie in given how few observations it rests on.

    The q-th observation of N is itself a sample: its rank varies by sqrt(N q (1 - q)) (the
    binomial order statistic), so over ROBUST_SDS of that the p95 of 100 requests may be anything
    from their p88 to their maximum. Two replicas differ in a percentile only when these spans do
    not meet.
    """
    if count <= 0:
        return None
    margin = outliers.ROBUST_SDS * math.sqrt(quantile * (1 - quantile) / count)
    low = quantile_bounds(cumulative, max(quantile - margin, 0.0))
    high = quantile_bounds(cumulative, min(quantile + margin, 1.0))
    if low is None or high is None:
        return None
    return {
        "low_ms": low.low_s * 1000,
        "high_ms": None if math.isinf(high.high_s) else high.high_s * 1000,
    }


def _family(results: dict[str, list[Sample]], names: tuple[str, ...]) -> dict[Key, Raw]:
    # The first name a replica exposes wins (the current name before the deprecated one).
    chosen: dict[Key, Raw] = {}
    for name in names:
        sums = _by_key(results[f"sum:{name}"])
        for key, cumulative in _buckets(results[f"buckets:{name}"]).items():
            chosen.setdefault(key, (cumulative, sums.get(key)))
    return chosen


def _first_of(
    results: dict[str, list[Sample]], prefix: str, names: tuple[str, ...]
) -> dict[Key, float]:
    chosen: dict[Key, float] = {}
    for name in names:
        for key, value in _by_key(results[f"{prefix}:{name}"]).items():
            chosen.setdefault(key, value)
    return chosen


def _replicas(
    results: dict[str, list[Sample]], targets: list[Target], query: FleetQuery
) -> dict[Key, dict[str, Any]]:
    plain = {name: _by_key(results[name]) for name in
             ("requests", "preemptions", "waiting_avg", "waiting_max", "waiting_sd", "running_avg")}  # fmt: skip
    kv_peak = _first_of(results, "kv_peak", KV_USAGE)
    kv_sd = _first_of(results, "kv_sd", KV_USAGE)
    histograms = {
        family: {key: _histogram(*raw) for key, raw in _family(results, names).items()}
        for family, names in HISTOGRAMS.items()
    }
    urls = {(t.job, t.instance): t for t in targets}
    keys = set(plain["running_avg"]) | set(plain["requests"]) | set(kv_peak)
    total_requests = sum(plain["requests"].values())
    replicas = {}
    for key in sorted(keys):
        target = urls.get(key)
        requests = plain["requests"].get(key, 0.0)
        ttft, queue = histograms["ttft"].get(key, {}), histograms["queue"].get(key, {})
        replicas[key] = {
            "instance": key[1],
            "job": key[0],
            "url": target.base_url if target else None,
            "health": target.health if target else "unknown",
            "requests": requests,
            "request_share": requests / total_requests if total_requests > 0 else None,
            "waiting_avg": plain["waiting_avg"].get(key),
            "waiting_max": plain["waiting_max"].get(key),
            "waiting_sd": plain["waiting_sd"].get(key),
            "running_avg": plain["running_avg"].get(key),
            "preemptions": plain["preemptions"].get(key),
            "kv_peak": kv_peak.get(key),
            "kv_sd": kv_sd.get(key),
            "ttft": ttft,
            "itl": histograms["itl"].get(key, {}),
            "queue": queue,
            "queue_share_of_ttft": _share(queue.get("mean_ms"), ttft.get("mean_ms")),
        }
    return replicas


def _share(part: float | None, whole: float | None) -> float | None:
    return part / whole if part is not None and whole else None


def _whole_fleet(results: dict[str, list[Sample]]) -> dict[str, Any]:
    """The fleet as one server: every replica's bucket increases added up, bound by bound."""
    fleet: dict[str, Any] = {"requests": sum(_by_key(results["requests"]).values())}
    for family, names in HISTOGRAMS.items():
        added: dict[float, float] = defaultdict(float)
        total: float | None = 0.0
        for cumulative, replica_sum in _family(results, names).values():
            for bound, count in cumulative.items():
                added[bound] += count
            total = None if total is None or replica_sum is None else total + replica_sum
        fleet[family] = _histogram(dict(added), total)
    fleet["queue_share_of_ttft"] = _share(fleet["queue"]["mean_ms"], fleet["ttft"]["mean_ms"])
    return fleet


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: the fleet as read at the start of the run (``run --prometheus``), else now."""
    if ctx.fleet is not None:
        report = dict(ctx.fleet)
    elif ctx.fleet_query is None:
        return {"available": False}
    else:
        async with httpx.AsyncClient(
            verify=tls_context(), timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)
        ) as client:
            try:
                report = await read_fleet(client, ctx.fleet_query)
            except WizardError as exc:
                return {"available": False, "error": str(exc)}
    if report.get("look_at"):
        # Whether this walk measures the replica that differs: if not, its cause stays a cause
        # (nothing the walk measures can show it gone).
        url = report["look_at"]["url"]
        walked = url is not None and url.rstrip("/") == ctx.target.rstrip("/")
        report["look_at"] = {**report["look_at"], "walked": walked}
    return report
