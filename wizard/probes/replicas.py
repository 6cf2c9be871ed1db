"""Walk probe ``replicas`` and ``probe replicas``: every replica measured directly, and the
path through the balancer, with one measurement spec.

The replicas are measured one after the other (each round the walk's own ``measure`` round, its
``/metrics`` watched), so no replica's round shares the client with another's. The first replica
is measured again at the end: that A/A pair says how far this fleet's numbers move on their own,
the noise band every replica is judged against. Then the same round goes through the balancer,
and every replica's request counter is read before and after it: how many of those requests each
replica served is the balancer's request share. ``replica_judgement`` says which replica is slow
(and why, from its own server's metrics), and whether the balancer spreads the load.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx

from wizard import measure
from wizard.errors import WizardError
from wizard.probes import measure_probe, replica_judgement, replica_sources
from wizard.probes.endpoints import served_model
from wizard.probes.metrics import scrape

DEFAULTS: dict[str, Any] = {
    "concurrency": 8, "requests": 16, "warmup": 0, "input_tokens": 64, "max_tokens": 32,
}  # fmt: skip


async def measure_replicas(
    ctx: Any, found: replica_sources.Replicas, balancer: str | None, params: dict[str, Any]
) -> dict[str, Any]:
    """Measure every replica and the balancer's path (``balancer`` None: the replicas only)."""
    settings = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    round_params = {**settings, "path": "direct", "endpoint": "completions"}
    async with httpx.AsyncClient(timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)) as client:
        model = ctx.model or await served_model(client, found.urls[0], ctx.headers)
        rounds: dict[str, dict[str, Any]] = {}
        for url in found.urls:
            rounds[url] = await _round(
                replace(ctx, target=url, proxy=None, model=model), round_params
            )
        repeat = await _round(
            replace(ctx, target=found.urls[0], proxy=None, model=model), round_params
        )
        via = None
        if balancer:
            before = {url: await _served(client, url) for url in found.urls}
            via = await _round(
                replace(ctx, target=found.urls[0], proxy=balancer, model=model),
                {**round_params, "path": "proxy"},
            )
            after = {url: await _served(client, url) for url in found.urls}
            via["served"] = {url: _difference(before[url], after[url]) for url in found.urls}
    noise = _noise(rounds[found.urls[0]], repeat)
    report = {
        "available": True,
        "source": found.source,
        "balancer": balancer,
        "upstream": found.upstream,
        "model": model,
        "spec": settings,
        "noise": noise,
        "repeat_of_first": _flat(repeat),
    }
    report.update(replica_judgement.judge(rounds, via, noise, found))
    return report


async def _round(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """One measurement round; a replica that fails it is data, not the end of the probe."""
    try:
        return await measure_probe.probe(ctx, params)
    except WizardError as exc:
        return {"error": str(exc)}


async def _served(client: httpx.AsyncClient, url: str) -> float | None:
    # Requests the replica has answered in its life (its TTFT histogram's count).
    try:
        return (await scrape(client, url)).ttft_s.get("count", 0.0)
    except WizardError:
        return None


def _difference(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def _noise(first: dict[str, Any], repeat: dict[str, Any]) -> dict[str, float]:
    """The A/A band of the first replica measured twice, per segment (empty if either failed)."""
    if "values" not in first or "values" not in repeat:
        return {}
    bands = {
        segment: measure.noise_band(first["values"][segment], repeat["values"][segment])
        for segment in replica_judgement.SEGMENTS
    }
    return {segment: band for segment, band in bands.items() if band is not None}


def _flat(result: dict[str, Any]) -> dict[str, Any] | None:
    return result.get("steady")


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: the replicas known to the run (``--replica``, the nginx upstream in
    ``--nginx-conf``, Prometheus' targets), through ``--proxy``; unavailable with fewer than two."""
    found = replica_sources.known(ctx.replicas, ctx.nginx_conf, ctx.fleet)
    if found is None:
        return {
            "available": False,
            "note": "fewer than two replica URLs known (--replica, an nginx upstream in "
            "--nginx-conf, or Prometheus' targets with --prometheus)",
        }
    return await measure_replicas(ctx, found, ctx.proxy, params)
