"""``latency-wizard probe NAME``: run one probe on its own and print its result (``--json``)."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.inputs import check_base_url, chosen_language, lang_argument, seconds

DEFINITIONS = """\
definitions:
  TTFT  send -> first SSE event carrying output (content, reasoning or tool call); the role-only
        first chat chunk and usage-only chunks never count
  TPOT  (last output event - first output event) / (output tokens - 1)
  ITL   each gap between consecutive output events (an event may carry several tokens; the
        per-token split uses vLLM's continuous usage counts when the server sends them)
  E2E   send -> last output event
  output tokens come from the server's usage (always requested); without it the probe counts output
  events and flags the count as an estimate. Requests ask for a fixed length: max_tokens plus vLLM's
  ignore_eos, temperature 0, a prompt of --input-tokens words.

The API key is read from $VLLM_API_KEY (then $OPENAI_API_KEY) or the variable --api-key-env names."""

STREAM_DESCRIPTION = f"""\
Send streamed generation requests one after another and time them event by event.

{DEFINITIONS}
Exit status: 0 when at least one request succeeded, 1 when none did, 2 on usage errors."""

LOAD_DESCRIPTION = f"""\
Closed-loop load: keep --concurrency identical streams in flight for --requests requests (or for
--duration seconds), one connection per stream. Cold requests (each connection's first, and the
first --warmup sent) are reported apart from steady state; latencies start when a request's first
byte leaves, with pool wait, connect and TLS reported apart. The client checks itself (event-loop
lag, its own CPU, how long requests waited to leave); when it is saturated the result says so
(cause client_saturated) instead of blaming the server.

{DEFINITIONS}
Exit status: 0 when at least one steady request succeeded, 1 when none did, 2 on usage errors."""


VALIDATE_DESCRIPTION = f"""\
Validate under standardised load with the real MLPerf LoadGen (pip install mlcommons-loadgen):
  SingleStream  one query after another; reports the 90th-percentile early-stopping estimate
  Server        Poisson arrivals at --qps from a fixed seed (identical schedule before and after a
                change); VALID only if TTFT/TPOT p99 meet the bounds (--ttft-ms/--tpot-ms or
                --preset) and early stopping is satisfied; --find-peak bisects for the highest rate
  Offline       everything at once; throughput only, never evidence of online latency
Never compare results across scenarios. LoadGen's logs go to --outdir.

LoadGen judges timing only. A run is VALID when LoadGen said VALID and every query succeeded;
any failed query makes it INVALID (the reasons say how many and the first error), and a run in
which no query succeeded is ERROR: nothing was measured. LoadGen's own INVALID reasons follow.

{DEFINITIONS}
Exit status: 0 VALID (with --find-peak: a VALID rate was found); 1 INVALID (or no VALID rate
found); 3 ERROR: nothing could be measured (every query failed, or the model list could not be
read); 2 on usage errors."""


PROXY_DESCRIPTION = """\
Send the same streamed request to vLLM directly and through the proxy (nginx), --repeat times each,
and compare: TTFT inflation, events per network read, whether the response headers were held back
with the first burst, whether the whole stream was held (gzip with buffering), and streams cut
short (status 200 without [DONE]: a proxy_read_timeout shorter than a silence).
Exit status: 0 when the proxy passes events through, 1 when it buffers or cuts, 2 on usage errors."""

CONFIG_DESCRIPTION = """\
Read an nginx config (a file with its includes, a folder, or saved `nginx -T` output; a pasted
location block or a template with ${VAR} placeholders works too) and report, for every location
that proxies, the effective proxy_buffering (and where it was set), X-Accel-Buffering handling,
timeouts, proxy_http_version, gzip on text/event-stream, proxy_cache and buffer sizes, with the
exact directive to change. Exit status: 0 without findings, 1 with findings or a syntax error."""


METRICS_DESCRIPTION = """\
Read vLLM's Prometheus metrics (prometheus_client's parser) in either naming generation: current
(kv_cache_usage_perc, inter_token_latency_seconds) or 2024-era (gpu_cache_usage_perc,
time_per_output_token_seconds). Reports KV-cache usage (0..1), preemptions, running and waiting
requests, engines, server-side TTFT/ITL/queue means from the histograms, and the KV capacity from
cache_config_info. A server started with --disable-log-stats has no vllm:* series: that is said,
not reported as zeros. Server-side TTFT counts from the API server's arrival: client TTFT minus it
is proxy + network + request parsing time. A paste works (--file): the shell prompt, curl's output
and headers around the exposition are skipped and said so in 'notes'."""


def register(subparsers: Any) -> None:
    """Add ``probe`` and its probes."""
    from wizard.cli import probe_fleet, probe_host, probe_replicas

    probe = subparsers.add_parser(
        "probe", help="run one probe on its own (see 'probe stream --help')"
    )
    probes = probe.add_subparsers(dest="probe", metavar="PROBE", required=True)
    stream = probes.add_parser(
        "stream", help="time streamed requests (TTFT, TPOT, ITL, E2E)", description=STREAM_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _request_arguments(stream)
    stream.add_argument(
        "--repeat", type=int, default=5, help="requests, one after another (default 5)"
    )
    stream.set_defaults(handler=run_stream)
    load = probes.add_parser(
        "load", help="closed-loop load at a fixed concurrency", description=LOAD_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _request_arguments(load)
    load.add_argument("--concurrency", type=int, default=8, help="streams in flight (default 8)")
    amount = load.add_mutually_exclusive_group()
    amount.add_argument("--requests", type=int, help="steady-state requests (default 32)")
    amount.add_argument("--duration", type=float, help="seconds of steady-state load instead")
    load.add_argument(
        "--warmup",
        type=int,
        default=2,
        help="cold requests beyond each connection's first (default 2)",
    )
    load.set_defaults(handler=run_load_command)
    validate = probes.add_parser(
        "validate", help="MLPerf LoadGen scenarios (SingleStream, Server, Offline)",
        description=VALIDATE_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _request_arguments(validate)
    validate.add_argument(
        "--scenario", required=True, choices=["SingleStream", "Server", "Offline"]
    )
    validate.add_argument(
        "--qps", type=float, default=1.0, help="Server/Offline target rate (default 1)"
    )
    validate.add_argument(
        "--preset", help="MLPerf model preset for TTFT/TPOT bounds, e.g. llama3_1-8b"
    )
    validate.add_argument("--ttft-ms", type=float, help="Server TTFT p99 bound (default 2000)")
    validate.add_argument("--tpot-ms", type=float, help="Server TPOT p99 bound (default 100)")
    validate.add_argument("--min-duration", type=float, default=10.0, help="seconds (default 10)")
    validate.add_argument("--min-queries", type=int, default=64, help="queries (default 64)")
    validate.add_argument("--max-in-flight", type=int, default=64, help="concurrent requests cap")
    validate.add_argument(
        "--find-peak", action="store_true", help="Server: bisect for the peak rate"
    )
    validate.add_argument(
        "--max-runs", type=int, default=5, help="--find-peak: most runs (default 5)"
    )
    validate.add_argument(
        "--outdir", default="mlperf-logs", help="LoadGen log folder (default mlperf-logs)"
    )
    validate.set_defaults(handler=run_validate)
    proxy = probes.add_parser(
        "proxy", help="direct vs proxy: the burst signature of a buffering proxy",
        description=PROXY_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    _request_arguments(proxy, old_spelling="--direct")
    via = proxy.add_mutually_exclusive_group(required=True)
    via.add_argument("--proxy", help="base URL of the same service through the proxy")
    via.add_argument("--via", dest="proxy", help=argparse.SUPPRESS)  # the old spelling
    proxy.add_argument("--repeat", type=int, default=3, help="requests per path (default 3)")
    proxy.set_defaults(handler=run_proxy)
    config = probes.add_parser(
        "nginx-config", help="static analysis of an nginx config for token streaming",
        description=CONFIG_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    config.add_argument("path", help="nginx.conf, a folder of configs, or saved `nginx -T` output")
    config.add_argument(
        "--worst-gap-ms", type=float, help="the longest silence seen (TTFT or gap) under load"
    )
    config.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(config, "the locations and findings")
    config.set_defaults(handler=run_nginx_config)
    metrics = probes.add_parser(
        "metrics", help="vLLM's /metrics: KV cache, preemptions, queue, server-side TTFT/ITL",
        description=METRICS_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    source = metrics.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--target", help="base URL of the server (its /metrics is read) or the /metrics URL"
    )
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    source.add_argument("--url", dest="target", help=argparse.SUPPRESS)
    source.add_argument("--file", help="a saved /metrics text")
    metrics.add_argument(
        "--timeout", type=seconds, default=10.0, help="seconds to wait (default 10)"
    )
    metrics.add_argument("--save", metavar="FILE", help="also write the raw /metrics text to FILE")
    metrics.add_argument(
        "--since", metavar="FILE",
        help="a /metrics text saved earlier (--save, or curl): report what changed since then "
        "(requests, preemptions and their rate, tokens, server-side TTFT/ITL/queue/prefill/decode "
        "means of that window)",
    )  # fmt: skip
    metrics.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(metrics, "what was read, one fact a line")
    metrics.set_defaults(handler=run_metrics)
    endpoints = probes.add_parser(
        "endpoints", help="health, version, models, auth, completions vs chat",
        description="Check the entry point: /health, /version, /v1/models (model, max_model_len), "
        "whether the API key is needed and accepted (never printed), and whether /v1/completions "
        "and /v1/chat/completions answer (a missing chat template is recognised).",
    )  # fmt: skip
    endpoints.add_argument("--target", required=True, help="base URL of the server")
    endpoints.add_argument(
        "--timeout", type=seconds, default=10.0, help="seconds to wait (default 10)"
    )
    endpoints.add_argument("--api-key-env", help="environment variable holding the API key")
    endpoints.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(endpoints, "what was found, one fact a line")
    endpoints.set_defaults(handler=run_endpoints)
    log = probes.add_parser(
        "vllm-log", help="read a vLLM start-up/runtime log (any era, any prefix)",
        description="Read a vLLM log (a file, or standard input with '-'), or several replicas' "
        "logs at once (a folder of them, or several pods' `kubectl logs --prefix` in one file, "
        "told apart by their [pod/NAME/CONTAINER] prefixes: each replica is read on its own, "
        "listed under 'replicas', and the settings that differ between them under "
        "'differing_args'): KV cache size and "
        "concurrency, GPU blocks, TP/PP, max_model_len, batch limits, chunked prefill, enforce_eager, "
        "the periodic stats lines, preemptions, and known errors (OOM, KV cache smaller than "
        "max_model_len in all three wordings, chat template, chunked-prefill budget, TP heads). "
        "Every era from 2023 V0 to 0.34, any line prefix; the engine generation from each era's marks; "
        "arguments also from a pasted `vllm serve`/api_server command line, a Kubernetes manifest or "
        "a Namespace(...) dump; several runs in one paste are told apart, listed under 'runs', and "
        "the last one is reported. What is skipped or unreadable is in 'notes'. Reads line by "
        "line: a 1 GB log stays in bounded memory.",
    )  # fmt: skip
    log.add_argument(
        "file", nargs="?", default="-",
        help="the log file, a folder of replicas' logs, or - for standard input",
    )  # fmt: skip
    log.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(log, "what was read as sentences")
    log.set_defaults(handler=run_vllm_log)
    probe_host.register(probes)
    probe_fleet.register(probes)
    probe_replicas.register(probes)


def _request_arguments(parser: argparse.ArgumentParser, old_spelling: str | None = None) -> None:
    url = parser.add_mutually_exclusive_group(required=True)
    url.add_argument("--target", help="base URL of the server, e.g. http://127.0.0.1:8000")
    if old_spelling:
        # Kept for the scripts that use it (docs/cli.md), out of --help and of the usage line.
        url.add_argument(old_spelling, dest="target", help=argparse.SUPPRESS)
    parser.add_argument("--model", help="model id (default: the first one /v1/models lists)")
    parser.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    parser.add_argument(
        "--input-tokens", type=int, default=32, help="prompt length in words (default 32)"
    )
    parser.add_argument("--max-tokens", type=int, default=64, help="output length (default 64)")
    parser.add_argument(
        "--timeout", type=seconds, default=60.0, help="read timeout in seconds (default 60)"
    )
    parser.add_argument("--api-key-env", help="environment variable holding the API key")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(parser, "the report")


def _check(args: argparse.Namespace, *positive: str) -> None:
    from wizard.errors import UsageError

    for name in ("input_tokens", "max_tokens", *positive):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if not args.target.startswith(("http://", "https://")):
        raise UsageError(f"--target must be an http(s) URL, got {args.target!r}")


def _print(
    report: dict[str, Any],
    args: argparse.Namespace,
    api_key: str | None,
    view: Any,
    soft_wrap: bool = False,
) -> None:
    """The report as JSON (--json) or through ``view``, masked first: the API key, and any
    user:password in the URLs given."""
    import json

    from wizard.auth import url_secrets
    from wizard.transcript import Redactor

    urls = (getattr(args, name, None) for name in ("target", "proxy"))
    text = Redactor([api_key, *url_secrets(*urls)])(json.dumps(report, indent=2))
    if args.json:
        print(text)
    else:
        from wizard.render import console

        console().print(view(json.loads(text), chosen_language(args)), soft_wrap=soft_wrap)


def run_stream(args: argparse.Namespace) -> int:
    """Run the stream probe and print the report."""
    import dataclasses

    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.stream import measure_stream, stream_report
    from wizard.render import stream_table

    _check(args, "repeat")
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)

    async def measure(client: Any, spec: Any) -> list[Any]:
        return [
            await measure_stream(client, args.target, spec, headers) for _ in range(args.repeat)
        ]

    spec, samples = aio.run(_with_client(args, headers, measure))
    report = {"target": args.target, "spec": dataclasses.asdict(spec), **stream_report(samples)}
    _add_served_models(report, report["summary"], args, headers)
    _print(report, args, api_key, stream_table)
    return 0 if report["summary"]["succeeded"] else 1


def run_load_command(args: argparse.Namespace) -> int:
    """Run closed-loop load with live progress and print the report."""
    import dataclasses
    import sys

    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.load import run_load
    from wizard.render import LoadProgressView, load_view

    _check(args, "concurrency", "requests")
    if args.warmup < 0:
        from wizard.errors import UsageError

        raise UsageError("--warmup must be 0 or more")
    if args.duration is not None and args.duration <= 0:
        from wizard.errors import UsageError

        raise UsageError("--duration must be positive")
    requests = args.requests if args.duration is None and args.requests is not None else None
    if args.duration is None and requests is None:
        requests = 32
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)
    view = LoadProgressView(live=sys.stderr.isatty(), lang=chosen_language(args))

    async def measure(client: Any, spec: Any) -> Any:
        return await run_load(
            args.target, spec, concurrency=args.concurrency, requests=requests,
            duration_s=args.duration, warmup=args.warmup, headers=headers,
            timeout_s=args.timeout, on_progress=view.update,
        )  # fmt: skip

    with view:
        spec, result = aio.run(_with_client(args, headers, measure))
    report = {"target": args.target, "spec": dataclasses.asdict(spec), **result.to_dict()}
    _add_served_models(report, report["steady"]["summary"], args, headers)
    _print(report, args, api_key, load_view)
    return 0 if report["steady"]["summary"]["succeeded"] else 1


def _add_served_models(
    report: dict[str, Any],
    summary: dict[str, Any],
    args: argparse.Namespace,
    headers: dict[str, str],
) -> None:
    """When every request of a --model run was refused with 404, the models the server does serve
    (``served_models``): vLLM's message names them only in some releases."""
    import contextlib

    import httpx

    from wizard import aio
    from wizard.errors import WizardError
    from wizard.probes.endpoints import served_models

    if not args.model or summary["succeeded"] or "http_404" not in summary["errors"]:
        return

    async def listed() -> list[str]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, connect=10.0)) as client:
            return await served_models(client, args.target, headers)

    # When the list cannot be read either, the server's own message is all there is.
    with contextlib.suppress(WizardError):
        report["served_models"] = aio.run(listed())


async def _with_client(
    args: argparse.Namespace, headers: dict[str, str], measure: Any
) -> tuple[Any, Any]:
    """Resolve the model (asking the server when --model is absent), build the spec, measure."""
    import httpx

    from wizard.probes.endpoints import served_model
    from wizard.probes.lean_http import timing_client
    from wizard.probes.stream import RequestSpec

    async with timing_client(timeout=httpx.Timeout(args.timeout, connect=10.0)) as client:
        model = args.model or await served_model(client, args.target, headers)
        spec = RequestSpec(
            model=model,
            endpoint=args.endpoint,
            input_tokens=args.input_tokens,
            max_tokens=args.max_tokens,
        )
        return spec, await measure(client, spec)


async def _metrics_text(url: str, timeout_s: float) -> str:
    """The body of ``url`` within its deadline and size bound; a one-line error otherwise."""
    import httpx

    from wizard.errors import WizardError
    from wizard.probes.bounded import BoundedRequestError, fetch
    from wizard.probes.reach import explain_texts

    async with httpx.AsyncClient(timeout=timeout_s) as client:
        try:
            status, text = await fetch(client, "GET", url)
        except httpx.TimeoutException:
            raise WizardError(f"{url} did not answer within {timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise WizardError.said(
                "error.cannot_read", path=url, why=explain_texts(exc, url)
            ) from None
        except BoundedRequestError as exc:
            raise WizardError(str(exc)) from None
    if status != 200:
        raise WizardError(f"{url} answered HTTP {status}")
    return text


# `probe validate`'s exit status when nothing could be measured (ERROR), apart from INVALID (1):
# a script can tell "the server fails the bar" from "the run measured nothing".
VALIDATE_NOTHING_MEASURED = 3


def run_validate(args: argparse.Namespace) -> int:
    """Run LoadGen (optionally a bounded peak search); print VALID/INVALID/ERROR with the reasons."""
    import time
    from pathlib import Path

    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.errors import UsageError, WizardError
    from wizard.probes.validate import PRESETS, ValidationSpec, find_peak_qps, run_validation
    from wizard.render import validation_view

    _check(args, "min_queries", "max_in_flight", "max_runs")
    if args.qps <= 0 or args.min_duration <= 0:
        raise UsageError("--qps and --min-duration must be positive")
    ttft, tpot = 2000.0, 100.0
    if args.preset:
        if args.preset not in PRESETS:
            raise UsageError(f"unknown preset {args.preset!r}; choose one of: {', '.join(PRESETS)}")
        ttft, tpot = PRESETS[args.preset]
    ttft = args.ttft_ms or ttft
    tpot = args.tpot_ms or tpot
    if args.find_peak and args.scenario != "Server":
        raise UsageError("--find-peak applies to the Server scenario only")
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)

    async def resolve(client: Any, spec: Any) -> Any:
        return spec

    try:
        request, _ = aio.run(_with_client(args, headers, resolve))
    except WizardError as exc:  # the model list could not be read: nothing was measured
        if not isinstance(exc, UsageError):
            exc.exit_code = VALIDATE_NOTHING_MEASURED
        raise
    outdir = Path(args.outdir) / time.strftime("%Y%m%dT%H%M%S")

    def run(qps: float) -> Any:
        spec = ValidationSpec(
            scenario=args.scenario, target_qps=qps, ttft_ms=ttft, tpot_ms=tpot,
            min_duration_s=args.min_duration, min_queries=args.min_queries,
            max_in_flight=args.max_in_flight,
        )  # fmt: skip
        return run_validation(
            args.target, request, spec, outdir / f"qps-{qps:g}", headers, args.timeout
        )

    if args.find_peak:
        peak, results = find_peak_qps(run, args.qps / 10, args.qps, args.max_runs)
    else:
        peak, results = None, [run(args.qps)]
    report = {
        "target": args.target,
        "outdir": str(outdir),
        "runs": [r.to_dict() for r in results],
        "peak_qps": peak,
    }
    _print(report, args, api_key, validation_view)
    if peak is not None or results[-1].valid:
        return 0
    if all(r.result == "ERROR" for r in results):
        return VALIDATE_NOTHING_MEASURED
    return 1


def run_proxy(args: argparse.Namespace) -> int:
    """Compare the two paths and print the verdict."""
    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.proxy_compare import compare_paths
    from wizard.render import proxy_view

    for url in (args.target, args.proxy):
        check_base_url(url)
    _check(args, "repeat")
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)

    async def measure(client: Any, spec: Any) -> Any:
        return await compare_paths(args.target, args.proxy, spec, repeat=args.repeat, headers=headers,
                                   timeout_s=args.timeout)  # fmt: skip

    _, report = aio.run(_with_client(args, headers, measure))
    _print(report, args, api_key, proxy_view)
    return 1 if report["buffering_suspected"] or report["truncated"] else 0


def run_nginx_config(args: argparse.Namespace) -> int:
    """Analyse a config; a syntax error is one line with file and line."""
    import json
    from pathlib import Path

    from wizard.probes.nginx_config import analyse
    from wizard.render import console, nginx_config_view

    report = analyse(Path(args.path), args.worst_gap_ms)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console().print(nginx_config_view(report, chosen_language(args)))
    return 1 if report["findings"] or report["errors"] else 0


def run_metrics(args: argparse.Namespace) -> int:
    """One snapshot from a URL or a file."""
    import json
    import time
    from pathlib import Path

    from wizard import aio
    from wizard.errors import UsageError, WizardError
    from wizard.probes.metrics import delta, parse

    def read_text(path: str) -> str:
        try:
            text = Path(path).read_bytes().decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError.cannot_read(path, exc) from None
        if not text.strip():
            raise WizardError(f"{path} is empty")
        return text

    before = parse(read_text(args.since)) if args.since else None
    if args.file:
        text = read_text(args.file)
    else:
        url = args.target.rstrip("/")
        url = url if url.endswith("/metrics") else url + "/metrics"
        text = aio.run(_metrics_text(url, args.timeout))
    now = parse(text)
    if args.save:
        try:
            Path(args.save).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write {args.save}: {exc.strerror}") from None
    snapshot = now.to_dict()
    if before is not None:
        # The saved file's modification time is when it was scraped (--save, or curl -o).
        taken_at = Path(args.file).stat().st_mtime if args.file else time.time()
        window = taken_at - Path(args.since).stat().st_mtime
        snapshot["since"] = delta(before, now, window if window > 0 else None)
    lang = chosen_language(args)
    if args.json:
        print(json.dumps(snapshot, indent=2))
    elif lang != "en":  # labelled facts; English keeps the key lines scripts read
        from rich.text import Text

        from wizard.render import console
        from wizard.render_facts import fact_lines

        console().print(Text("\n".join(fact_lines(snapshot, lang))), soft_wrap=True)
    else:
        for key, value in snapshot.items():
            if key not in ("since", "notes_texts"):  # the notes' other languages: in --json
                print(f"{key}: {value}")
        for key, value in snapshot.get("since", {}).items():
            print(f"since {args.since}: {key}: {value}")
    return 0


def run_endpoints(args: argparse.Namespace) -> int:
    """Check the entry point and print what was found."""
    from rich.text import Text

    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.cli.run import preflight
    from wizard.probes.endpoints import probe
    from wizard.probes.runner import ProbeContext

    preflight(args.target, timeout_s=args.timeout, log_hint="'latency-wizard probe vllm-log FILE'")
    api_key = api_key_from_env(args.api_key_env)
    ctx = ProbeContext(target=args.target, headers=auth_headers(api_key), timeout_s=args.timeout)
    facts = aio.run(probe(ctx, {}))

    def view(shown: dict[str, Any], lang: str) -> Text:
        if lang != "en":
            from wizard.render_facts import fact_lines

            return Text("\n".join(fact_lines(shown, lang)))
        return Text("\n".join(f"{key}: {value}" for key, value in shown.items()))

    _print(facts, args, api_key, view, soft_wrap=True)  # one line per fact, as scripts read it
    return 0 if facts.get("completions_ok") or facts.get("chat_ok") else 1


def run_vllm_log(args: argparse.Namespace) -> int:
    """Parse the log and print the contract keys."""
    import json
    import sys
    from pathlib import Path

    from wizard.cli.inputs import text_input
    from wizard.errors import UsageError, WizardError
    from wizard.probes import vllm_logs
    from wizard.render_events import log_line
    from wizard.terminal import printable
    from wizard.words import say

    if args.file != "-" and Path(args.file).is_dir():
        try:
            report = vllm_logs.read_path(args.file)
        except WizardError as exc:  # as a file that cannot be read: a usage error
            raise UsageError(str(exc)) from None
    else:
        with text_input(args.file) as handle:
            report = vllm_logs.read_stream(handle, args.file)
    # The reader notes when no line of the input looked like vLLM's (a wrong file, an empty paste).
    recognised = "note" not in report
    lang = chosen_language(args)
    if args.json:
        print(json.dumps(report, indent=2))
    elif recognised and lang != "en":  # the walk's own sentences; English keeps the key lines
        print(printable(log_line(vllm_logs.log_facts(report, args.file), lang, every_note=True)))
    elif recognised:
        for key, value in report.items():
            if key not in ("runs", "stats", "replicas"):
                print(printable(f"{key}: {value}"))
        print(printable(_vllm_log_summary(report)))
        for replica in report.get("replicas", []):
            print(printable(_replica_line(replica)))
    if recognised:
        return 0
    name = say("log.stdin", lang) if args.file == "-" else args.file
    print(say("log.not_a_log", lang, name=name, lines=report["lines"]), file=sys.stderr)
    return 1


def _replica_line(report: dict[str, Any]) -> str:
    """One replica of several: its settings, start-up and errors in a line."""
    errors = ", ".join(f"{e['kind']} (line {e['line']})" for e in report["errors"][:5]) or "none"
    return (
        f"replica {report['replica']}: vLLM {report['version']}, max_num_seqs "
        f"{report['max_num_seqs']}, max_model_len {report['max_model_len']}, KV cache "
        f"{report['kv_cache_tokens']} tokens, start-up {report['startup_s']} s, "
        f"{report['lines']} lines, errors: {errors}"
    )


def _vllm_log_summary(report: dict[str, Any]) -> str:
    """Start-up and stats in two lines: where start-up came from, the KV device's usage peak."""
    timings = report.get("startup_timings_s")
    logged = f"logged timings {timings} s" if timings is not None else "no timings logged"
    if report.get("startup_from") == "timestamps":
        startup = (f"start-up: {report['startup_s']} s (first line {report['first_timestamp']} to ready "
                   f"at line {report['ready_at_line']}; {logged})")  # fmt: skip
    elif report.get("server_ready"):
        startup = f"start-up: {report['startup_s']} s from the logged timings (ready at line {report['ready_at_line']})"
    else:
        startup = f"start-up: no ready line in this run ({logged})"
    stats = report.get("stats") or []
    details = []
    if stats:
        device = f"{report['kv_cache_device']} " if report.get("kv_cache_device") else ""
        details.append(
            f"{device}KV cache usage max {max(s['gpu_kv_cache_usage_pct'] for s in stats)}%"
        )
        rates = [s["prefix_cache_hit_rate_pct"] for s in stats if "prefix_cache_hit_rate_pct" in s]
        if rates:
            details.append(f"prefix cache hit rate last {rates[-1]}%")
    shown = f" ({', '.join(details)})" if details else ""
    return f"{startup}\nstats lines: {report['stats_total']}{shown}, runs: {len(report['runs'])}"
