"""``probe replicas``: every replica measured directly, against the path through the balancer."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.inputs import chosen_language, lang_argument, seconds

REPLICAS_DESCRIPTION = """\
Measure every replica behind one endpoint directly, one after the other, with the same round (the
walk's measure round: TTFT and TPOT apart, the replica's /metrics watched), the first one twice
(an A/A pair: how far this fleet's numbers move on their own), then the same round through the
balancer (--proxy), reading every replica's request counter before and after it. Says which replica
is slower than the others pooled (and its cause from its own server's metrics: queue, preemption,
or neither), whether the balancer pins this client to one replica (sticky sessions), and whether
a replica gets an unequal share of the balancer's requests. The replicas come from --replica
(repeated), else the upstream block that --nginx-conf's proxying location passes to (its balancing
method and weights are reported), else the replicas Prometheus scrapes (--prometheus). Load: one
round per replica plus two; the replicas' own traffic during the balancer round counts in its
share. Exit status: 0 when nothing is found, 1 when a replica or the balancer is at fault, 2 on
usage errors, 1 with one line when the replicas cannot be read."""


def register(probes: Any) -> None:
    """Add ``replicas`` to the ``probe`` sub-commands."""
    from wizard.cli import probe_fleet

    parser = probes.add_parser(
        "replicas", help="measure every replica directly and through the balancer",
        description=REPLICAS_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument(
        "--proxy", metavar="URL", help="base URL of the balancer (nginx, a service)"
    )
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    parser.add_argument("--via", dest="proxy", help=argparse.SUPPRESS)
    parser.add_argument(
        "--replica", action="append", metavar="URL", help="a replica's base URL (repeat it)"
    )
    parser.add_argument(
        "--nginx-conf", help="the balancer's nginx config (its upstream lists the replicas)"
    )
    probe_fleet.fleet_arguments(parser, required=False)
    parser.add_argument("--concurrency", type=int, default=8, help="streams in flight (default 8)")
    parser.add_argument("--requests", type=int, default=16, help="requests per round (default 16)")
    parser.add_argument("--input-tokens", type=int, default=64, help="prompt words (default 64)")
    parser.add_argument("--max-tokens", type=int, default=32, help="output tokens (default 32)")
    parser.add_argument("--timeout", type=seconds, default=60.0, help="read timeout per request")
    parser.add_argument("--api-key-env", help="environment variable holding the API key")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(parser, "the replicas and what is wrong")
    parser.set_defaults(handler=run_replicas)


def run_replicas(args: argparse.Namespace) -> int:
    """Measure and print the report."""
    import json

    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.errors import UsageError
    from wizard.probes import replica_sources
    from wizard.probes.replicas import measure_replicas
    from wizard.probes.runner import ProbeContext
    from wizard.render import console, replicas_view

    if args.proxy and not args.proxy.startswith(("http://", "https://")):
        raise UsageError(f"--proxy {args.proxy!r} is not an http(s) URL")
    fleet = None
    if args.prometheus and not args.replica and not args.nginx_conf:
        from wizard.cli import probe_fleet

        fleet = probe_fleet.read(args)
    found = replica_sources.known(args.replica, args.nginx_conf, fleet)
    if found is None:
        raise UsageError(
            "fewer than two replica URLs: give --replica URL (twice or more), --nginx-conf with an "
            "upstream block, or --prometheus"
        )
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
