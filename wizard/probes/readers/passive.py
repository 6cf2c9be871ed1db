"""What a server already says, read without sending it a single completion: triage's evidence.

``/health``, ``/version`` and ``/v1/models`` once, then ``/metrics`` several times a few seconds
apart. A lifetime counter says nothing about now (a server that preempted yesterday may be idle
today), so the verdict rests on the deltas between the first and the last scrape (requests,
preemptions, the window's mean TTFT, queue and prefill times) and on the gauges of every scrape
(running, waiting, KV usage): a queue seen in one scrape may be one request between two steps,
one seen in several is a queue. Every request here is a GET: nothing reaches the engine.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from wizard.errors import WizardError
from wizard.probes.http.bounded import BoundedRequestError, fetch
from wizard.probes.http.endpoints import json_field, served_models
from wizard.probes.readers import metrics


async def _get(client: httpx.AsyncClient, url: str, **kwargs: Any) -> tuple[int | None, str]:
    try:
        return await fetch(client, "GET", url, **kwargs)
    except (httpx.HTTPError, BoundedRequestError) as exc:
        return None, f"{type(exc).__name__}: {exc}"[:200]


async def observe(
    client: httpx.AsyncClient,
    base_url: str,
    headers: dict[str, str],
    scrapes: int = 3,
    interval_s: float = 2.0,
) -> dict[str, Any]:
    """The server's own word: endpoints once, ``/metrics`` ``scrapes`` times ``interval_s``
    apart, the window's deltas and every scrape's gauges."""
    base = base_url.rstrip("/")
    health, why = await _get(client, base + "/health")
    found: dict[str, Any] = {
        "reachable": health is not None,
        "health_status": health,
        "error": None if health is not None else why,
        "version": None,
        "models": [],
    }
    if health is None:
        return found
    status, body = await _get(client, base + "/version")
    if status == 200:
        found["version"] = json_field(body, "version")
    try:
        found["models"] = await served_models(client, base, headers)
    except WizardError as exc:
        found["models_error"] = str(exc)
    snapshots: list[metrics.MetricsSnapshot] = []
    try:
        for index in range(scrapes):
            if index:
                await asyncio.sleep(interval_s)
            snapshots.append(await metrics.scrape(client, base))
    except WizardError as exc:
        found["metrics_error"] = str(exc)
    found.update(window(snapshots))
    return found


def window(snapshots: list[metrics.MetricsSnapshot]) -> dict[str, Any]:
    """The scrapes as evidence: deltas first to last, each scrape's gauges, the cache's size."""
    if not snapshots:
        return {"scrapes": 0}
    first, last = snapshots[0], snapshots[-1]
    length = (
        last.scraped_at - first.scraped_at
        if last.scraped_at is not None and first.scraped_at is not None
        else None
    )
    return {
        "scrapes": len(snapshots),
        "stats_disabled": last.stats_disabled,
        "generation": last.generation,
        "gauges": {
            "running": [s.running for s in snapshots],
            "waiting": [s.waiting for s in snapshots],
            "kv_cache_usage": [s.kv_cache_usage for s in snapshots],
        },
        "cache": {
            "num_gpu_blocks": last.num_gpu_blocks,
            "block_size": last.block_size,
            "kv_cache_tokens": last.kv_cache_tokens,
            "gpu_memory_utilization": last.gpu_memory_utilization,
            "enable_prefix_caching": last.enable_prefix_caching,
        },
        "delta": metrics.delta(first, last, length) if len(snapshots) > 1 else None,
    }
