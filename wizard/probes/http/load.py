"""Closed-loop load: N identical streams at a fixed concurrency, with a client self-check.

Each worker owns one connection (its own pool of one): a request never waits for a connection it
does not need, which a shared pool makes it do at 8 streams and up (encode/httpcore#822: queued
requests are handed the same idle connection; the losers wait 0.65-1 s at 64 streams).

Cold samples are each worker's first request (it opens the worker's connection) and the first
``warmup`` requests sent; they are reported apart from the steady-state samples and never mixed
into the same statistic (P1.2, P7.1). ``requests`` counts steady samples. While the load runs, the
client watches itself: event-loop lag, its own CPU use, and how long its requests waited before
they were written out. A saturated client would inflate every latency it measures, so the result
says ``client_saturated`` instead of blaming the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil

from wizard.i18n.words import texts
from wizard.measure import ITL_PER_REQUEST, Measurement, MeasurementSpec, percentile
from wizard.probes.http.lean_http import timing_client, tls_context
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, measure_stream, prepare, stream_report

LAG_PROBE_INTERVAL_S = 0.01
# Sustained lag, not a spike: the p99 is dominated by the burst of connection set-ups at the start.
LAGGING_P90_MS = 5.0
# The client is one asyncio thread: it is the bottleneck only when its own work fills a core.
SATURATED_CPU_FRACTION = 0.9
# Wake-ups measured with nothing in flight, just before the load: the loop's own floor on this
# machine now (the stock loop wakes 1.5 ms late at the median on the reference machine, idle).
# Their median is the floor: of 8 and of 16 it agreed within 0.03 ms (25 trials each, uvloop,
# 2026-12-07), and 8 take 0.08 s of every round instead of 0.16 s.
FLOOR_SAMPLES = 8
SCHEDSTAT = Path("/proc/thread-self/schedstat")
# Warm and alone, a request is written out 0.7-1 ms after it is stamped (1.3-2.5 ms at 2-4 streams
# on the reference machine: anyio's locks and writes yield to the loop, and each yield waits for
# the other streams' events to be handled). A typical request held back longer means the client
# offered less load than asked for, and handles each arriving event as late (its time is the
# bytes' arrival, so TTFT is spared; the closed loop's pace is not).
SEND_DELAY_P50_MS = 5.0


@dataclass
class ClientHealth:
    """What the client saw of itself during the run."""

    loop_lag_p90_ms: float
    loop_lag_p99_ms: float
    loop_lag_max_ms: float
    cpu_fraction: float  # CPU seconds used per wall second (1.0 = one core busy)
    # Steady samples: request start -> pool handed a connection, and -> request written out.
    pool_wait_p99_ms: float = 0.0
    send_delay_p50_ms: float = 0.0
    send_delay_p99_ms: float = 0.0
    cpu_s: float = 0.0
    output_tokens: int = 0
    # The loop's thread, per wall second: running or waiting for a CPU (None: no schedstat here).
    runnable_fraction: float | None = None
    # How late the loop woke with nothing in flight, just before the load (median).
    loop_lag_floor_ms: float = 0.0

    @property
    def send_delayed(self) -> bool:
        """True when the typical steady request waited in the client before leaving (pool or loop)."""
        return self.send_delay_p50_ms > SEND_DELAY_P50_MS

    @property
    def saturated(self) -> bool:
        """True when the client was the bottleneck: its own work filled its core, and its loop
        handled events late against its own floor (how late it woke with nothing in flight).

        A busy client whose loop still wakes on time keeps up: its timings hold, and halving its
        streams would only measure a different load. Not judged by its runnable time
        (``runnable_fraction``, reported): beside a vLLM that busy-polls a core, a healthy client
        waited for a CPU at every wake-up and was runnable over 90 % of the time; called
        saturated, it halved its own concurrency and the real queue under 8 streams was
        measured at 2. Such a client is contended, and says so.
        """
        return (
            self.cpu_fraction > SATURATED_CPU_FRACTION
            and self.loop_lag_p90_ms > self.loop_lag_floor_ms + LAGGING_P90_MS
        )

    @property
    def cpu_s_per_1k_tokens(self) -> float | None:
        """The client's CPU seconds per 1,000 output tokens received (its cost per token)."""
        return self.cpu_s / self.output_tokens * 1000 if self.output_tokens else None

    @property
    def contended(self) -> bool:
        """True when the client lagged while using little CPU: other processes held the cores.

        That is not the client's fault and lowering its concurrency does nothing about it; on a
        machine that also runs vLLM it is the engine's busy loop (it polls one core).
        """
        return not self.saturated and self.loop_lag_p90_ms > LAGGING_P90_MS

    def to_dict(self) -> dict[str, Any]:
        """JSON shape, with the verdict and its reason."""
        reason: dict[str, str] | None = None
        values = {"cpu": f"{self.cpu_fraction:.0%}", "lag": f"{self.loop_lag_p90_ms:.1f}",
                  "floor": f"{self.loop_lag_floor_ms:.1f}", "high": f"{self.loop_lag_p90_ms:.0f}",
                  "delay": f"{self.send_delay_p50_ms:.1f}", "delay99": f"{self.send_delay_p99_ms:.1f}",
                  "pool": f"{self.pool_wait_p99_ms:.1f}"}  # fmt: skip
        if self.saturated:
            reason = texts("client.saturated", **values)
        elif self.contended:
            reason = texts("client.contended", **values)
        elif self.send_delayed:
            reason = texts("client.send_delayed", **values)
        return {
            "loop_lag_p90_ms": self.loop_lag_p90_ms,
            "loop_lag_p99_ms": self.loop_lag_p99_ms,
            "loop_lag_max_ms": self.loop_lag_max_ms,
            "loop_lag_floor_ms": self.loop_lag_floor_ms,
            "cpu_fraction": self.cpu_fraction,
            "runnable_fraction": self.runnable_fraction,
            "cpu_s_per_1k_tokens": self.cpu_s_per_1k_tokens,
            "pool_wait_p99_ms": self.pool_wait_p99_ms,
            "send_delay_p50_ms": self.send_delay_p50_ms,
            "send_delay_p99_ms": self.send_delay_p99_ms,
            "send_delayed": self.send_delayed,
            "saturated": self.saturated,
            "contended": self.contended,
            "cause": "client_saturated" if self.saturated else None,
            "reason": reason["en"] if reason else None,
            "reason_texts": reason,
        }


def sample_values(samples: Sequence[StreamSample]) -> dict[str, list[float]]:
    """Per segment, the values of the samples that completed (a measurement's ``values``)."""
    ok = [s for s in samples if s.ok]
    return {
        "ttft_ms": [s.ttft_ms for s in ok if s.ttft_ms is not None],
        "tpot_ms": [s.tpot_ms for s in ok if s.tpot_ms is not None],
        "itl_ms": [gap for s in ok for gap in s.itl_ms],
        # One value per request: its gaps are clustered, not independent (measure.py).
        ITL_PER_REQUEST: [statistics.median(s.itl_ms) for s in ok if s.itl_ms],
        "e2e_ms": [s.e2e_ms for s in ok if s.e2e_ms is not None],
    }


@dataclass
class LoadResult:
    """Samples of a load run: cold (``warmup``) and steady apart, plus the client's self-check."""

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
        return Measurement(spec, sample_values(self.samples))

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
            # Steady requests that had to reconnect (the server or a proxy closed a connection).
            "steady_reconnects": sum(s.cold for s in self.samples),
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

    async def run(self, samples: int | None = None) -> None:
        while samples is None or len(self.lags_ms) < samples:
            before = time.monotonic()
            await asyncio.sleep(LAG_PROBE_INTERVAL_S)
            self.lags_ms.append((time.monotonic() - before - LAG_PROBE_INTERVAL_S) * 1000)


def requests_sent(requests: int, warmup: int, concurrency: int) -> int:
    """How many requests a run of ``requests`` steady ones sends: every worker's first request is
    cold too, so at least ``concurrency`` of them come before the steady ones (the walk's budget
    counts the same)."""
    return max(warmup, concurrency) + requests


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
    looks: Sequence[int] = (),
    until: Callable[[list[StreamSample]], bool] | None = None,
) -> LoadResult:
    """Per worker, one cold request, then steady ones: ``requests`` in all (or for ``duration_s``).

    The first ``warmup`` requests sent are cold too. With ``until``, the run looks at its steady
    samples each time as many as the next of ``looks`` have come back, and sends no further
    request once ``until`` says they answer what the round was for (sequential.py); the requests
    already on their way are waited for and kept.
    """
    if (requests is None) == (duration_s is None):
        raise ValueError("give exactly one of requests or duration_s")
    await prepare(base_url)
    # One pool of one connection per worker; one TLS context for all (building one reads the CA
    # bundle: ~10 ms each).
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    timeout = httpx.Timeout(timeout_s, connect=10.0)
    verify = tls_context()
    cold: list[StreamSample] = []
    samples: list[StreamSample] = []
    issued = steady_issued = 0
    total = None if requests is None else requests_sent(requests, warmup, concurrency)
    progress = Progress(0, total, 0)
    deadline: float | None = None

    pending_looks = sorted(looks)
    tasks: list[asyncio.Task[None]] = []
    answered = False
    looking: asyncio.Task[None] | None = None

    def more_steady() -> bool:
        if answered:
            return False
        if requests is not None:
            return steady_issued < requests
        return deadline is None or time.monotonic() < deadline

    async def look() -> None:
        nonlocal answered
        while pending_looks and len(samples) >= pending_looks[0]:
            pending_looks.pop(0)
            if until is None or answered:
                continue
            # Off the event loop: a look bootstraps every segment (~40 ms), and the loop must
            # keep reading the streams in flight meanwhile, or their tokens would be stamped
            # late and the loop's own lag (the contention check) would read it.
            if await asyncio.to_thread(_look_briefly, until, list(samples)):
                answered = True
                # The question is answered: the requests still on their way would only make
                # the round longer (a stream of 200 tokens takes seconds). They are dropped,
                # never counted as failures; the server sees their connections close.
                for task in tasks:
                    task.cancel()

    def start_look() -> None:
        """Look in a task of its own, one at a time: the stream that brought the look's last
        sample sends its next request meanwhile (a closed loop held for a look would lengthen
        the round by every look), and a later look judging beside a slower earlier one would
        record its "not answered" over the earlier one's answer. A look still running takes
        the samples that came meanwhile into its next pass."""
        nonlocal looking
        due = bool(pending_looks) and len(samples) >= pending_looks[0]
        if due and (looking is None or looking.done()):
            looking = asyncio.create_task(look())

    async def worker(index: int, client: httpx.AsyncClient) -> None:
        nonlocal issued, steady_issued, deadline
        # Identical requests started together stay in lock-step (all prefill, then all
        # decode); staggering the workers makes new prompts arrive while others decode.
        await asyncio.sleep(index * stagger_s)
        first = True
        while first or issued < warmup or more_steady():
            is_cold = first or issued < warmup
            first = False
            issued += 1
            if not is_cold:
                steady_issued += 1
                if duration_s is not None and deadline is None:
                    deadline = time.monotonic() + duration_s
            sample = await measure_stream(client, base_url, spec, headers)
            (cold if is_cold else samples).append(sample)
            if not is_cold:
                start_look()
            if on_progress is not None:
                _advance(progress, sample)
                on_progress(progress)

    async with contextlib.AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                timing_client(limits=limits, timeout=timeout, verify=verify)
            )
            for _ in range(concurrency)
        ]
        idle = _LoopWatch()
        await idle.run(FLOOR_SAMPLES)
        watch = _LoopWatch()
        watcher = asyncio.create_task(watch.run())
        process = psutil.Process()
        cpu_before = sum(process.cpu_times()[:2])
        runnable_before = _runnable_s()
        began = time.monotonic()
        try:
            tasks.extend(asyncio.create_task(worker(i, c)) for i, c in enumerate(clients))
            for outcome in await asyncio.gather(*tasks, return_exceptions=True):
                if isinstance(outcome, BaseException) and not isinstance(
                    outcome, asyncio.CancelledError
                ):
                    raise outcome
            if looking is not None:
                await looking  # the round's last look, recorded before it ends
        finally:
            watcher.cancel()
            if looking is not None and not looking.done():
                looking.cancel()
        wall = time.monotonic() - began
        cpu = sum(process.cpu_times()[:2]) - cpu_before
        runnable_after = _runnable_s()
    runnable = (
        (runnable_after - runnable_before) / wall
        if wall and runnable_before is not None and runnable_after is not None
        else None
    )
    cold.sort(key=lambda s: s.send_ns)
    samples.sort(key=lambda s: s.send_ns)
    pool_waits = [s.pool_wait_ms for s in samples if s.pool_wait_ms is not None]
    delays = [s.send_delay_ms for s in samples if s.send_delay_ms is not None]
    health = ClientHealth(
        loop_lag_p90_ms=percentile(watch.lags_ms, 90) or 0.0,
        loop_lag_p99_ms=percentile(watch.lags_ms, 99) or 0.0,
        loop_lag_max_ms=max(watch.lags_ms, default=0.0),
        cpu_fraction=cpu / wall if wall else 0.0,
        pool_wait_p99_ms=percentile(pool_waits, 99) or 0.0,
        send_delay_p50_ms=percentile(delays, 50) or 0.0,
        send_delay_p99_ms=percentile(delays, 99) or 0.0,
        cpu_s=cpu,
        output_tokens=sum(s.output_tokens for s in (*cold, *samples) if s.ok),
        runnable_fraction=runnable,
        loop_lag_floor_ms=percentile(idle.lags_ms, 50) or 0.0,
    )
    return LoadResult(cold, samples, concurrency, health, wall)


def _runnable_s() -> float | None:
    """Seconds this thread has run or waited to run (Linux schedstat), None elsewhere."""
    try:
        on_cpu_ns, waiting_ns, _ = SCHEDSTAT.read_text().split()
        return (int(on_cpu_ns) + int(waiting_ns)) / 1e9
    except (OSError, ValueError):
        return None


def _advance(progress: Progress, sample: StreamSample) -> None:
    progress.done += 1
    if not sample.ok:
        progress.failed += 1
    if sample.ttft_ms is not None:
        progress.ttft_ms.append(sample.ttft_ms)
    if sample.tpot_ms is not None:
        progress.tpot_ms.append(sample.tpot_ms)


# The interpreter's switch interval while a look runs. The look's bootstrap is pure Python and
# holds the GIL: at the default 5 ms the loop reading the streams waited for it that long at each
# wake (benchmarks/look_lag.py: wakes 5.5 ms late at the median); at 0.2 ms, 0.45 ms (p99 1.0-1.6 ms,
# as numpy's bootstrap, which let go of the GIL, did).
LOOK_SWITCH_S = 0.0002


def _look_briefly(until: Callable[[list[StreamSample]], bool], samples: list[StreamSample]) -> bool:
    """``until(samples)`` with the GIL handed back to the event loop every ``LOOK_SWITCH_S``.
    Looks run one at a time, so the interval each one sets is the one it puts back."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(LOOK_SWITCH_S)
    try:
        return until(samples)
    finally:
        sys.setswitchinterval(before)
