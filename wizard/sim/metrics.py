"""The simulator's ``/metrics``: vLLM's Prometheus series, in the current (v1) or old (v0) names.

Names, types, help strings, labels and buckets follow vLLM 0.34 (``vllm/v1/metrics/loggers.py``,
``buckets.py``); ``generation="v0"`` emits the 2024-era names (``gpu_cache_usage_perc``,
``time_per_output_token_seconds``, ``num_requests_swapped``, only the ``model_name`` label) so that
parsers can be tested on both.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

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
    ) -> None:
        self.generation = generation
        self.registry = CollectorRegistry(auto_describe=True)
        v1 = generation == "v1"
        names = ["model_name", "engine"] if v1 else ["model_name"]
        self._labels = {"model_name": model, "engine": "0"} if v1 else {"model_name": model}
        reg = self.registry

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, names, registry=reg)

        def counter(name: str, doc: str, extra: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, [*names, *extra], registry=reg)

        def histogram(name: str, doc: str, buckets: tuple[float, ...]) -> Histogram:
            return Histogram(name, doc, names, buckets=buckets, registry=reg)

        token_buckets = one_two_five_buckets(max_model_len)
        self.running = gauge(
            "vllm:num_requests_running", "Number of requests in model execution batches."
        )
        self.waiting = gauge(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed."
        )
        if v1:
            self.kv_usage = gauge(
                "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."
            )
        else:
            self.kv_usage = gauge(
                "vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage."
            )
            gauge("vllm:num_requests_swapped", "Number of requests swapped to CPU.").labels(
                **self._labels
            )
            gauge(
                "vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage."
            ).labels(**self._labels)
        self.preemptions = counter(
            "vllm:num_preemptions", "Cumulative number of preemption from the engine."
        )
        self.prompt_tokens = counter("vllm:prompt_tokens", "Number of prefill tokens processed.")
        self.generation_tokens = counter(
            "vllm:generation_tokens", "Number of generation tokens processed."
        )
        self.success = counter(
            "vllm:request_success",
            "Count of successfully processed requests.",
            ("finished_reason",),
        )
        self.iteration_tokens = histogram(
            "vllm:iteration_tokens_total",
            "Histogram of number of tokens per engine_step.",
            ITERATION_BUCKETS,
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
        self.inference = histogram(
            "vllm:request_inference_time_seconds",
            "Histogram of time spent in RUNNING phase for request.",
            PHASE_BUCKETS,
        )
        self.request_prompt = histogram(
            "vllm:request_prompt_tokens", "Number of prefill tokens processed.", token_buckets
        )
        self.request_generation = histogram(
            "vllm:request_generation_tokens",
            "Number of generation tokens processed.",
            token_buckets,
        )
        self.request_max_tokens = histogram(
            "vllm:request_params_max_tokens",
            "Histogram of the max_tokens request parameter.",
            token_buckets,
        )
        self.request_preemptions = (
            histogram(
                "vllm:request_num_preemptions",
                "Histogram of the number of times a request was preempted.",
                PREEMPTION_BUCKETS,
            )
            if v1
            else None
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
        for metric in (self.running, self.waiting, self.kv_usage, self.preemptions, self.prompt_tokens,
                       self.generation_tokens, self.iteration_tokens, self.ttft, self.itl, self.e2e,
                       self.queue, self.prefill, self.decode, self.inference, self.request_prompt,
                       self.request_generation, self.request_max_tokens):  # fmt: skip
            metric.labels(**self._labels)

    def set_state(self, running: int, waiting: int, kv_usage: float) -> None:
        """Update the scheduler gauges."""
        self.running.labels(**self._labels).set(running)
        self.waiting.labels(**self._labels).set(waiting)
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
        if generated:
            self.generation_tokens.labels(**self._labels).inc(generated)

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

    def render(self) -> bytes:
        """The text exposition format, as served on ``/metrics``."""
        return generate_latest(self.registry)
