"""Closed-loop load: N identical streams at a fixed concurrency, warm-up kept apart."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import httpx

from wizard.probes.stream import RequestSpec, StreamSample, measure_stream


@dataclass
class LoadResult:
    """Samples of a load run, warm-up separated from the measured requests."""

    warmup: list[StreamSample]
    samples: list[StreamSample]
    concurrency: int

    @property
    def ok_samples(self) -> list[StreamSample]:
        """The measured samples that completed without error."""
        return [s for s in self.samples if s.ok]


async def run_load(
    base_url: str,
    spec: RequestSpec,
    *,
    concurrency: int,
    requests: int,
    warmup: int = 0,
    headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> LoadResult:
    """Send ``warmup`` + ``requests`` streams, ``concurrency`` at a time (closed loop)."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    samples: list[StreamSample] = []
    issued = 0
    total = warmup + requests

    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:

        async def worker() -> None:
            nonlocal issued
            while issued < total:
                issued += 1
                samples.append(await measure_stream(client, base_url, spec, headers))

        await asyncio.gather(*(worker() for _ in range(min(concurrency, total))))
    samples.sort(key=lambda s: s.send_ns)
    return LoadResult(samples[:warmup], samples[warmup:], concurrency)
