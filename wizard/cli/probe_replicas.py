"""``probe replicas``: every replica measured directly, against the path through the balancer."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import chosen_language, lang_argument, seconds

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(probes: Any, words: Words) -> None:
    """Add ``replicas`` to the ``probe`` sub-commands."""
    from wizard.cli import probe_fleet

    parser = probes.add_parser(
        "replicas", help=words("probe.replicas.help"),
        description=words("probe.replicas.description"), raw_description=True,
    )  # fmt: skip
    parser.add_argument("--proxy", metavar="URL", help=words("probe.replicas.proxy"))
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    parser.add_argument("--via", dest="proxy", help=argparse.SUPPRESS)
    parser.add_argument("--replica", action="append", metavar="URL",
                        help=words("probe.replicas.replica"))  # fmt: skip
    parser.add_argument("--nginx-conf", help=words("probe.replicas.nginx_conf"))
    probe_fleet.fleet_arguments(parser, words, required=False)
    parser.add_argument("--concurrency", type=int, default=8, help=words("probe.load.concurrency"))
    parser.add_argument("--requests", type=int, default=16, help=words("probe.replicas.requests"))
    parser.add_argument("--input-tokens", type=int, default=64,
                        help=words("probe.replicas.input_tokens"))  # fmt: skip
    parser.add_argument(
        "--max-tokens", type=int, default=32, help=words("probe.replicas.max_tokens")
    )
    parser.add_argument(
        "--timeout", type=seconds, default=60.0, help=words("probe.replicas.timeout")
    )
    parser.add_argument("--api-key-env", help=words("api_key_env"))
    parser.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(parser, words, "probe.replicas.shown")
    parser.set_defaults(handler=run_replicas)


def run_replicas(args: argparse.Namespace) -> int:
    """Measure and print the report."""
    import json

    from wizard.auth import api_key_from_env, auth_headers
    from wizard.errors import UsageError
    from wizard.probes.fleet import replica_sources
    from wizard.probes.fleet.replicas import measure_replicas
    from wizard.probes.runner import ProbeContext
    from wizard.ui import aio
    from wizard.ui.render import console, replicas_view

    if args.proxy and not args.proxy.startswith(("http://", "https://")):
        raise UsageError.said("error.flag_not_http", flag="--proxy", url=repr(args.proxy))
    fleet = None
    if args.prometheus and not args.replica and not args.nginx_conf:
        from wizard.cli import probe_fleet

        fleet = probe_fleet.read(args)
    found = replica_sources.known(args.replica, args.nginx_conf, fleet)
    if found is None:
        raise UsageError.said("error.too_few_replicas")
    ctx = ProbeContext(target=found.urls[0], headers=auth_headers(api_key_from_env(args.api_key_env)),
                       timeout_s=args.timeout)  # fmt: skip
    params = {"concurrency": args.concurrency, "requests": args.requests,
              "input_tokens": args.input_tokens, "max_tokens": args.max_tokens}  # fmt: skip
    report = aio.run(measure_replicas(ctx, found, args.proxy, params))
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        console().print(replicas_view(report, chosen_language(args)))
    return 1 if report["causes"] else 0
