"""``latency-wizard triage``: the first answer in seconds, from what the server already says.

Passive only: GETs of ``/health``, ``/version``, ``/v1/models`` and ``/metrics`` (several
scrapes), the files given (the vLLM log, the nginx config, nginx's access log) and Prometheus'
history. It sends no completion request.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import check_base_url, chosen_language, seconds

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(subparsers: Any, words: Words) -> None:
    """Add ``triage``."""
    from wizard.cli.probe_fleet import fleet_arguments

    triage = subparsers.add_parser(
        "triage", help=words("triage.help"), description=words("triage.description"),
        raw_description=True,
    )  # fmt: skip
    triage.add_argument("--target", required=True, metavar="URL", help=words("triage.target"))
    triage.add_argument("--proxy", metavar="URL", help=words("run.proxy"))
    triage.add_argument("--nginx-conf", metavar="PATH", help=words("run.nginx_conf"))
    triage.add_argument("--nginx-access-log", metavar="FILE", help=words("triage.access_log"))
    triage.add_argument("--vllm-log", metavar="FILE", help=words("run.vllm_log"))
    fleet_arguments(triage, words, required=False)
    triage.add_argument("--scrapes", type=int, default=3, help=words("triage.scrapes"))
    triage.add_argument("--interval", type=seconds, default=2.0, help=words("triage.interval"))
    triage.add_argument("--timeout", type=seconds, default=5.0, help=words("triage.timeout"))
    triage.add_argument("--api-key-env", help=words("api_key_env"))
    triage.add_argument("--json", action="store_true", help=words("json"))
    triage.add_argument("--format", choices=["rich", "text"], default="rich",
                        help=words("triage.format"))  # fmt: skip
    triage.add_argument("--lang", choices=["en", "zh"],
                        help=words("lang", shown=words("triage.shown")))  # fmt: skip
    triage.set_defaults(handler=run_triage)


def _check(args: argparse.Namespace) -> None:
    from wizard.errors import UsageError

    check_base_url(args.target)
    if args.proxy:
        check_base_url(args.proxy)
    if not 2 <= args.scrapes <= 20:
        raise UsageError.said("error.triage_scrapes", n=args.scrapes)


def _files(args: argparse.Namespace) -> dict[str, Any]:
    """The files given, read (a file that cannot be read is a one-line usage error)."""
    from pathlib import Path

    from wizard.errors import UsageError

    found: dict[str, Any] = {"log": None, "nginx": None, "access": None}
    for name in ("vllm_log", "nginx_conf", "nginx_access_log"):
        path = getattr(args, name)
        if path and not Path(path).exists():
            raise UsageError.cannot_read(path, FileNotFoundError(2, "No such file or directory"))
    if args.vllm_log:
        from wizard.errors import WizardError
        from wizard.probes.readers import vllm_logs

        try:
            found["log"] = vllm_logs.read_path(args.vllm_log)
        except WizardError as exc:  # a folder without a log: as a file that cannot be read
            raise UsageError(str(exc), exc.texts) from None
    if args.nginx_conf:
        from wizard.probes.readers import nginx_config

        found["nginx"] = nginx_config.analyse(Path(args.nginx_conf))
    if args.nginx_access_log:
        from wizard.probes.readers import nginx_access

        try:
            found["access"] = nginx_access.read_path(args.nginx_access_log)
        except OSError as exc:
            raise UsageError.cannot_read(args.nginx_access_log, exc) from None
    return found


def read(args: argparse.Namespace) -> dict[str, Any]:
    """Every piece of evidence and the verdict, as data."""
    import time

    import httpx

    from wizard import triage
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.measure import waterfall
    from wizard.ui import aio

    began = time.monotonic()
    _check(args)
    files = _files(args)
    headers = auth_headers(api_key_from_env(args.api_key_env))

    async def go() -> tuple[dict[str, Any], dict[str, Any] | None]:
        import asyncio

        from wizard.probes.readers import passive

        timeout = httpx.Timeout(args.timeout, connect=min(args.timeout, 3.0))
        async with httpx.AsyncClient(timeout=timeout) as client:
            observing = passive.observe(client, args.target, headers, args.scrapes, args.interval)
            if not args.prometheus:
                return await observing, None
            observed, history = await asyncio.gather(observing, _history(client, args))
            return observed, history

    observed, history = aio.run(go())
    report = triage.classify(
        observed, target=args.target, proxy=args.proxy, log=files["log"],
        log_path=args.vllm_log, nginx=files["nginx"], nginx_path=args.nginx_conf,
    )  # fmt: skip
    report["evidence"] = {
        "server": observed,
        "log": triage.log_summary(files["log"]),
        "nginx_findings": None if files["nginx"] is None else files["nginx"].get("findings"),
        "access_log": files["access"],
    }
    report["waterfall"] = waterfall.build(observed.get("delta"), files["access"])
    triage.with_log(history, args.target, report["evidence"]["log"])
    report["history"] = history
    report["elapsed_s"] = round(time.monotonic() - began, 2)
    return report


async def _history(client: Any, args: argparse.Namespace) -> dict[str, Any]:
    """Prometheus' window, or why it could not be read (triage goes on without it)."""
    from wizard.errors import WizardError
    from wizard.probes.fleet import FleetQuery
    from wizard.probes.fleet.history import read_history

    query = FleetQuery(args.prometheus, args.window, args.job)
    try:
        return await read_history(client, query)
    except WizardError as exc:
        return {"available": False, "error": str(exc)}


def run_triage(args: argparse.Namespace) -> int:
    """Print the triage (rich, plain text for the incident channel, or JSON)."""
    import json

    from wizard.auth import api_key_from_env, url_secrets
    from wizard.record.transcript import Redactor

    if args.prometheus:
        from wizard.probes.fleet import FleetQuery

        FleetQuery(args.prometheus, args.window, args.job)  # a bad flag before any request
    report = read(args)
    lang = chosen_language(args)
    mask = Redactor([api_key_from_env(args.api_key_env),
                     *url_secrets(args.target, args.proxy, args.prometheus)])  # fmt: skip
    if args.json:
        print(mask(json.dumps(report, indent=2)))
    elif args.format == "text":
        from wizard.ui.render_triage import triage_lines

        print(mask("\n".join(triage_lines(report, lang))))
    else:
        from wizard.ui.render import console
        from wizard.ui.render_triage import triage_view

        console().print(triage_view(report, lang, mask))
    # 3 when a class is named, as `run` ends 3 when a cause remains; 0 when none is.
    return 0 if report["class"] == "none" else 3
