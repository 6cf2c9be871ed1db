"""vLLM's Prometheus metrics: a snapshot in either naming generation, parsed by prometheus_client.

Current vLLM (v1 names) and 2024-era vLLM (v0 names: ``gpu_cache_usage_perc``,
``time_per_output_token_seconds``) are both read. A server started with ``--disable-log-stats``
exposes no ``vllm:`` series at all; that is recognised and explained rather than reported as zeros.

A paste is read too: lines that are no exposition text (the shell prompt and ``curl`` command above
it, curl's progress meter, HTTP headers, a truncated last line) are skipped and counted in
``notes`` (English; ``notes_texts`` has each in every language); a dump without ``# TYPE`` lines
still gives its histograms (by their ``_sum``/``_count``).
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from wizard.errors import WizardError
from wizard.i18n.words import LANGS, joined, say, texts
from wizard.measure.bucket_quantile import QuantileBounds, quantile_bounds
from wizard.numbers import parse_float, parse_int
from wizard.probes.http.bounded import BoundedRequestError, fetch
from wizard.probes.http.lean_http import tls_context

KV_USAGE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds")
ITL_BUCKETS = frozenset(f"{name}_bucket" for name in ITL)
# One sample line of the text format: name, optional {labels}, a value, an optional timestamp.
# Every part splits a line one way only (the value's digits are "\d+(?:\.\d*)?", never
# "\d+\.?\d*", whose digits could go to either side): a line that is no sample fails in linear
# time, where the ambiguous pattern took seconds over a pasted run of 12,000 digits (issue #15).
SAMPLE_LINE = re.compile(
    r'^[a-zA-Z_:][a-zA-Z0-9_:]*(?:\{(?:[^"}]|"(?:[^"\\]|\\.)*")*\})?[ \t]+'
    r"(?:[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|[-+]?Inf|NaN)"
    r"(?:[ \t]+-?\d+)?[ \t]*$"
)
# Series only one generation exposes (V1 also labels every series with "engine").
V1_ONLY = ("vllm:kv_cache_usage_perc", "vllm:inter_token_latency_seconds_count",
           "vllm:prefix_cache_queries_total", "vllm:request_prefill_kv_computed_tokens_count")  # fmt: skip
V0_ONLY = ("vllm:num_requests_swapped", "vllm:cpu_cache_usage_perc",
           "vllm:avg_generation_throughput_toks_per_s", "vllm:gpu_cache_usage_perc")  # fmt: skip
HISTOGRAM_PARTS = ("_sum", "_count")
SPEC_PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
# The CPU time of the process that serves /metrics: vLLM's API server (its only process series;
# with --api-server-count above 1 /metrics has no process series at all).
PROCESS_CPU = "process_cpu_seconds_total"
MAX_QUOTED_SKIPS = 3


@dataclass
class MetricsSnapshot:
    """The numbers a latency diagnosis needs from one scrape."""

    generation: str | None = None
    stats_disabled: bool = False
    engines: int = 0
    kv_cache_usage: float | None = None
    preemptions_total: float | None = None
    running: float | None = None
    waiting: float | None = None
    prompt_tokens_total: float | None = None
    generation_tokens_total: float | None = None
    # Prompt tokens looked up in the prefix cache, and those found (0 lookups with caching off).
    prefix_cache_queries_total: float | None = None
    prefix_cache_hits_total: float | None = None
    # Speculative decoding (vLLM V1, only with --speculative-config): drafts verified, their
    # tokens, the tokens accepted, and the accepted ones by draft position ("0", "1", ...; one
    # series per position, so their number is num_speculative_tokens).
    spec_decode_drafts_total: float | None = None
    spec_decode_draft_tokens_total: float | None = None
    spec_decode_accepted_tokens_total: float | None = None
    spec_decode_accepted_per_pos_total: dict[str, float] = field(default_factory=dict)
    process_cpu_seconds_total: float | None = None
    # When the scrape was answered (monotonic seconds; None for a text not scraped): the window
    # a CPU-time counter's rate is taken over.
    scraped_at: float | None = None
    ttft_s: dict[str, float] = field(default_factory=dict)
    itl_s: dict[str, float] = field(default_factory=dict)
    queue_s: dict[str, float] = field(default_factory=dict)
    prefill_s: dict[str, float] = field(default_factory=dict)
    decode_s: dict[str, float] = field(default_factory=dict)
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    # The engine's own word on its cache configuration (vllm:cache_config_info labels).
    num_gpu_blocks_override: int | None = None
    gpu_memory_utilization: float | None = None
    enable_prefix_caching: bool | None = None
    # vLLM 0.34 on CUDA: an unset gpu_memory_utilization then resolves to 1.0, not 0.92.
    enable_extensible_kv_cache: bool | None = None
    itl_smallest_bucket_s: float | None = None
    # The inter-token histogram's cumulative counts by bucket bound (its ``le`` text), of the
    # first ITL series the server exposes: a round's median gap by the engine's own clock.
    itl_buckets: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    notes_texts: list[dict[str, str]] = field(default_factory=list)  # each note in every language

    def note(self, said: dict[str, str]) -> None:
        """A note in English (``notes``) and in every language it is worded in (``notes_texts``)."""
        self.notes.append(said["en"])
        self.notes_texts.append(said)

    @property
    def kv_cache_tokens(self) -> int | None:
        """KV capacity in tokens (num_gpu_blocks x block_size) when cache_config_info says."""
        if self.num_gpu_blocks is None or self.block_size is None:
            return None
        return self.num_gpu_blocks * self.block_size

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (contract keys of ``probe metrics --json`` first)."""
        data = asdict(self)
        del data["scraped_at"]  # a monotonic clock reading: only a window's length means anything
        del data["itl_buckets"]  # a window's raw counts: only a delta of two means anything
        data["kv_cache_tokens"] = self.kv_cache_tokens
        if self.stats_disabled:
            data["note"] = (
                "no vllm:* series: the server runs with --disable-log-stats, which in current vLLM "
                "removes every engine metric; only http_* series remain"
            )
        elif (
            note := itl_bucket_note(self.itl_s.get("mean"), self.itl_smallest_bucket_s)
        ) is not None:
            data["note"] = note
        return data


def itl_bucket_note(mean_s: float | None, smallest_s: float | None) -> str | None:
    """Say so when the inter-token latency sits below the histogram's first bucket."""
    if mean_s is None or smallest_s is None or mean_s >= smallest_s:
        return None
    return (
        f"mean ITL {mean_s * 1000:.1f} ms is below the smallest histogram bucket "
        f"({smallest_s * 1000:g} ms): server-side ITL percentiles cannot be read from this "
        "histogram; use the client's ITL"
    )


def exposition_lines(text: str) -> tuple[str, list[dict[str, str]]]:
    """The exposition text in ``text`` and notes on what was skipped (a paste's prompt, headers)."""
    kept, skipped = [], []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or SAMPLE_LINE.match(stripped):
            kept.append(stripped)
        else:
            skipped.append((number, stripped))
    notes = []
    if skipped:
        quoted = {lang: joined([say("metricsnote.line", lang, number=n, text=repr(_printable(t)[:60]))
                                for n, t in skipped[:MAX_QUOTED_SKIPS]], lang)
                  for lang in LANGS}  # fmt: skip
        left = len(skipped) - MAX_QUOTED_SKIPS
        more = texts("metricsnote.more", n=left) if left > 0 else dict.fromkeys(LANGS, "")
        notes.append({lang: say("metricsnote.skipped", lang, n=len(skipped), quoted=quoted[lang],
                                more=more[lang]) for lang in LANGS})  # fmt: skip
    return "\n".join(kept) + "\n", notes


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def parse(text: str) -> MetricsSnapshot:
    """Parse the text exposition format; raise WizardError when it is not Prometheus text."""
    if text.lstrip().startswith("<"):
        raise WizardError.said("metrics.html")
    text, notes = exposition_lines(text)
    if not any(line and not line.startswith("#") for line in text.splitlines()):
        skipped = texts("metrics.skipped_said", note=notes[0]) if notes else ""
        raise WizardError.said("metrics.no_samples", skipped=skipped)
    try:
        families = list(text_string_to_metric_families(text))
    except (ValueError, IndexError, OverflowError) as exc:
        # The parser's own words, quoted as it says them.
        raise WizardError.said("metrics.invalid", detail=_printable(str(exc))[:120]) from None
    snap = MetricsSnapshot(notes=[said["en"] for said in notes], notes_texts=notes)
    sums: dict[str, float] = {}
    engines: set[str] = set()
    labelled = False  # V1 labels every engine series with "engine"
    histograms: dict[str, dict[str, float]] = {}
    itl_buckets: dict[str, dict[str, float]] = {}
    for family in families:
        for sample in family.samples:
            # NaN and infinities are valid exposition but no count: they would also make the
            # JSON output invalid. An integer past a float's range (the parser keeps integers
            # as int) is no count either.
            value = _finite(sample.value)
            if sample.name == PROCESS_CPU and value is not None:
                snap.process_cpu_seconds_total = value
            if not sample.name.startswith("vllm:") or value is None:
                continue
            engines.add(sample.labels.get("engine", "0"))
            labelled = labelled or "engine" in sample.labels
            if not _add(sums, sample.name, value):
                continue
            # Without its "# TYPE" line a histogram is "unknown" typed: its parts still say what it is.
            if family.type in ("histogram", "unknown") and sample.name.endswith(HISTOGRAM_PARTS):
                base, _, part = sample.name.rpartition("_")
                _add(histograms.setdefault(base, {}), part, value)
            if sample.name in ITL_BUCKETS and "le" in sample.labels:
                _add(itl_buckets.setdefault(sample.name, {}), sample.labels["le"], value)
            if sample.name in ITL_BUCKETS and sample.labels.get("le") not in (
                None,
                "+Inf",
            ):
                bound = parse_float(sample.labels["le"])
                if bound is not None and (
                    snap.itl_smallest_bucket_s is None or bound < snap.itl_smallest_bucket_s
                ):
                    snap.itl_smallest_bucket_s = bound
            if sample.name == SPEC_PER_POS and "position" in sample.labels:
                per_pos = snap.spec_decode_accepted_per_pos_total
                position = sample.labels["position"]
                per_pos[position] = per_pos.get(position, 0.0) + sample.value
            if sample.name == "vllm:cache_config_info":
                snap.num_gpu_blocks = parse_int(sample.labels.get("num_gpu_blocks"))
                snap.block_size = parse_int(sample.labels.get("block_size"))
                snap.num_gpu_blocks_override = parse_int(
                    sample.labels.get("num_gpu_blocks_override")
                )
                # vLLM writes "None" for an unset value.
                snap.gpu_memory_utilization = parse_float(
                    sample.labels.get("gpu_memory_utilization")
                )
                snap.enable_prefix_caching = {"True": True, "False": False}.get(
                    sample.labels.get("enable_prefix_caching", "")
                )
                snap.enable_extensible_kv_cache = {"True": True, "False": False}.get(
                    sample.labels.get("enable_extensible_kv_cache", "")
                )
    if not sums:
        snap.stats_disabled = True
        return snap
    snap.engines = len(engines)
    snap.generation = _generation(sums, engines_labelled=labelled)
    if snap.generation is None:
        snap.note(texts("metricsnote.generation"))
    snap.kv_cache_usage = next((sums[n] / snap.engines for n in KV_USAGE if n in sums), None)
    snap.preemptions_total = sums.get("vllm:num_preemptions_total")
    snap.running = sums.get("vllm:num_requests_running")
    snap.waiting = sums.get("vllm:num_requests_waiting")
    snap.prompt_tokens_total = sums.get("vllm:prompt_tokens_total")
    snap.generation_tokens_total = sums.get("vllm:generation_tokens_total")
    snap.prefix_cache_queries_total = sums.get("vllm:prefix_cache_queries_total")
    snap.prefix_cache_hits_total = sums.get("vllm:prefix_cache_hits_total")
    snap.spec_decode_drafts_total = sums.get("vllm:spec_decode_num_drafts_total")
    snap.spec_decode_draft_tokens_total = sums.get("vllm:spec_decode_num_draft_tokens_total")
    snap.spec_decode_accepted_tokens_total = sums.get("vllm:spec_decode_num_accepted_tokens_total")
    snap.ttft_s = _mean(histograms.get("vllm:time_to_first_token_seconds"))
    snap.itl_s = next((_mean(histograms[n]) for n in ITL if n in histograms), {})
    snap.itl_buckets = next(
        (itl_buckets[f"{n}_bucket"] for n in ITL if f"{n}_bucket" in itl_buckets), {}
    )
    snap.queue_s = _mean(histograms.get("vllm:request_queue_time_seconds"))
    snap.prefill_s = _mean(histograms.get("vllm:request_prefill_time_seconds"))
    snap.decode_s = _mean(histograms.get("vllm:request_decode_time_seconds"))
    return snap


def _finite(value: float) -> float | None:
    """A sample's value as a finite float, else None (NaN, infinities, an int past float)."""
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _add(totals: dict[str, float], key: str, value: float) -> bool:
    """Add ``value`` to ``totals[key]`` unless the sum would leave a float's range."""
    total = _finite(totals.get(key, 0.0) + value)
    if total is not None:
        totals[key] = total
    return total is not None


def _generation(sums: dict[str, float], engines_labelled: bool) -> str | None:
    """v1 or v0 from the series only one of them exposes; V1 checked first (0.9.2-0.11 had both
    KV names)."""
    if engines_labelled or any(name in sums for name in V1_ONLY):
        return "v1"
    if any(name in sums for name in V0_ONLY):
        return "v0"
    return None


def _mean(parts: dict[str, float] | None) -> dict[str, float]:
    # A histogram missing its _sum or _count (a hand-edited or foreign exposition) has no mean.
    if not parts or not parts.get("count") or "sum" not in parts:
        return {}
    mean = _finite(parts["sum"] / parts["count"])
    return {} if mean is None else {"count": parts["count"], "sum": parts["sum"], "mean": mean}


async def scrape(client: httpx.AsyncClient, base_url: str) -> MetricsSnapshot:
    """GET ``/metrics`` and parse it."""
    url = base_url.rstrip("/") + "/metrics"
    try:
        status, text = await fetch(client, "GET", url)
    except httpx.HTTPError as exc:
        raise WizardError(f"cannot read {url}: {type(exc).__name__}: {exc}") from None
    except BoundedRequestError as exc:
        raise WizardError(str(exc)) from None
    if status != 200:
        raise WizardError(f"{url} answered HTTP {status}")
    # Off the event loop: parsing a server's exposition takes 20-30 ms of pure Python (the
    # simulator's; a real vLLM's is longer), and a round scrapes every 0.2 s while its streams
    # are in flight. On the loop, each parse held back the tokens arriving meanwhile: they were
    # stamped late (the client's ITL p99 rose with it) and the client read its own lag as
    # contention. In a thread the loop gets the GIL back every switch interval (5 ms).
    snap = await asyncio.to_thread(parse, text)
    snap.scraped_at = time.monotonic()
    return snap


def delta(
    before: MetricsSnapshot, after: MetricsSnapshot, window_s: float | None = None
) -> dict[str, Any]:
    """Counter and histogram changes between two scrapes (what happened in between).

    A counter that went down means the server restarted in between: the deltas are then
    meaningless, and ``restarted`` says so.
    """

    def diff(a: float | None, b: float | None) -> float | None:
        return None if a is None or b is None else _finite(b - a)

    def window_mean(name: str) -> float | None:
        first, last = getattr(before, name), getattr(after, name)
        count = diff(first.get("count", 0.0), last.get("count"))
        total = diff(first.get("sum", 0.0), last.get("sum"))
        return _finite(total / count) if count and total is not None else None

    requests = diff(before.ttft_s.get("count", 0.0), after.ttft_s.get("count"))
    counters = (
        diff(before.preemptions_total, after.preemptions_total),
        diff(before.generation_tokens_total, after.generation_tokens_total),
        requests,
    )
    rate = _finite(counters[0] / window_s) if counters[0] is not None and window_s else None
    itl_mean = window_mean("itl_s")
    median = itl_median(before, after)
    return {
        "restarted": any(c is not None and c < 0 for c in counters),
        "window_s": window_s,
        "requests": requests,
        "preemptions": counters[0],
        "preemptions_per_s": rate,
        "prompt_tokens": diff(before.prompt_tokens_total, after.prompt_tokens_total),
        "generation_tokens": counters[1],
        "prefix_cache_queries": diff(
            before.prefix_cache_queries_total, after.prefix_cache_queries_total
        ),
        "prefix_cache_hits": diff(before.prefix_cache_hits_total, after.prefix_cache_hits_total),
        **spec_decode_delta(before, after),
        "api_server_cpu_cores": api_server_cpu_cores(before, after),
        "server_ttft_mean_s": window_mean("ttft_s"),
        "server_itl_mean_s": itl_mean,
        "server_queue_mean_s": window_mean("queue_s"),
        "server_prefill_mean_s": window_mean("prefill_s"),
        "server_decode_mean_s": window_mean("decode_s"),
        "itl_note": itl_bucket_note(itl_mean, after.itl_smallest_bucket_s),
        # The bucket that holds the window's median gap, as data (``probe metrics --json``):
        # low < median <= high, high None above the last bucket.
        "server_itl_p50_low_s": median.low_s if median else None,
        "server_itl_p50_high_s": None
        if median is None or math.isinf(median.high_s)
        else median.high_s,
        "server_itl_p50_observations": median.observations if median else None,
    }


def itl_median(before: MetricsSnapshot, after: MetricsSnapshot) -> QuantileBounds | None:
    """The bucket of the window's median inter-token gap (the engine's clock, not the client's).

    The mean hides what a typical step costs behind a few long ones (a prefill chunk, a stall);
    the median is the plain decode step. A histogram only proves the bucket, so it is a bucket.
    """
    counts: dict[float, float] = {}
    for le, count in after.itl_buckets.items():
        bound = math.inf if le == "+Inf" else parse_float(le)
        if bound is not None:
            counts[bound] = count - before.itl_buckets.get(le, 0.0)
    return quantile_bounds(counts, 0.5)


def spec_decode_delta(before: MetricsSnapshot, after: MetricsSnapshot) -> dict[str, Any]:
    """Speculative decoding in the window: drafts, drafted and accepted tokens, and the rates
    vLLM's own docs compute from them (SpecDecodingProm): the acceptance rate (accepted over
    drafted), the mean acceptance length (1 + accepted per draft, the target's own token
    included) and the acceptance rate of each draft position (accepted there per draft)."""
    drafts = _counter_diff(before.spec_decode_drafts_total, after.spec_decode_drafts_total)
    drafted = _counter_diff(
        before.spec_decode_draft_tokens_total, after.spec_decode_draft_tokens_total
    )
    accepted = _counter_diff(
        before.spec_decode_accepted_tokens_total, after.spec_decode_accepted_tokens_total
    )
    positions = sorted(after.spec_decode_accepted_per_pos_total, key=_position)
    per_pos = [
        after.spec_decode_accepted_per_pos_total[pos]
        - before.spec_decode_accepted_per_pos_total.get(pos, 0.0)
        for pos in positions
    ]
    return {
        "spec_drafts": drafts,
        "spec_draft_tokens": drafted,
        "spec_accepted_tokens": accepted,
        # One series per draft position: their number is the server's num_speculative_tokens.
        "spec_num_speculative_tokens": len(positions) or None,
        "spec_acceptance_rate": accepted / drafted if drafted and accepted is not None else None,
        "spec_mean_acceptance_length": 1 + accepted / drafts
        if drafts and accepted is not None
        else None,
        "spec_acceptance_per_pos": [n / drafts for n in per_pos] if drafts else None,
    }


def api_server_cpu_cores(before: MetricsSnapshot, after: MetricsSnapshot) -> float | None:
    """The API server process's CPU over the window, in cores (CPU seconds per second).

    None without the process series (several API servers, or no process collector) or without
    both scrape times; a counter that went down is a restarted process, not a rate.
    """
    cpu = _counter_diff(before.process_cpu_seconds_total, after.process_cpu_seconds_total)
    if before.process_cpu_seconds_total is None or cpu is None or cpu < 0:
        return None
    if before.scraped_at is None or after.scraped_at is None:
        return None
    window = after.scraped_at - before.scraped_at
    return cpu / window if window > 0 else None


def _counter_diff(before: float | None, after: float | None) -> float | None:
    # A series that appears during the window started at zero (vLLM creates them at start-up).
    return None if after is None else after - (before or 0.0)


def _position(label: str) -> tuple[int, str]:
    return (int(label), label) if label.isdigit() else (1 << 30, label)


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: one snapshot of the target's metrics."""
    async with httpx.AsyncClient(
        verify=tls_context(), timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)
    ) as client:
        return (await scrape(client, ctx.url_for(params.get("path", "direct")))).to_dict()
