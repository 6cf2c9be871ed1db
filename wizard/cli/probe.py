"""``latency-wizard probe NAME``: run one probe on its own and print its result (``--json``)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import check_base_url, chosen_language, lang_argument, seconds

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(subparsers: Any, words: Words) -> None:
    """Add ``probe`` and its probes."""
    from wizard.cli import probe_fleet, probe_host, probe_replicas

    definitions = words("probe.definitions")
    probe = subparsers.add_parser("probe", help=words("probe.help"))
    probes = probe.add_subparsers(dest="probe", metavar="PROBE", required=True)
    stream = probes.add_parser(
        "stream", help=words("probe.stream.help"), raw_description=True,
        description=words("probe.stream.description", definitions=definitions),
    )  # fmt: skip
    _request_arguments(stream, words)
    stream.add_argument("--repeat", type=int, default=5, help=words("probe.stream.repeat"))
    stream.set_defaults(handler=run_stream)
    load = probes.add_parser(
        "load", help=words("probe.load.help"), raw_description=True,
        description=words("probe.load.description", definitions=definitions),
    )  # fmt: skip
    _request_arguments(load, words)
    load.add_argument("--concurrency", type=int, default=8, help=words("probe.load.concurrency"))
    amount = load.add_mutually_exclusive_group()
    amount.add_argument("--requests", type=int, help=words("probe.load.requests"))
    amount.add_argument("--duration", type=float, help=words("probe.load.duration"))
    load.add_argument("--warmup", type=int, default=2, help=words("probe.load.warmup"))
    load.set_defaults(handler=run_load_command)
    validate = probes.add_parser(
        "validate", help=words("probe.validate.help"), raw_description=True,
        description=words("probe.validate.description", definitions=definitions),
    )  # fmt: skip
    _request_arguments(validate, words)
    validate.add_argument(
        "--scenario", required=True, choices=["SingleStream", "Server", "Offline"]
    )
    validate.add_argument("--qps", type=float, default=1.0, help=words("probe.validate.qps"))
    validate.add_argument("--preset", help=words("probe.validate.preset"))
    validate.add_argument("--ttft-ms", type=float, help=words("probe.validate.ttft_ms"))
    validate.add_argument("--tpot-ms", type=float, help=words("probe.validate.tpot_ms"))
    validate.add_argument("--min-duration", type=float, default=10.0,
                          help=words("probe.validate.min_duration"))  # fmt: skip
    validate.add_argument("--min-queries", type=int, default=64,
                          help=words("probe.validate.min_queries"))  # fmt: skip
    validate.add_argument("--max-in-flight", type=int, default=64,
                          help=words("probe.validate.max_in_flight"))  # fmt: skip
    validate.add_argument(
        "--find-peak", action="store_true", help=words("probe.validate.find_peak")
    )
    validate.add_argument("--max-runs", type=int, default=5, help=words("probe.validate.max_runs"))
    validate.add_argument("--outdir", default="mlperf-logs", help=words("probe.validate.outdir"))
    validate.set_defaults(handler=run_validate)
    proxy = probes.add_parser(
        "proxy", help=words("probe.proxy.help"), description=words("probe.proxy.description"),
        raw_description=True,
    )  # fmt: skip
    _request_arguments(proxy, words, old_spelling="--direct")
    via = proxy.add_mutually_exclusive_group(required=True)
    via.add_argument("--proxy", help=words("probe.proxy.proxy"))
    via.add_argument("--via", dest="proxy", help=argparse.SUPPRESS)  # the old spelling
    proxy.add_argument("--repeat", type=int, default=3, help=words("probe.proxy.repeat"))
    proxy.set_defaults(handler=run_proxy)
    config = probes.add_parser(
        "nginx-config", help=words("probe.nginx_config.help"),
        description=words("probe.nginx_config.description"), raw_description=True,
    )  # fmt: skip
    config.add_argument("path", help=words("probe.nginx_config.path"))
    config.add_argument("--worst-gap-ms", type=float, help=words("probe.nginx_config.worst_gap_ms"))
    config.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(config, words, "probe.nginx_config.shown")
    config.set_defaults(handler=run_nginx_config)
    metrics = probes.add_parser(
        "metrics", help=words("probe.metrics.help"), description=words("probe.metrics.description"),
        raw_description=True,
    )  # fmt: skip
    source = metrics.add_mutually_exclusive_group(required=True)
    source.add_argument("--target", help=words("probe.metrics.target"))
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    source.add_argument("--url", dest="target", help=argparse.SUPPRESS)
    source.add_argument("--file", help=words("probe.metrics.file"))
    metrics.add_argument("--timeout", type=seconds, default=10.0, help=words("seconds_to_wait_10"))
    metrics.add_argument("--save", metavar="FILE", help=words("probe.metrics.save"))
    metrics.add_argument("--since", metavar="FILE", help=words("probe.metrics.since"))
    metrics.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(metrics, words, "probe.metrics.shown")
    metrics.set_defaults(handler=run_metrics)
    endpoints = probes.add_parser(
        "endpoints", help=words("probe.endpoints.help"),
        description=words("probe.endpoints.description"),
    )  # fmt: skip
    endpoints.add_argument("--target", required=True, help=words("probe.endpoints.target"))
    endpoints.add_argument(
        "--timeout", type=seconds, default=10.0, help=words("seconds_to_wait_10")
    )
    endpoints.add_argument("--api-key-env", help=words("api_key_env"))
    endpoints.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(endpoints, words, "probe.endpoints.shown")
    endpoints.set_defaults(handler=run_endpoints)
    log = probes.add_parser(
        "vllm-log",
        help=words("probe.vllm_log.help"),
        description=words("probe.vllm_log.description"),
    )
    log.add_argument("file", nargs="?", default="-", help=words("probe.vllm_log.file"))
    log.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(log, words, "probe.vllm_log.shown")
    log.set_defaults(handler=run_vllm_log)
    probe_host.register(probes, words)
    probe_fleet.register(probes, words)
    probe_replicas.register(probes, words)


def _request_arguments(parser: argparse.ArgumentParser, words: Words,
                       old_spelling: str | None = None) -> None:  # fmt: skip
    url = parser.add_mutually_exclusive_group(required=True)
    url.add_argument("--target", help=words("probe.request.target"))
    if old_spelling:
        # Kept for the scripts that use it (docs/cli.md), out of --help and of the usage line.
        url.add_argument(old_spelling, dest="target", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=words("probe.request.model"))
    parser.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    parser.add_argument("--input-tokens", type=int, default=32,
                        help=words("probe.request.input_tokens"))  # fmt: skip
    parser.add_argument(
        "--max-tokens", type=int, default=64, help=words("probe.request.max_tokens")
    )
    parser.add_argument(
        "--timeout", type=seconds, default=60.0, help=words("probe.request.timeout")
    )
    parser.add_argument("--api-key-env", help=words("api_key_env"))
    parser.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(parser, words, "probe.request.shown")


# A probe's exit status when nothing could be measured (every request failed; LoadGen's ERROR),
# apart from 1 (the server fails the bar, the proxy buffers): a script can tell "the server is
# slow" from "the run measured nothing".
NOTHING_MEASURED = 3


def _check(args: argparse.Namespace, *positive: str) -> None:
    from wizard.errors import UsageError

    for name in ("input_tokens", "max_tokens", *positive):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise UsageError.said("error.at_least_1", flag=f"--{name.replace('_', '-')}")
    if not args.target.startswith(("http://", "https://")):
        raise UsageError.said("error.target_not_http", url=repr(args.target))


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
    from wizard.record.transcript import Redactor

    urls = (getattr(args, name, None) for name in ("target", "proxy"))
    text = Redactor([api_key, *url_secrets(*urls)])(json.dumps(report, indent=2))
    if args.json:
        print(text)
    else:
        from wizard.ui.render import console

        console().print(view(json.loads(text), chosen_language(args)), soft_wrap=soft_wrap)


def run_stream(args: argparse.Namespace) -> int:
    """Run the stream probe and print the report."""
    import dataclasses

    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.http.stream import measure_stream, stream_report
    from wizard.ui import aio
    from wizard.ui.render import stream_table

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
    return 0 if report["summary"]["succeeded"] else NOTHING_MEASURED


def run_load_command(args: argparse.Namespace) -> int:
    """Run closed-loop load with live progress and print the report."""
    import dataclasses
    import sys

    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.http.load import run_load
    from wizard.ui import aio
    from wizard.ui.render import LoadProgressView, load_view

    _check(args, "concurrency", "requests")
    if args.warmup < 0:
        from wizard.errors import UsageError

        raise UsageError.said("error.warmup")
    if args.duration is not None and args.duration <= 0:
        from wizard.errors import UsageError

        raise UsageError.said("error.duration")
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
    return 0 if report["steady"]["summary"]["succeeded"] else NOTHING_MEASURED


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

    from wizard.errors import WizardError
    from wizard.probes.http.endpoints import served_models
    from wizard.ui import aio

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

    from wizard.probes.http.endpoints import served_model
    from wizard.probes.http.lean_http import timing_client
    from wizard.probes.http.stream import RequestSpec

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
    from wizard.probes.http.bounded import BoundedRequestError, fetch
    from wizard.probes.http.reach import explain_texts

    async with httpx.AsyncClient(timeout=timeout_s) as client:
        try:
            status, text = await fetch(client, "GET", url)
        except httpx.TimeoutException:
            raise WizardError.said(
                "error.no_answer_within", url=url, seconds=f"{timeout_s:g}"
            ) from None
        except httpx.HTTPError as exc:
            raise WizardError.said(
                "error.cannot_read", path=url, why=explain_texts(exc, url)
            ) from None
        except BoundedRequestError as exc:
            raise WizardError(str(exc)) from None
    if status != 200:
        raise WizardError.said("error.answered_http", url=url, status=status)
    return text


def run_validate(args: argparse.Namespace) -> int:
    """Run LoadGen (optionally a bounded peak search); print VALID/INVALID/ERROR with the reasons."""
    import time
    from pathlib import Path

    from wizard.auth import api_key_from_env, auth_headers
    from wizard.errors import UsageError, WizardError, require_extra
    from wizard.probes.http.validate import PRESETS, ValidationSpec, find_peak_qps, run_validation
    from wizard.ui import aio

    require_extra("loadgen", "latency-wizard probe validate")  # before a request is sent
    from wizard.ui.render import validation_view

    _check(args, "min_queries", "max_in_flight", "max_runs")
    if args.qps <= 0 or args.min_duration <= 0:
        raise UsageError.said("error.qps_duration")
    ttft, tpot = 2000.0, 100.0
    if args.preset:
        if args.preset not in PRESETS:
            raise UsageError.said(
                "error.unknown_preset", preset=repr(args.preset), presets=", ".join(PRESETS)
            )
        ttft, tpot = PRESETS[args.preset]
    ttft = args.ttft_ms or ttft
    tpot = args.tpot_ms or tpot
    if args.find_peak and args.scenario != "Server":
        raise UsageError.said("error.find_peak")
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)

    async def resolve(client: Any, spec: Any) -> Any:
        return spec

    try:
        request, _ = aio.run(_with_client(args, headers, resolve))
    except WizardError as exc:  # the model list could not be read: nothing was measured
        if not isinstance(exc, UsageError):
            exc.exit_code = NOTHING_MEASURED
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
        return NOTHING_MEASURED
    return 1


def run_proxy(args: argparse.Namespace) -> int:
    """Compare the two paths and print the verdict."""
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.probes.http.proxy_compare import compare_paths
    from wizard.ui import aio
    from wizard.ui.render import proxy_view

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
    if report["nothing_measured"]:
        return NOTHING_MEASURED
    return 1 if report["buffering_suspected"] or report["truncated"] else 0


def run_nginx_config(args: argparse.Namespace) -> int:
    """Analyse a config; a syntax error is one line with file and line."""
    import json
    from pathlib import Path

    from wizard.probes.readers.nginx_config import analyse
    from wizard.ui.render import console, nginx_config_view

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

    from wizard.errors import UsageError, WizardError
    from wizard.files import read_bytes
    from wizard.probes.http.bounded import MAX_BODY_BYTES  # a saved /metrics: as one scraped
    from wizard.probes.readers.metrics import delta, parse
    from wizard.ui import aio

    def read_text(path: str) -> str:
        try:
            text = read_bytes(path, MAX_BODY_BYTES).decode("utf-8", errors="replace")
        except OSError as exc:
            raise UsageError.cannot_read(path, exc) from None
        if not text.strip():
            raise WizardError.said("error.empty_file", path=path)
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
            raise UsageError.os_said("error.cannot_write", exc, path=args.save) from None
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

        from wizard.ui.render import console
        from wizard.ui.render_facts import fact_lines

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

    from wizard.auth import api_key_from_env, auth_headers
    from wizard.cli.run import preflight
    from wizard.probes.http.endpoints import probe
    from wizard.probes.runner import ProbeContext
    from wizard.ui import aio

    preflight(args.target, timeout_s=args.timeout, log_hint="'latency-wizard probe vllm-log FILE'")
    api_key = api_key_from_env(args.api_key_env)
    ctx = ProbeContext(target=args.target, headers=auth_headers(api_key), timeout_s=args.timeout)
    facts = aio.run(probe(ctx, {}))

    def view(shown: dict[str, Any], lang: str) -> Text:
        if lang != "en":
            from wizard.ui.render_facts import fact_lines

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
    from wizard.i18n.words import say
    from wizard.probes.readers import vllm_logs
    from wizard.record.terminal import printable
    from wizard.ui.render_events import log_line

    try:
        if args.file != "-" and Path(args.file).is_dir():
            report = vllm_logs.read_path(args.file)
        else:
            with text_input(args.file) as handle:
                report = vllm_logs.read_stream(handle, args.file)
    except WizardError as exc:  # as a file that cannot be read (or is no text): a usage error
        raise UsageError(str(exc), exc.texts) from None
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
