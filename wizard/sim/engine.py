"""The simulated engine core: cold start, the engine-step loop, token delivery and ground truth.

The loop asks the scheduler for a step, sleeps for the step time the cost model gives, applies the
step and hands each produced token to its request's stream. Every token's scheduled time (the step
deadline) and delivery time are recorded in monotonic nanoseconds, which is the same clock a client
on this machine reads, so a benchmark can measure a client's timing error (``/sim/trace``).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from wizard.sim.config import Resolved, SimConfig
from wizard.sim.metrics import RequestTimes, SimMetrics
from wizard.sim.scheduler import Scheduler, SimRequest, StepPlan, TokenOutput
from wizard.sim.steptime import step_time_ms
from wizard.sim.vllm_log import SpecStats, VllmLog

TRACE_CAPACITY = 20_000
NS = 1_000_000_000
# The stats line's prefix cache hit rate is over the most recent requests (vLLM's
# CachingMetrics(max_recent_requests=1000)).
HIT_RATE_REQUESTS = 1000


@dataclass(eq=False)
class Stream:
    """A request's handle for the HTTP layer: tokens arrive here as the engine produces them."""

    request: SimRequest
    arrival_ns: int
    finish_reason: str
    requested_max_tokens: int
    scheduled_ns: list[int] = field(default_factory=list)
    emitted_ns: list[int] = field(default_factory=list)
    sent_ns: list[int] = field(default_factory=list)
    first_scheduled_ns: int | None = None
    done: bool = False
    aborted: bool = False
    failed: bool = False  # the engine died while it ran: the stream ends with vLLM's error
    _read: int = 0
    _ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def next_tokens(self, timeout: float | None = None) -> int:
        """Wait for new tokens and return how many arrived since the last call (0 on timeout)."""
        if self._read == len(self.emitted_ns) and not self.done:
            try:
                await asyncio.wait_for(self._ready.wait(), timeout)
            except TimeoutError:
                return 0
        self._ready.clear()
        new = len(self.emitted_ns) - self._read
        self._read = len(self.emitted_ns)
        return new

    def mark_sent(self, count: int) -> None:
        """Record that the last ``count`` tokens were just handed to the socket."""
        now = time.monotonic_ns()
        self.sent_ns.extend([now] * count)

    def trace(self) -> dict[str, object]:
        """Ground truth for this request, in monotonic ns."""
        return {
            "request_id": self.request.request_id,
            "arrival_ns": self.arrival_ns,
            "first_scheduled_ns": self.first_scheduled_ns,
            "prompt_tokens": self.request.prompt_tokens,
            "output_tokens": len(self.emitted_ns),
            "preemptions": self.request.num_preemptions,
            "finish_reason": "abort" if self.aborted else self.finish_reason,
            "scheduled_ns": list(self.scheduled_ns),
            "emitted_ns": list(self.emitted_ns),
            "sent_ns": list(self.sent_ns),
        }


# A step ends at its deadline to the microsecond: the loop's own timers have millisecond
# granularity (libuv rounds up), and sleeping to 1.5 ms before the deadline and then yielding until
# it was due kept the loop's thread runnable for that time every step. On a shared machine the
# kernel then ranks it as a CPU hog: at load 5-8 on 2 cores it waited 0.4-0.7 ms on the run queue
# at every wake-up and 4-20 ms at 64 streams, and the emission jitter p99 was 4-7 ms at 1 stream.
# A thread of its own sleeps to the deadline (clock_nanosleep) and wakes the loop: p99 0.4-2 ms at
# 1 stream, 3-16 ms at 64, on the same machine (benchmarks/results/sim_capacity.md).
_STEP_TIMER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sim-step-timer")


def _sleep_to(deadline_ns: int) -> None:
    if (delay_ns := deadline_ns - time.monotonic_ns()) > 0:
        time.sleep(delay_ns / NS)


async def _sleep_until(deadline_ns: int) -> None:
    """Return at ``deadline_ns`` (monotonic), never before; the event loop idles meanwhile."""
    if deadline_ns > time.monotonic_ns():
        await asyncio.get_running_loop().run_in_executor(_STEP_TIMER, _sleep_to, deadline_ns)


class Engine:
    """Owns the scheduler and runs the step loop inside the server's event loop."""

    def __init__(
        self, config: SimConfig, resolved: Resolved, metrics: SimMetrics, log: VllmLog
    ) -> None:
        self.config = config
        self.resolved = resolved
        self.metrics = metrics
        self.log = log
        spec = config.speculative_config
        self.scheduler = Scheduler(
            max_num_batched_tokens=resolved.max_num_batched_tokens,
            max_num_seqs=resolved.max_num_seqs,
            num_gpu_blocks=resolved.usable_blocks or resolved.num_gpu_blocks,
            block_size=resolved.block_size,
            enable_chunked_prefill=config.enable_chunked_prefill,
            enable_prefix_caching=config.enable_prefix_caching,
            num_speculative_tokens=spec.num_speculative_tokens if spec else 0,
            draft_acceptance_rate=spec.draft_acceptance_rate if spec else 0.0,
        )
        self.spec_stats = SpecStats()
        self.ready = False
        self.dead = False
        self.admitted = 0
        self.on_ready: Callable[[], None] | None = None
        self.steps_done = 0
        self._streams: dict[str, Stream] = {}
        self._trace: OrderedDict[str, Stream] = OrderedDict()
        self._work = asyncio.Event()
        self._interval_prompt = 0
        self._interval_generated = 0
        self._interval_preemptions = 0
        # (queried, cached) tokens of the most recent lookups, for the stats line's hit rate.
        self._prefix_lookups: deque[tuple[int, int]] = deque(maxlen=HIT_RATE_REQUESTS)
        self._tasks: list[asyncio.Task[None]] = []

    # -- life cycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Start cold start, the step loop and the stats logger as background tasks."""
        self._tasks = [asyncio.create_task(self._cold_start()), asyncio.create_task(self._run())]
        if not self.config.disable_log_stats:
            self._tasks.append(asyncio.create_task(self._log_stats()))

    async def stop(self) -> None:
        """Cancel the background tasks."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _cold_start(self) -> None:
        began = time.monotonic()
        config, resolved = self.config, self.resolved
        if config.device == "cpu":
            await self._cold_start_cpu()
        else:
            await asyncio.sleep(resolved.load_time_s)
            self.log.weights_loaded(config, resolved.load_time_s)
            self.log.kv_cache(config, resolved)
            if not config.enforce_eager:
                await asyncio.sleep(config.cold_start.graph_capture_s)
                self.log.graphs_captured(config.cold_start.graph_capture_s, config.cuda_graph_gib)
            self.log.init_engine_took(time.monotonic() - began)
        self.ready = True
        if self.on_ready is not None:
            self.on_ready()

    async def _cold_start_cpu(self) -> None:
        """vLLM 0.32 on CPU: load, compile warm-up (unless eager), KV sizing; no CUDA graphs."""
        config, resolved = self.config, self.resolved
        self.log.loading_model(config)
        await asyncio.sleep(resolved.load_time_s)
        self.log.weights_loaded(config, resolved.load_time_s)
        began = time.monotonic()  # 0.32's "init engine" covers what follows the load
        if not config.enforce_eager:
            self.log.warming_up(done=False)
            await asyncio.sleep(config.cold_start.graph_capture_s)
            self.log.warming_up(done=True)
        self.log.cpu_kv_memory(config, resolved.kv_cache_memory_bytes or 0)
        if resolved.num_gpu_blocks_from_memory is not None:
            self.log.blocks_overridden(resolved.num_gpu_blocks_from_memory, resolved.num_gpu_blocks)
        self.log.kv_cache(config, resolved)
        self.log.init_engine_took(time.monotonic() - began)

    # -- requests ----------------------------------------------------------------------------

    def submit(self, request: SimRequest, finish_reason: str, requested_max_tokens: int) -> Stream:
        """Queue a request and return its stream."""
        stream = Stream(request, time.monotonic_ns(), finish_reason, requested_max_tokens)
        self._streams[request.request_id] = stream
        self._trace[request.request_id] = stream
        if len(self._trace) > TRACE_CAPACITY:
            self._trace.popitem(last=False)
        self.scheduler.add(request)
        self._update_gauges()
        self._work.set()
        return stream

    def admit(self) -> bool:
        """Whether the engine takes one more request; past ``die_after_requests`` it dies."""
        limit = self.config.die_after_requests
        if not self.dead and limit is not None and self.admitted >= limit:
            self._die()
        self.admitted += not self.dead
        return not self.dead

    def _die(self) -> None:
        """vLLM's engine core dying while serving: its lines in the log, every running request
        ended with an error, /health 503 from now on (the API server kept alive, as with
        VLLM_KEEP_ALIVE_ON_ENGINE_DEATH=1, so later requests get vLLM's HTTP 500)."""
        self.dead, self.ready = True, False
        self.log.engine_died()
        for task in self._tasks[1:]:  # the step loop and the stats logger
            task.cancel()
        for stream in list(self._streams.values()):
            stream.done = stream.failed = True
            stream._ready.set()
        self._streams.clear()

    def abort(self, stream: Stream) -> None:
        """The client went away: free the request (the running count drops at once)."""
        if stream.done:
            return
        self.scheduler.abort(stream.request)
        stream.done = True
        stream.aborted = True
        self._streams.pop(stream.request.request_id, None)
        self.metrics.observe_finished(self._times(stream, time.monotonic_ns(), "abort"))
        self._update_gauges()

    def trace(self) -> list[dict[str, object]]:
        """Ground truth for the most recent requests."""
        return [stream.trace() for stream in self._trace.values()]

    def clear_trace(self) -> None:
        """Forget recorded ground truth (finished requests only)."""
        for request_id in [rid for rid, stream in self._trace.items() if stream.done]:
            del self._trace[request_id]

    # -- the step loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        next_start: int | None = None
        while True:
            if not self.scheduler.has_work:
                self._work.clear()
                await self._work.wait()
                next_start = None
            plan = self.scheduler.schedule()
            if plan.empty:
                self._work.clear()
                await self._work.wait()
                continue
            now = time.monotonic_ns()
            start = now if next_start is None or next_start < now else next_start
            for request, _ in plan.scheduled:
                stream = self._streams.get(request.request_id)
                if stream is not None and stream.first_scheduled_ns is None:
                    stream.first_scheduled_ns = start
            deadline = start + int(self._step_ms(plan) * 1_000_000)
            await _sleep_until(deadline)
            outputs = self.scheduler.complete(plan)
            self.steps_done += 1
            self._deliver(plan, outputs, deadline)
            next_start = deadline

    def _step_ms(self, plan: StepPlan) -> float:
        grammars = tuple(r.grammar_chars for r, _ in plan.scheduled if r.grammar_chars)
        ms = step_time_ms(
            self.config, plan.prefill_tokens, plan.decode_seqs, plan.draft_tokens, grammars,
            plan.context_tokens,
        )  # fmt: skip
        if self.steps_done < self.config.cold_start.slow_first_steps:
            ms += self.config.cold_start.slow_first_step_ms
        return ms * (1 + self.config.step_drift * self.steps_done / 1000)

    def _deliver(self, plan: StepPlan, outputs: list[TokenOutput], deadline: int) -> None:
        now = time.monotonic_ns()
        self.metrics.observe_step(
            plan.total_tokens, len(plan.preempted), plan.prefill_tokens, len(outputs)
        )
        self._interval_prompt += plan.prefill_tokens
        self._interval_generated += len(outputs)
        self._interval_preemptions += len(plan.preempted)
        for _, queried, cached in plan.admitted:
            self.metrics.observe_prefix_query(queried, cached)
            self._prefix_lookups.append((queried, cached))
        for drafted, accepted in plan.verified:
            self.metrics.observe_verified(drafted, accepted)
            self.spec_stats.observe(drafted, accepted)
        for output in outputs:
            stream = self._streams.get(output.request.request_id)
            if stream is None:
                continue
            if not stream.emitted_ns:
                self.metrics.observe_first_token((now - stream.arrival_ns) / NS)
            elif stream.emitted_ns[-1] != now:
                # Accepted drafts arrive with the step's own token: one gap a step, as vLLM counts.
                self.metrics.observe_gap((now - stream.emitted_ns[-1]) / NS)
            stream.scheduled_ns.append(deadline)
            stream.emitted_ns.append(now)
            if output.finished:
                stream.done = True
                del self._streams[output.request.request_id]
                self.metrics.observe_finished(self._times(stream, now, stream.finish_reason))
            stream._ready.set()
        self._update_gauges()

    def _times(self, stream: Stream, now: int, reason: str) -> RequestTimes:
        first_scheduled = stream.first_scheduled_ns or now
        first_token = stream.emitted_ns[0] if stream.emitted_ns else now
        last_token = stream.emitted_ns[-1] if stream.emitted_ns else now
        return RequestTimes(
            e2e=(now - stream.arrival_ns) / NS,
            queue=(first_scheduled - stream.arrival_ns) / NS,
            prefill=(first_token - first_scheduled) / NS,
            decode=(last_token - first_token) / NS,
            inference=(last_token - first_scheduled) / NS,
            prompt_tokens=stream.request.prompt_tokens,
            generation_tokens=len(stream.emitted_ns),
            max_tokens=stream.requested_max_tokens,
            preemptions=stream.request.num_preemptions,
            finished_reason=reason,
        )

    def _update_gauges(self) -> None:
        scheduler = self.scheduler
        self.metrics.set_state(len(scheduler.running), len(scheduler.waiting), scheduler.kv_usage)

    def _prefix_hit_rate(self) -> float | None:
        """Cached over queried tokens of the recent lookups; None before any (or caching off)."""
        queried = sum(q for q, _ in self._prefix_lookups)
        return sum(c for _, c in self._prefix_lookups) / queried if queried else None

    async def _log_stats(self) -> None:
        interval = self.config.log_stats_interval_s
        was_idle = True
        while True:
            await asyncio.sleep(interval)
            prompt_tps = self._interval_prompt / interval
            generation_tps = self._interval_generated / interval
            idle = prompt_tps == 0 and generation_tps == 0
            if not (idle and was_idle):
                scheduler = self.scheduler
                self.log.stats(
                    prompt_tps, generation_tps, len(scheduler.running), len(scheduler.waiting),
                    self._interval_preemptions, scheduler.kv_usage,
                    self._prefix_hit_rate(),
                )  # fmt: skip
            spec = self.config.speculative_config
            if spec is not None and self.spec_stats.drafts:
                self.log.spec_decoding(self.spec_stats, spec.num_speculative_tokens, interval)
            self.spec_stats = SpecStats()
            was_idle = idle
            self._interval_prompt = self._interval_generated = self._interval_preemptions = 0
