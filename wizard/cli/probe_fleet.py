"""``probe fleet``: every vLLM replica over a window, read through Prometheus."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.inputs import chosen_language, lang_argument, seconds

FLEET_DESCRIPTION = """\
Read vLLM's metrics for every replica Prometheus scrapes (the instance label), over the incident
window: requests and their share, waiting requests (average and peak), preemptions (increase over
the window, never the lifetime counter), KV-cache peak, and server-side TTFT, ITL and queue-time
percentiles quoted with the bucket they fall in ("p95 between 10 and 25 ms": a histogram knows no
more; histogram_quantile's interpolation is shown only as a hint). Both vLLM metric generations are
read. A replica differs when it stands out from the others by more than three times their own
spread (never less than the signal's resolution: Poisson noise of a count, a gauge's fluctuation,
one whole bucket for a percentile); the one to look at is named with its URL from Prometheus'
targets. Exit status: 0 when no replica differs, 1 when one does, 2 on usage errors, and 1 with
one line when Prometheus cannot be read."""


def register(probes: Any) -> None:
    """Add ``fleet`` to the ``probe`` sub-commands."""
    fleet = probes.add_parser(
        "fleet", help="every replica through Prometheus: who differs, and why",
        description=FLEET_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    fleet_arguments(fleet, required=True)
    fleet.add_argument("--timeout", type=seconds, default=30.0, help="seconds to wait (default 30)")
    fleet.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(fleet, "the replicas and who differs")
    fleet.set_defaults(handler=run_fleet)


def fleet_arguments(parser: argparse.ArgumentParser, required: bool) -> None:
    """--prometheus, --window and --job (shared with ``run``)."""
    parser.add_argument(
        "--prometheus", required=required, metavar="URL",
        help="base URL of the Prometheus server that scrapes the replicas",
    )  # fmt: skip
    parser.add_argument(
        "--window", default="5m", help="the incident window, a Prometheus duration (default 5m)"
    )
    parser.add_argument(
        "--job", help="only this scrape job (default: every job with vllm:* series)"
    )


def read(args: argparse.Namespace) -> dict[str, Any]:
    """The fleet report for the parsed flags (UsageError / WizardError with one line)."""
    import httpx

    from wizard import aio
    from wizard.probes.fleet import FleetQuery, read_fleet

    query = FleetQuery(args.prometheus, args.window, args.job)

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, connect=10.0)) as client:
            return await read_fleet(client, query)

    return aio.run(go())


def run_fleet(args: argparse.Namespace) -> int:
    """Print the fleet report."""
    import json

    from wizard.render import console, fleet_view

    report = read(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console().print(fleet_view(report, chosen_language(args)))
    return 1 if report["differing"] else 0
