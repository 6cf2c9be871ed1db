"""``probe fleet``: every vLLM replica over a window, read through Prometheus."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import chosen_language, lang_argument, seconds

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(probes: Any, words: Words) -> None:
    """Add ``fleet`` to the ``probe`` sub-commands."""
    fleet = probes.add_parser(
        "fleet", help=words("probe.fleet.help"), description=words("probe.fleet.description"),
        raw_description=True,
    )  # fmt: skip
    fleet_arguments(fleet, words, required=True)
    fleet.add_argument("--timeout", type=seconds, default=30.0, help=words("probe.fleet.timeout"))
    fleet.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(fleet, words, "probe.fleet.shown")
    fleet.set_defaults(handler=run_fleet)


def fleet_arguments(parser: Any, words: Words, required: bool) -> None:
    """--prometheus, --window and --job (shared with ``run``)."""
    parser.add_argument("--prometheus", required=required, metavar="URL",
                        help=words("fleet.prometheus"))  # fmt: skip
    parser.add_argument("--window", default="5m", help=words("fleet.window"))
    parser.add_argument("--job", help=words("fleet.job"))


def read(args: argparse.Namespace) -> dict[str, Any]:
    """The fleet report for the parsed flags (UsageError / WizardError with one line)."""
    import httpx

    from wizard.probes.fleet import FleetQuery, read_fleet
    from wizard.ui import aio

    query = FleetQuery(args.prometheus, args.window, args.job)

    async def go() -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=httpx.Timeout(args.timeout, connect=10.0)) as client:
            return await read_fleet(client, query)

    return aio.run(go())


def run_fleet(args: argparse.Namespace) -> int:
    """Print the fleet report."""
    import json

    from wizard.ui.render import console, fleet_view

    report = read(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console().print(fleet_view(report, chosen_language(args)))
    return 1 if report["differing"] else 0
