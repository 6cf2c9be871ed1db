"""The simulator's ``/metrics``: vLLM's Prometheus series, in the current (v1) or old (v0) names.

Names, types, help strings, labels and buckets follow vLLM 0.34 (``vllm/v1/metrics/loggers.py``,
``buckets.py``) and a real vLLM 0.32 scrape, in the real server's order; ``generation="v0"`` emits
the 2024-era names (``gpu_cache_usage_perc``, ``time_per_output_token_seconds``,
``num_requests_swapped``, only the ``model_name`` label) so that parsers can be tested on both.
``HttpMetrics`` is the API server's side: the process and Python collectors and the
prometheus-fastapi-instrumentator families (``http_requests_total``, ``http_request_duration_*``).
Families a real server has and the simulator does not are listed in
``tests/test_real_sim_parity.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    GCCollector,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    Summary,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.utils import INF
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wizard.sim.config import MetricsGeneration

TTFT_BUCKETS = (
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
    20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
)  # fmt: skip
ITL_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
    40.0, 80.0,
)  # fmt: skip
PHASE_BUCKETS = (
    0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0,
    240.0, 480.0, 960.0, 1920.0, 7680.0,
)  # fmt: skip
ITERATION_BUCKETS = (1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
PREEMPTION_BUCKETS = (1, 2, 3, 4, 5, 10, 20)
PARAMS_N_BUCKETS = (1, 2, 5, 10, 20)
FINISHED_REASONS = ("stop", "length", "abort", "error", "repetition")
# prometheus-fastapi-instrumentator's defaults, as a real vLLM exposes them.
HTTP_HIGHR_BUCKETS = (
    0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0,
    7.5, 10.0, 30.0, 60.0, INF,
)  # fmt: skip
HTTP_BUCKETS = (0.1, 0.5, 1.0, INF)
# vLLM's instrumentator leaves these out of its own series (and so does the simulator, with its
# own /sim/* routes).
HTTP_EXCLUDED = frozenset({"/metrics", "/health", "/load", "/ping", "/version", "/server_info"})


def cache_config_labels(
    *, block_size: int, user_block_size: bool, num_gpu_blocks: int, override: int | None,
    gpu_memory_utilization: str, enable_prefix_caching: bool, kv_cache_memory_bytes: int | None,
    kv_cache_size_tokens: int, kv_cache_max_concurrency: float,
) -> dict[str, str]:  # fmt: skip
    """The 36 ``CacheConfig`` labels of ``vllm:cache_config_info`` (plus ``engine``), as 0.32 shows
    them for a dense attention model; only the values the simulator knows vary."""
    return {
        "_block_size_resolved": "True", "block_size": str(block_size), "cache_dtype": "auto",
        "cache_hit_alignment_tokens": "None", "effective_attention_block_size": str(block_size),
        "enable_mamba_shared_prefix_checkpoint": "False",
        "enable_prefix_caching": str(enable_prefix_caching),
        "gpu_memory_utilization": gpu_memory_utilization, "hash_block_size": "None",
        "is_attention_free": "False", "kv_cache_dtype_skip_layers": "[]", "kv_cache_layout": "None",
        "kv_cache_max_concurrency": str(kv_cache_max_concurrency),
        "kv_cache_memory_bytes": str(kv_cache_memory_bytes),
        "kv_cache_size_tokens": str(kv_cache_size_tokens), "kv_offloading_backend": "native",
        "kv_offloading_size": "None", "kv_sharing_fast_prefill": "False",
        "mamba_block_size": "None", "mamba_cache_dtype": "auto", "mamba_cache_mode": "none",
        "mamba_page_size_padded": "None", "mamba_ssm_cache_dtype": "auto", "num_cpu_blocks": "None",
        "num_gpu_blocks": str(num_gpu_blocks), "num_gpu_blocks_override": str(override),
        "prefix_cache_retention_interval": "0", "prefix_caching_hash_algo": "sha256",
        "prefix_match_unit": "None", "replayssm_buffer_len": "16", "skip_page_size_padded": "None",
        "sliding_window": "None", "swa_bounded_replay": "True", "use_kda_recoverssm": "False",
        "use_replayssm": "False", "user_specified_block_size": str(user_block_size),
    }  # fmt: skip


def one_two_five_buckets(limit: int) -> tuple[float, ...]:
    """vLLM's ``build_1_2_5_buckets``: 1, 2, 5, 10, 20, 50, ... up to ``limit``."""
    buckets: list[float] = []
    exponent = 0
    while True:
        for mantissa in (1, 2, 5):
            value = mantissa * 10**exponent
            if value > limit:
                return tuple(buckets)
            buckets.append(value)
        exponent += 1


@dataclass(frozen=True)
class RequestTimes:
    """Per-request phase times in seconds, observed when a request finishes."""

    e2e: float
    queue: float
    prefill: float
    decode: float
    inference: float
    prompt_tokens: int
    generation_tokens: int
    max_tokens: int
    preemptions: int
    finished_reason: str


class SimMetrics:
    """A private Prometheus registry holding the simulator's vLLM series."""

    def __init__(
        self,
        *,
        model: str,
        generation: MetricsGeneration,
        max_model_len: int,
        cache_info: dict[str, str],
        num_speculative_tokens: int = 0,
    ) -> None:
        self.generation = generation
        self.registry = CollectorRegistry(auto_describe=True)
        v1 = generation == "v1"
        self.v1 = v1
        names = ["model_name", "engine"] if v1 else ["model_name"]
        self._labels = {"model_name": model, "engine": "0"} if v1 else {"model_name": model}
        reg = self.registry

        def gauge(name: str, doc: str, extra: tuple[str, ...] = ()) -> Gauge:
            return Gauge(name, doc, [*names, *extra], registry=reg)

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, [*names, *extra], registry=reg)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, names, buckets=buckets, registry=reg)

        token_buckets = one_two_five_buckets(max_model_len)
        labels = self._labels
        self.running = gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."
        )
        self.waiting = gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."
        )
        self.waiting_by_reason: Gauge | None = None
        self.prefix_queries: Counter | None = None
        self.prefix_hits: Counter | None = None
        self.prompt_by_source: Counter | None = None
        self.prompt_cached: Counter | None = None
        if v1:
            self.waiting_by_reason = gauge(
                "vllm:num_requests_waiting_by_reason",
                "Number of waiting requests by reason. Reason labels: 'capacity' = waiting for "
                "scheduling capacity; 'deferred' = deferred by transient constraints (LoRA "
                "budget, KV transfer, blocked status). Sum of all reasons equals "
                "vllm:num_requests_waiting.",
                ("reason",),
            )
            sleep = gauge(
                "vllm:engine_sleep_state",
                "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine "
                "is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
                "level 2.",
                ("sleep_state",),
            )
            for state, value in (("awake", 1), ("weights_offloaded", 0), ("discard_all", 0)):
                sleep.labels(**labels, sleep_state=state).set(value)
            self.kv_usage = gauge(
                "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
            )
            self.prefix_queries = counter(
                "vllm:prefix_cache_queries",
                "Prefix cache queries, in terms of number of queried tokens.",
            )
            self.prefix_hits = counter(
                "vllm:prefix_cache_hits", "Prefix cache hits, in terms of number of cached tokens."
            )
        else:
            self.kv_usage = gauge(
                "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage."
            )
            gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.").labels(
                **labels
            )
            gauge(
                "vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage."
            ).labels(**labels)
        # vLLM V1's SpecDecodingProm: only with --speculative-config, one per-position series
        # for each draft position (vllm/v1/spec_decode/metrics.py).
        self.spec: tuple[Counter, Counter, Counter, Counter] | None = None
        if v1 and num_speculative_tokens:
            self.spec = (
                counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
                counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
                counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
                counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                        "Accepted tokens per draft position.", ("position",)),
            )  # fmt: skip
            for position in range(num_speculative_tokens):
                self.spec[3].labels(**labels, position=str(position))
            for series in self.spec[:3]:
                series.labels(**labels)
        self.preemptions = counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."
        )
        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        if v1:
            self.prompt_by_source = counter(
                "vllm:prompt_tokens_by_source", "Number of prompt tokens by source.", ("source",)
            )
            for source in ("local_compute", "local_cache_hit", "external_kv_transfer"):
                self.prompt_by_source.labels(**labels, source=source)
            self.prompt_cached = counter(
                "vllm:prompt_tokens_cached", "Number of cached prompt tokens (local + external)."
            )
            self.prompt_cached.labels(**labels)
        self.generation_tokens = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        )
        self.success = counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            ("finished_reason",),
        )
        if v1:
            for reason in FINISHED_REASONS:
                self.success.labels(**labels, finished_reason=reason)
            rejections = Counter(
                "vllm:admission_rejections",
                "Number of admission attempts rejected by a queue limit, by reason.",
                ["model_name", "reason"],
                registry=reg,
            )
            for reason in ("max_num_queued_reqs", "max_num_queued_tokens"):
                rejections.labels(model_name=model, reason=reason)
        self.request_prompt = histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", token_buckets
        )
        self.request_generation = histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            token_buckets,
        )
        self.iteration_tokens = histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            ITERATION_BUCKETS,
        )
        self.request_max_generation: Histogram | None = None
        self.request_n: Histogram | None = None
        if v1:
            self.request_max_generation = histogram(
                "vllm:request_max_num_generation_tokens",
                "Histogram of maximum number of requested generation tokens.",
                token_buckets,
            )
            self.request_n = histogram(
                "vllm:request_params_n", "Histogram of the n request parameter.", PARAMS_N_BUCKETS
            )
        self.request_max_tokens = histogram(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            token_buckets,
        )
        self.ttft = histogram(
            "vllm:time_to_first_token_seconds",
            "Histogram of time to first token in seconds.",
            TTFT_BUCKETS,
        )
        if v1:
            self.itl = histogram(
                "vllm:inter_token_latency_seconds",
                "Histogram of inter-token latency in seconds.",
                ITL_BUCKETS,
            )
        else:
            self.itl = histogram(
                "vllm:time_per_output_token_seconds",
                "Histogram of time per output token in seconds.",
                ITL_BUCKETS,
            )
        self.request_tpot = (
            histogram(
                "vllm:request_time_per_output_token_seconds",
                "Histogram of time_per_output_token_seconds per request.",
                ITL_BUCKETS,
            )
            if v1
            else None
        )
        self.e2e = histogram(
            "vllm:e2e_request_latency_seconds",
            "Histogram of e2e request latency in seconds.",
            PHASE_BUCKETS,
        )
        self.queue = histogram(
            "vllm:request_queue_time_seconds",
            "Histogram of time spent in WAITING phase for request.",
            PHASE_BUCKETS,
        )
        self.inference = histogram(
            "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            PHASE_BUCKETS,
        )
        self.prefill = histogram(
            "vllm:request_prefill_time_seconds",
            "Histogram of time spent in PREFILL phase for request.",
            PHASE_BUCKETS,
        )
        self.decode = histogram(
            "vllm:request_decode_time_seconds",
            "Histogram of time spent in DECODE phase for request.",
            PHASE_BUCKETS,
        )
        self.request_preemptions: Histogram | None = None
        self.prefill_kv_computed: Histogram | None = None
        if v1:
            self.request_preemptions = histogram(
                "vllm:request_num_preemptions",
                "Histogram of the number of times a request was preempted.",
                PREEMPTION_BUCKETS,
            )
            self.prefill_kv_computed = histogram(
                "vllm:request_prefill_kv_computed_tokens",
                "Histogram of new KV tokens computed during prefill (excluding cached tokens).",
                token_buckets,
            )
        cache_config = Gauge(
            "vllm:cache_config_info",
            "Information of the LLMEngine CacheConfig",
            sorted(cache_info) + (["engine"] if v1 else []),
            registry=reg,
        )
        cache_labels = dict(cache_info)
        if v1:
            cache_labels["engine"] = "0"
        cache_config.labels(**cache_labels).set(1)
        # Touch every labelled series so that an idle server already exposes them, as vLLM does.
        touched: list[Gauge | Counter | Histogram | None] = [
            self.running, self.waiting, self.kv_usage, self.preemptions, self.prompt_tokens,
            self.generation_tokens, self.iteration_tokens, self.ttft, self.itl, self.e2e,
            self.queue, self.prefill, self.decode, self.inference, self.request_prompt,
            self.request_generation, self.request_max_tokens, self.request_tpot,
            self.request_preemptions, self.prefix_queries, self.prefix_hits,
            self.request_max_generation, self.request_n, self.prefill_kv_computed,
        ]  # fmt: skip
        for metric in touched:
            if metric is not None:
                metric.labels(**labels)
        if self.waiting_by_reason is not None:
            for reason in ("capacity", "deferred"):
                self.waiting_by_reason.labels(**labels, reason=reason)

    def set_state(self, running: int, waiting: int, kv_usage: float) -> None:
        """Update the scheduler gauges."""
        self.running.labels(**self._labels).set(running)
        self.waiting.labels(**self._labels).set(waiting)
        if self.waiting_by_reason is not None:  # nothing is ever deferred in the simulator
            self.waiting_by_reason.labels(**self._labels, reason="capacity").set(waiting)
        self.kv_usage.labels(**self._labels).set(kv_usage)

    def observe_step(
        self, tokens: int, preemptions: int, prompt_tokens: int, generated: int
    ) -> None:
        """Record one engine step."""
        if tokens:
            self.iteration_tokens.labels(**self._labels).observe(tokens)
        if preemptions:
            self.preemptions.labels(**self._labels).inc(preemptions)
        if prompt_tokens:
            self.prompt_tokens.labels(**self._labels).inc(prompt_tokens)
            if self.prompt_by_source is not None:
                self.prompt_by_source.labels(**self._labels, source="local_compute").inc(
                    prompt_tokens
                )
        if generated:
            self.generation_tokens.labels(**self._labels).inc(generated)

    def observe_prefix_query(self, queried_tokens: int, hit_tokens: int) -> None:
        """A request admitted from the queue looked its tokens up in the prefix cache.

        The cached tokens are prompt tokens too: vLLM's ``prompt_tokens`` counts every prompt
        token, computed or found in the cache.
        """
        labels = self._labels
        if self.prefix_queries is not None and self.prefix_hits is not None:
            self.prefix_queries.labels(**labels).inc(queried_tokens)
            self.prefix_hits.labels(**labels).inc(hit_tokens)
        if not hit_tokens:
            return
        self.prompt_tokens.labels(**labels).inc(hit_tokens)
        if self.prompt_by_source is not None and self.prompt_cached is not None:
            self.prompt_by_source.labels(**labels, source="local_cache_hit").inc(hit_tokens)
            self.prompt_cached.labels(**labels).inc(hit_tokens)

    def observe_verified(self, drafted: int, accepted: int) -> None:
        """One request's drafts verified in a step: accepted up to the first rejected one."""
        if self.spec is None:
            return
        drafts, draft_tokens, accepted_tokens, per_pos = self.spec
        labels = self._labels
        drafts.labels(**labels).inc()
        draft_tokens.labels(**labels).inc(drafted)
        accepted_tokens.labels(**labels).inc(accepted)
        for position in range(accepted):
            per_pos.labels(**labels, position=str(position)).inc()

    def observe_first_token(self, ttft_s: float) -> None:
        """Record a request's TTFT, measured from arrival (so it includes the queue)."""
        self.ttft.labels(**self._labels).observe(ttft_s)

    def observe_gap(self, gap_s: float) -> None:
        """Record one inter-token gap of one request."""
        self.itl.labels(**self._labels).observe(gap_s)

    def observe_finished(self, times: RequestTimes) -> None:
        """Record a finished request's phase times and counts."""
        labels = self._labels
        self.e2e.labels(**labels).observe(times.e2e)
        self.queue.labels(**labels).observe(times.queue)
        self.prefill.labels(**labels).observe(times.prefill)
        self.decode.labels(**labels).observe(times.decode)
        self.inference.labels(**labels).observe(times.inference)
        self.request_prompt.labels(**labels).observe(times.prompt_tokens)
        self.request_generation.labels(**labels).observe(times.generation_tokens)
        self.request_max_tokens.labels(**labels).observe(times.max_tokens)
        self.success.labels(**labels, finished_reason=times.finished_reason).inc()
        if self.request_tpot is not None:
            tpot = (
                times.decode / (times.generation_tokens - 1) if times.generation_tokens > 1 else 0.0
            )
            self.request_tpot.labels(**labels).observe(tpot)
        if self.request_preemptions is not None:
            self.request_preemptions.labels(**labels).observe(times.preemptions)
        if self.request_max_generation is not None and self.request_n is not None:
            self.request_max_generation.labels(**labels).observe(times.max_tokens)
            self.request_n.labels(**labels).observe(1)
        if self.prefill_kv_computed is not None:
            self.prefill_kv_computed.labels(**labels).observe(times.prompt_tokens)

    def render(self) -> bytes:
        """The text exposition format, as served on ``/metrics``."""
        return generate_latest(self.registry)


class ApiServerProcessCollector(Collector):
    """prometheus_client's process collector, with the simulated API server's CPU time as
    ``process_cpu_seconds_total``: this process's own CPU is the simulation's, not an API
    server's (``wizard.sim.api_server`` charges the API server's work)."""

    def __init__(self, cpu_seconds: Callable[[], float]) -> None:
        self._process = ProcessCollector(registry=None)
        self._cpu_seconds = cpu_seconds

    def collect(self) -> Iterator[Metric]:
        for family in self._process.collect():
            if family.name == "process_cpu_seconds":
                yield CounterMetricFamily(
                    family.name, family.documentation, value=self._cpu_seconds()
                )
            else:
                yield family


class HttpMetrics:
    """The API server's own series: Python and process collectors, and the HTTP instrumentator's.

    ``wrap`` returns an ASGI middleware that times every request to a known route (the whole
    response, so a stream counts until its last byte) and counts it by status class (``2xx``),
    as prometheus-fastapi-instrumentator does in vLLM.
    """

    def __init__(
        self, routes: frozenset[str], api_cpu_seconds: Callable[[], float], api_servers: int = 1
    ) -> None:
        self.routes = routes - HTTP_EXCLUDED
        self.process_registry = CollectorRegistry()
        # With several API servers vLLM serves /metrics from a multiprocess registry, which has
        # no process or Python collector: no process_* series at all (vllm/v1/metrics/prometheus.py
        # get_prometheus_registry, read in the real 0.32 build).
        if api_servers == 1:
            GCCollector(registry=self.process_registry)
            PlatformCollector(registry=self.process_registry)
            self.process_registry.register(ApiServerProcessCollector(api_cpu_seconds))
        self.registry = CollectorRegistry()
        reg = self.registry
        self.requests = Counter(
            "http_requests", "Total number of requests by method, status and handler.",
            ["method", "status", "handler"], registry=reg,
        )  # fmt: skip
        self.request_size = Summary(
            "http_request_size_bytes",
            "Content length of incoming requests by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"], registry=reg,
        )  # fmt: skip
        self.response_size = Summary(
            "http_response_size_bytes",
            "Content length of outgoing responses by handler. Only value of header is respected. "
            "Otherwise ignored. No percentile calculated. ",
            ["handler"], registry=reg,
        )  # fmt: skip
        self.duration_highr = Histogram(
            "http_request_duration_highr_seconds",
            "Latency with many buckets but no API specific labels. Made for more accurate "
            "percentile calculations. ",
            buckets=HTTP_HIGHR_BUCKETS, registry=reg,
        )  # fmt: skip
        self.duration = Histogram(
            "http_request_duration_seconds",
            "Latency with only few buckets by handler. Made to be only used if aggregation by "
            "handler is important. ",
            ["handler", "method"], buckets=HTTP_BUCKETS, registry=reg,
        )  # fmt: skip

    def render_process(self) -> bytes:
        """``python_gc_*``, ``python_info`` and ``process_*`` of this process."""
        return generate_latest(self.process_registry)

    def render(self) -> bytes:
        """The ``http_*`` families."""
        return generate_latest(self.registry)

    def wrap(self, app: ASGIApp) -> ASGIApp:
        """The instrumenting middleware around ``app``."""

        async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
            path = scope.get("path", "")
            if scope["type"] != "http" or path not in self.routes:
                await app(scope, receive, send)
                return
            began = time.perf_counter()
            status = 500
            response_length = 0

            async def timed_send(message: Message) -> None:
                nonlocal status, response_length
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    for name, value in message.get("headers", []):
                        if name == b"content-length" and value.isdigit():
                            response_length = int(value)
                await send(message)

            try:
                await app(scope, receive, timed_send)
            finally:
                elapsed = time.perf_counter() - began
                method = scope.get("method", "GET")
                request_length = 0
                for name, value in scope.get("headers", []):
                    if name == b"content-length" and value.isdigit():
                        request_length = int(value)
                self.requests.labels(method, f"{status // 100}xx", path).inc()
                self.request_size.labels(path).observe(request_length)
                self.response_size.labels(path).observe(response_length)
                self.duration_highr.observe(elapsed)
                self.duration.labels(path, method).observe(elapsed)

        return middleware
