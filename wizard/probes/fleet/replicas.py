"""Walk probe ``replicas`` and ``probe replicas``: every replica measured directly, and the
path through the balancer, with one measurement spec.

The replicas are measured one after the other (each round the walk's own ``measure`` round, its
``/metrics`` watched), so no replica's round shares the client with another's. Every replica is
measured twice, the second pass in reverse order (A B C, C B A): pooled, a drift of the
machine's load weighs on all alike, and each replica's pair is an A/A comparison; their median
band is the noise every replica is judged against. Then the same round goes through the balancer,
and every replica's request counter is read before and after it: how many of those requests each
replica served is the balancer's request share. ``replica_judgement`` says which replica is slow
(and why, from its own server's metrics), and whether the balancer spreads the load.
"""

from __future__ import annotations

import statistics
from dataclasses import replace
from typing import Any

import httpx

from wizard import measure
from wizard.errors import WizardError
from wizard.i18n.words import say, texts
from wizard.probes.fleet import replica_judgement, replica_sources
from wizard.probes.http import measure_probe
from wizard.probes.http.endpoints import served_model
from wizard.probes.http.lean_http import tls_context
from wizard.probes.readers.metrics import scrape

DEFAULTS: dict[str, Any] = {
    "concurrency": 8, "requests": 16, "warmup": 0, "input_tokens": 64, "max_tokens": 32,
}  # fmt: skip


async def measure_replicas(
    ctx: Any, found: replica_sources.Replicas, balancer: str | None, params: dict[str, Any]
) -> dict[str, Any]:
    """Measure every replica and the balancer's path (``balancer`` None: the replicas only)."""
    settings = {**DEFAULTS, **{k: v for k, v in params.items() if k in DEFAULTS}}
    round_params = {**settings, "path": "direct", "endpoint": "completions"}
    async with httpx.AsyncClient(
        verify=tls_context(), timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)
    ) as client:
        model = ctx.model or await served_model(client, found.urls[0], ctx.headers)
        # Two passes, the second in reverse order (A B C, C B A): a drift of the machine's load
        # over the step weighs on every replica alike once both rounds are pooled, and each
        # replica's own pair is an A/A comparison, the noise band.
        rounds: dict[str, list[dict[str, Any]]] = {url: [] for url in found.urls}
        for url in [*found.urls, *reversed(found.urls)]:
            rounds[url].append(
                await _round(replace(ctx, target=url, proxy=None, model=model), round_params)
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
    noise = _noise(rounds)
    report = {
        "available": True,
        "source": found.source,
        "balancer": balancer,
        "upstream": found.upstream,
        "model": model,
        "spec": settings,
        "noise": noise,
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


def _noise(rounds: dict[str, list[dict[str, Any]]]) -> dict[str, float]:
    """Per segment, the median of the replicas' A/A bands (each replica measured twice)."""
    bands: dict[str, list[float]] = {segment: [] for segment in replica_judgement.SEGMENTS}
    for first, repeat in rounds.values():
        if "values" not in first or "values" not in repeat:
            continue
        for segment, found in bands.items():
            band = measure.noise_band(first["values"][segment], repeat["values"][segment])
            if band is not None:
                found.append(band)
    return {segment: statistics.median(found) for segment, found in bands.items() if found}


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: the replicas known to the run (``--replica``, the nginx upstream in
    ``--nginx-conf``, Prometheus' targets), through ``--proxy``; unavailable with fewer than two."""
    found = replica_sources.known(ctx.replicas, ctx.nginx_conf, ctx.fleet)
    if found is None:
        return {"available": False, "note": say("replicas.too_few", "en"),
                "note_texts": texts("replicas.too_few")}  # fmt: skip
    return await measure_replicas(ctx, found, ctx.proxy, params)
