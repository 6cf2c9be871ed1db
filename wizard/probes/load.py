"""Closed-loop load: N identical streams at a fixed concurrency, with a client self-check.

Warm-up requests (the first ``warmup`` to be sent) are the cold ones: they are reported apart from
the steady-state samples and never mixed into the same statistic (P1.2, P7.1). While the load runs,
the client watches itself: event-loop lag and its own CPU use. A saturated client would inflate
every latency it measures, so the result says ``client_saturated`` instead of blaming the server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import psutil

from wizard.measure import Measurement, MeasurementSpec, percentile
from wizard.probes.stream import RequestSpec, StreamSample, measure_stream, stream_report

LAG_PROBE_INTERVAL_S = 0.01
# Sustained lag, not a spike: the p99 is dominated by the burst of connection set-ups at the start.
LAGGING_P90_MS = 5.0
# The client is one asyncio thread: it is the bottleneck only when its own work fills a core.
SATURATED_CPU_FRACTION = 0.9


@dataclass
class ClientHealth:
    """What the client saw of itself during the run."""

    loop_lag_p90_ms: float
    loop_lag_p99_ms: float
    loop_lag_max_ms: float
    cpu_fraction: float  # CPU seconds used per wall second (1.0 = one core busy)

    @property
    def saturated(self) -> bool:
        """True when the client's own work filled its core: it, not the server, set the pace."""
        return self.cpu_fraction > SATURATED_CPU_FRACTION

    @property
    def contended(self) -> bool:
        """True when the client lagged while using little CPU: other processes held the cores.

        That is not the client's fault and lowering its concurrency does nothing about it; on a
        machine that also runs vLLM it is the engine's busy loop (it polls one core).
        """
        return not self.saturated and self.loop_lag_p90_ms > LAGGING_P90_MS

    def to_dict(self) -> dict[str, Any]:
        """JSON shape, with the verdict and its reason."""
        reason = None
        if self.saturated:
            reason = (
                f"the client used {self.cpu_fraction:.0%} of a core (event-loop lag p90 "
                f"{self.loop_lag_p90_ms:.1f} ms): its own work set the pace, its timings overstate "
                "latency"
            )
        elif self.contended:
            reason = (
                f"the client was kept waiting for a CPU (event-loop lag p90 "
                f"{self.loop_lag_p90_ms:.1f} ms at only {self.cpu_fraction:.0%} of a core): other "
                f"processes share this machine's cores; timings may be up to "
                f"{self.loop_lag_p90_ms:.0f} ms high"
            )
        return {
            "loop_lag_p90_ms": self.loop_lag_p90_ms,
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "loop_lag_max_ms": self.loop_lag_max_ms,
            "cpu_fraction": self.cpu_fraction,
            "saturated": self.saturated,
            "contended": self.contended,
            "cause": "client_saturated" if self.saturated else None,
            "reason": reason,
        }


@dataclass
class LoadResult:
    """Samples of a load run: cold (warm-up) and steady apart, plus the client's self-check."""

    warmup: list[StreamSample]
    samples: list[StreamSample]
    concurrency: int
    health: ClientHealth
    wall_s: float

    @property
    def ok_samples(self) -> list[StreamSample]:
        """The steady-state samples that completed without error."""
        return [s for s in self.samples if s.ok]

    def measurement(self, spec: MeasurementSpec) -> Measurement:
        """The steady-state samples as a comparable measurement."""
        ok = self.ok_samples
        return Measurement(
            spec,
            {
                "ttft_ms": [s.ttft_ms for s in ok if s.ttft_ms is not None],
                "tpot_ms": [s.tpot_ms for s in ok if s.tpot_ms is not None],
                "itl_ms": [gap for s in ok for gap in s.itl_ms],
                "e2e_ms": [s.e2e_ms for s in ok if s.e2e_ms is not None],
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The ``probe load --json`` object."""
        ok = self.ok_samples
        tokens = sum(s.output_tokens for s in ok)
        span_ns = (
            max((s.done_ns or s.send_ns) for s in ok) - min(s.send_ns for s in ok) if ok else 0
        )
        return {
            "concurrency": self.concurrency,
            "wall_s": self.wall_s,
            "output_tokens_per_s": tokens / (span_ns / 1e9) if span_ns else None,
            "steady": stream_report(self.samples),
            "cold": stream_report(self.warmup) if self.warmup else None,
            "client": self.health.to_dict(),
        }


@dataclass
class Progress:
    """Handed to the progress callback after every finished request."""

    done: int
    total: int | None
    failed: int
    ttft_ms: list[float] = field(default_factory=list)
    tpot_ms: list[float] = field(default_factory=list)


class _LoopWatch:
    """Samples event-loop lag: how late a short sleep wakes up."""

    def __init__(self) -> None:
        self.lags_ms: list[float] = []

    async def run(self) -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(LAG_PROBE_INTERVAL_S)
            self.lags_ms.append((time.monotonic() - before - LAG_PROBE_INTERVAL_S) * 1000)


async def run_load(
    base_url: str,
    spec: RequestSpec,
    *,
    concurrency: int,
    requests: int | None = None,
    duration_s: float | None = None,
    warmup: int = 0,
    headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
    on_progress: Callable[[Progress], None] | None = None,
    stagger_s: float = 0.0,
) -> LoadResult:
    """Send ``warmup`` requests, then ``requests`` (or for ``duration_s``), ``concurrency`` at a time."""
    if (requests is None) == (duration_s is None):
        raise ValueError("give exactly one of requests or duration_s")
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    samples: list[StreamSample] = []
    issued = 0
    progress = Progress(0, None if requests is None else warmup + requests, 0)
    deadline: float | None = None

    def more() -> bool:
        if issued < warmup:
            return True
        if requests is not None:
            return issued < warmup + requests
        return deadline is None or time.monotonic() < deadline

    async with httpx.AsyncClient(limits=limits, timeout=timeout) as client:

        async def worker(index: int) -> None:
            nonlocal issued, deadline
            # Identical requests started together stay in lock-step (all prefill, then all
            # decode); staggering the workers makes new prompts arrive while others decode.
            await asyncio.sleep(index * stagger_s)
            while more():
                issued += 1
                if issued == warmup + 1 and duration_s is not None and deadline is None:
                    deadline = time.monotonic() + duration_s
                sample = await measure_stream(client, base_url, spec, headers)
                samples.append(sample)
                if on_progress is not None:
                    _advance(progress, sample)
                    on_progress(progress)

        watch = _LoopWatch()
        watcher = asyncio.create_task(watch.run())
        process = psutil.Process()
        cpu_before = sum(process.cpu_times()[:2])
        began = time.monotonic()
        try:
            await asyncio.gather(*(worker(i) for i in range(concurrency)))
        finally:
            watcher.cancel()
        wall = time.monotonic() - began
        cpu = sum(process.cpu_times()[:2]) - cpu_before
    samples.sort(key=lambda s: s.send_ns)
    health = ClientHealth(
        loop_lag_p90_ms=percentile(watch.lags_ms, 90) or 0.0,
        loop_lag_p99_ms=percentile(watch.lags_ms, 99) or 0.0,
        loop_lag_max_ms=max(watch.lags_ms, default=0.0),
        cpu_fraction=cpu / wall if wall else 0.0,
    )
    return LoadResult(samples[:warmup], samples[warmup:], concurrency, health, wall)


def _advance(progress: Progress, sample: StreamSample) -> None:
    progress.done += 1
    if not sample.ok:
        progress.failed += 1
    if sample.ttft_ms is not None:
        progress.ttft_ms.append(sample.ttft_ms)
    if sample.tpot_ms is not None:
        progress.tpot_ms.append(sample.tpot_ms)
