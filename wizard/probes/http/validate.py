"""Validation under standardised load: the real MLPerf LoadGen drives our HTTP client as the SUT.

LoadGen (``mlcommons-loadgen``, import ``mlperf_loadgen``) schedules the queries (SingleStream:
one after another; Server: Poisson arrivals at a target rate from a fixed seed, so a before/after
pair gets the identical schedule; Offline: everything at once). For every query we stream one
request and call ``FirstTokenComplete`` on the first output event and ``QuerySamplesComplete`` with
the output token count at the end. Results are read from LoadGen's ``mlperf_log_detail.txt``.

The procedure's rules are enforced here: an Offline result is throughput, never latency evidence
(P6.6); results carry a fingerprint that includes the scenario, so runs of different scenarios are
never compared.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import httpx

from wizard.errors import WizardError, require_extra
from wizard.i18n.loadgen_words import loadgen_note
from wizard.measure import MeasurementSpec, summarize
from wizard.probes.http.lean_http import timing_client
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, measure_stream

Scenario = Literal["SingleStream", "Server", "Offline"]

# MLPerf Inference datacenter LLM constraints (TTFT ms, TPOT ms) from inference_rules.adoc and
# mlperf.conf; "-interactive" variants are the Server scenario with tighter bounds.
PRESETS: dict[str, tuple[float, float]] = {
    "llama2-70b": (2000, 200),
    "llama2-70b-interactive": (450, 40),
    "llama3_1-8b": (2000, 100),
    "llama3_1-8b-interactive": (500, 30),
    "llama3_1-405b": (6000, 175),
    "llama3_1-405b-interactive": (4500, 80),
    "mixtral-8x7b": (2000, 200),
    "deepseek-r1": (2000, 80),
    "deepseek-r1-interactive": (1500, 15),
}
DETAIL_PREFIX = ":::MLLOG "
FIXED_SCHEDULE_SEED = 12345


@dataclass(frozen=True)
class ValidationSpec:
    """One LoadGen run."""

    scenario: Scenario
    target_qps: float = 1.0
    ttft_ms: float = 2000.0
    tpot_ms: float = 100.0
    min_duration_s: float = 10.0
    min_queries: int = 64
    max_in_flight: int = 64
    samples: int = 64
    seed: int = FIXED_SCHEDULE_SEED


Verdict = Literal["VALID", "INVALID", "ERROR"]
# Queries that all failed, from the start of a run, after which the rest are not sent.
GIVE_UP_AFTER_FAILURES = 8


def failure_counts(samples: list[StreamSample]) -> dict[str, Any]:
    """Queries, successes, failures by kind, and the first failure (by send time) of a run."""
    failed = sorted((s for s in samples if not s.ok), key=lambda s: s.send_ns)
    errors: dict[str, int] = {}
    for sample in failed:
        kind = sample.error_kind or "error"
        errors[kind] = errors.get(kind, 0) + 1
    first = failed[0] if failed else None
    return {
        "queries": len(samples),
        "succeeded": len(samples) - len(failed),
        "failed": len(failed),
        "errors": errors,
        "first_error": None
        if first is None
        else {"kind": first.error_kind, "status": first.status, "message": first.error},
    }


def verdict(
    queries: int,
    failed: int,
    errors: dict[str, int],
    first_error: dict[str, Any] | None,
    loadgen_validity: str | None,
    loadgen_reasons: list[str],
) -> tuple[Verdict, list[str]]:
    """Our verdict on a run and its reasons, most important first.

    LoadGen judges timing only: it says VALID for a run whose every query was answered 404 in a
    millisecond. So a run is VALID only when LoadGen said VALID *and* every query succeeded; any
    failed query makes it INVALID (the failures are a cause of their own, and LoadGen's latencies
    then include their times), and a run where nothing succeeded is ERROR: nothing was measured.
    LoadGen's own reasons follow ours.
    """
    reasons: list[str] = []
    if queries == 0:
        reasons.append("no query was issued")
    elif failed:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(errors.items()))
        first = ""
        if first_error:
            message = first_error.get("message") or first_error.get("kind")
            kind = str(first_error.get("kind") or "")
            first = (
                f"; first error: {message if kind.startswith('http_') else f'{kind}: {message}'}"
            )
        nothing = ", nothing succeeded" if failed >= queries else ""
        reasons.append(f"{failed} of {queries} queries failed ({kinds}){nothing}{first}")
    if loadgen_validity != "VALID" and not loadgen_reasons:
        loadgen_reasons = [f"LoadGen said {loadgen_validity or 'nothing'} without a reason "
                           "(see mlperf_log_detail.txt)"]  # fmt: skip
    reasons.extend(loadgen_reasons if loadgen_validity != "VALID" else [])
    if queries == 0 or failed >= queries:
        return "ERROR", reasons
    if failed or loadgen_validity != "VALID":
        return "INVALID", reasons
    return "VALID", reasons


@dataclass
class ValidationResult:
    """LoadGen's verdict and numbers, plus our client-side view of the same requests."""

    spec: ValidationSpec
    detail: dict[str, Any]
    samples: list[StreamSample] = field(default_factory=list)

    @property
    def loadgen_valid(self) -> bool:
        """LoadGen's own ``result_validity`` (timing only: it does not see failed queries)."""
        return self.detail.get("result_validity") == "VALID"

    @property
    def result(self) -> Verdict:
        """VALID, INVALID or ERROR: LoadGen's verdict and the queries' outcomes (see ``verdict``)."""
        return self.judge()[0]

    @property
    def valid(self) -> bool:
        """VALID: LoadGen said so and every query succeeded."""
        return self.result == "VALID"

    def judge(self) -> tuple[Verdict, list[str]]:
        """The verdict and its reasons."""
        counts = failure_counts(self.samples)
        return verdict(
            counts["queries"], counts["failed"], counts["errors"], counts["first_error"],
            self.detail.get("result_validity"), self.loadgen_reasons(),
        )  # fmt: skip

    def reasons(self) -> list[str]:
        """Why the run is not VALID: failed queries first, then LoadGen's reasons."""
        return self.judge()[1]

    def loadgen_reasons(self) -> list[str]:
        """Why LoadGen said INVALID, and what a valid run would need."""
        detail = self.detail
        reasons: list[str] = []
        if detail.get("result_min_duration_met") is False:
            reasons.append("minimum duration not met")
        if detail.get("result_min_queries_met") is False:
            reasons.append("minimum query count not met")
        if detail.get("result_perf_constraints_met") is False:
            reasons.append(
                "latency constraints not met (TTFT/TPOT p99 over the bound): lower the rate"
            )
        for key in ("result_invalid_reason", "early_stopping_result", "early_stopping_ttft_result",
                    "early_stopping_tpot_result"):  # fmt: skip
            text = " ".join(str(detail.get(key) or "").replace("*", " ").split())
            if text and (
                key == "result_invalid_reason" or detail.get("early_stopping_met") is False
            ):
                reasons.append(text)
        return reasons

    def to_dict(self) -> dict[str, Any]:
        """The ``probe validate --json`` object (and the walk probe's facts)."""
        detail = self.detail

        def ms(key: str) -> float | None:
            value = detail.get(key)
            return value / 1e6 if isinstance(value, int | float) else None

        ok = [s for s in self.samples if s.ok]
        counts = failure_counts(self.samples)
        result, reasons = self.judge()
        offline = self.spec.scenario == "Offline"
        # Offline latencies measure a batch drained at once, and a run with failed queries has
        # their (fast) error replies inside LoadGen's percentiles: neither is latency evidence.
        # Neither Offline's latencies nor those of a run where nothing succeeded are shown at all.
        evidence = not offline and counts["failed"] == 0 and counts["queries"] > 0
        hidden = offline or result == "ERROR"
        # Said from the one sentence each note has (loadgen_words), which a view says in its language.
        note = loadgen_note(self.spec.scenario, result, counts["failed"], "en")

        def latency(key: str) -> float | None:
            return None if hidden else ms(key)

        return {
            "scenario": self.spec.scenario,
            "spec": asdict(self.spec),
            "result": result,
            "reasons": reasons,
            **counts,
            "loadgen_result": detail.get("result_validity"),
            "latency_evidence": evidence,
            "note": note,
            "loadgen": {
                "query_count": detail.get("result_query_count"),
                "latency_p90_ms": latency("result_90.00_percentile_latency_ns"),
                "latency_p99_ms": latency("result_99.00_percentile_latency_ns"),
                "early_stopping_p90_ms": latency("early_stopping_latency_ss"),
                "ttft_p99_ms": latency("result_first_token_99.00_percentile_latency_ns"),
                "tpot_p99_ms": latency("result_time_per_output_token_99.00_percentile_ns"),
                "completed_samples_per_s": detail.get("result_completed_samples_per_sec")
                or detail.get("result_samples_per_second"),
                "tokens_per_s": detail.get("result_completed_tokens_per_second")
                or detail.get("result_tokens_per_second"),
            },
            "client": {
                "requests": len(self.samples),
                "succeeded": len(ok),
                "ttft_ms": None
                if offline
                else summarize([s.ttft_ms for s in ok if s.ttft_ms is not None]),
                "tpot_ms": None
                if offline
                else summarize([s.tpot_ms for s in ok if s.tpot_ms is not None]),
            },
        }

    def measurement_spec(self, request: RequestSpec, access_path: str) -> MeasurementSpec:
        """The fingerprinted spec: the scenario is part of it, so scenarios never compare."""
        return MeasurementSpec(
            model=request.model, endpoint=request.endpoint, input_tokens=request.input_tokens,
            output_tokens=request.max_tokens, concurrency=self.spec.max_in_flight,
            access_path=access_path, scenario=f"{self.spec.scenario}@{self.spec.target_qps}",
        )  # fmt: skip


def read_detail(path: Path) -> dict[str, Any]:
    """Key -> value of LoadGen's ``mlperf_log_detail.txt`` (the last record of a key wins)."""
    detail: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith(DETAIL_PREFIX):
            try:
                record = json.loads(line[len(DETAIL_PREFIX) :])
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "key" in record:
                detail[record["key"]] = record.get("value")
    return detail


def run_validation(
    base_url: str,
    request: RequestSpec,
    spec: ValidationSpec,
    outdir: Path,
    headers: dict[str, str] | None = None,
    timeout_s: float = 120.0,
    on_sample: Callable[[StreamSample], None] | None = None,
) -> ValidationResult:
    """Run one LoadGen test against the server; blocks until LoadGen finishes."""
    require_extra("loadgen", "validation with MLPerf LoadGen")
    import mlperf_loadgen as lg

    outdir.mkdir(parents=True, exist_ok=True)
    loop = _new_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    limits = httpx.Limits(max_connections=spec.max_in_flight)
    client = timing_client(limits=limits, timeout=httpx.Timeout(timeout_s, connect=10.0))
    gate = asyncio.Semaphore(spec.max_in_flight)
    samples: list[StreamSample] = []

    def given_up() -> bool:
        # LoadGen waits for every query it issued: against a server that fails each one slowly
        # (a trickle, a timeout) a 64-query run took 64 read deadlines. Once the first queries
        # all failed, the rest are completed unsent: the run is an ERROR whatever they would do.
        return len(samples) >= GIVE_UP_AFTER_FAILURES and not any(s.ok for s in samples)

    async def serve(query_id: int) -> None:
        if given_up():
            sample = StreamSample(
                send_ns=time.monotonic_ns(), error_kind="not_sent",
                error=f"not sent: the first {GIVE_UP_AFTER_FAILURES} queries all failed",
            )  # fmt: skip
        else:
            async with gate:
                sample = await measure_stream(
                    client, base_url, request, headers,
                    on_first_output=lambda: lg.FirstTokenComplete([lg.QuerySampleResponse(query_id, 0, 0)]),
                )  # fmt: skip
        samples.append(sample)
        if on_sample is not None:
            on_sample(sample)
        if not sample.output_times_ns:
            # LoadGen needs a first token for every query in token mode; a failed query gets one
            # at completion time so the run still ends (the failure is in our samples).
            lg.FirstTokenComplete([lg.QuerySampleResponse(query_id, 0, 0)])
        tokens = max(sample.output_tokens, 2)  # LoadGen logs n_tokens <= 1 as an error
        lg.QuerySamplesComplete([lg.QuerySampleResponse(query_id, 0, 0, tokens)])

    def issue_queries(queries: list[Any]) -> None:
        for query in queries:
            asyncio.run_coroutine_threadsafe(serve(query.id), loop)

    sut = lg.ConstructSUT(issue_queries, lambda: None)
    qsl = lg.ConstructQSL(spec.samples, spec.samples, lambda _: None, lambda _: None)
    settings = _settings(lg, spec)
    log_settings = lg.LogSettings()
    log_settings.log_output.outdir = str(outdir)
    log_settings.enable_trace = False
    try:
        lg.StartTestWithLogSettings(sut, qsl, settings, log_settings)
    finally:
        lg.DestroyQSL(qsl)
        lg.DestroySUT(sut)
        asyncio.run_coroutine_threadsafe(client.aclose(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
    detail_file = outdir / "mlperf_log_detail.txt"
    if not detail_file.exists():
        raise WizardError(f"LoadGen wrote no {detail_file}")
    return ValidationResult(spec, read_detail(detail_file), samples)


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


def _settings(lg: Any, spec: ValidationSpec) -> Any:
    settings = lg.TestSettings()
    settings.scenario = getattr(lg.TestScenario, spec.scenario)
    settings.mode = lg.TestMode.PerformanceOnly
    settings.min_duration_ms = int(spec.min_duration_s * 1000)
    settings.min_query_count = spec.min_queries
    settings.schedule_rng_seed = spec.seed
    # Token latencies (TTFT/TPOT) are what the Server scenario constrains; SingleStream's metric is
    # the early-stopping estimate of whole-query latency, and Offline is throughput only.
    settings.use_token_latencies = spec.scenario == "Server"
    if spec.scenario == "Server":
        settings.server_target_qps = spec.target_qps
        settings.ttft_latency = int(spec.ttft_ms * 1_000_000)
        settings.tpot_latency = int(spec.tpot_ms * 1_000_000)
    elif spec.scenario == "Offline":
        settings.offline_expected_qps = spec.target_qps
    return settings


def find_peak_qps(
    run: Callable[[float], ValidationResult], low: float, high: float, max_runs: int
) -> tuple[float | None, list[ValidationResult]]:
    """Bisect the Server rate: the highest tried rate whose run was VALID, within ``max_runs``.

    VALID is our verdict: a rate at which queries fail is never the peak.
    """
    best: float | None = None
    results: list[ValidationResult] = []
    for _ in range(max_runs):
        rate = (low + high) / 2 if best is not None or results else high
        result = run(rate)
        results.append(result)
        if result.valid:
            best, low = rate, rate
        else:
            high = rate
        if high - low < 0.05 * high:
            break
    return best, results


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: a short LoadGen run (SingleStream unless told otherwise)."""
    import tempfile

    from wizard.probes.http.measure_probe import body_hash, request_spec
    from wizard.probes.runner import report_progress

    settings = {"endpoint": "completions", "input_tokens": 64, "max_tokens": 64,
                "shared_prefix_tokens": 0, **params}  # fmt: skip
    request = request_spec(ctx, settings, ctx.model or "")
    spec = ValidationSpec(
        scenario=params.get("scenario", "SingleStream"), target_qps=float(params.get("qps", 1.0)),
        min_duration_s=float(params.get("min_duration_s", 5.0)),
        min_queries=int(params.get("min_queries", 64)),
    )  # fmt: skip
    outdir = Path(params.get("outdir") or tempfile.mkdtemp(prefix="latency-wizard-loadgen-"))
    url = ctx.url_for(params.get("path", "direct"))
    began, done, failed = time.monotonic(), 0, 0

    def progress(sample: StreamSample) -> None:  # on LoadGen's own thread
        nonlocal done, failed
        done, failed = done + 1, failed + (not sample.ok)
        report_progress(ctx, done, spec.min_queries, failed, began, floor_s=spec.min_duration_s)

    result = await asyncio.to_thread(
        run_validation, url, request, spec, outdir, ctx.headers, timeout_s=ctx.timeout_s,
        on_sample=progress,
    )  # fmt: skip
    report = result.to_dict()
    report["outdir"] = str(outdir)
    # The client's samples of a run whose latencies are evidence (not Offline, nothing failed), so
    # the walk can set the run after its last change beside the one before its first (P6.5).
    measured = replace(result.measurement_spec(request, url), request_body=body_hash(ctx))
    report["fingerprint"] = measured.fingerprint()
    report["measured_spec"] = asdict(measured)
    ok = [s for s in result.samples if s.ok] if report["latency_evidence"] else []
    report["values"] = {
        "ttft_ms": [s.ttft_ms for s in ok if s.ttft_ms is not None],
        "tpot_ms": [s.tpot_ms for s in ok if s.tpot_ms is not None],
    }
    return report
