"""``latency-wizard probe NAME``: run one probe on its own and print its result (``--json``)."""

from __future__ import annotations

import argparse
from typing import Any

STREAM_DESCRIPTION = """\
Send streamed generation requests and time them event by event.

definitions:
  TTFT  send -> first SSE event carrying output (content, reasoning or tool call); the role-only
        first chat chunk and usage-only chunks never count
  TPOT  (last output event - first output event) / (output tokens - 1)
  ITL   each gap between consecutive output events (an event may carry several tokens)
  E2E   send -> last output event
  output tokens come from the server's usage (always requested); without it the probe counts output
  events and flags the count as an estimate. Requests ask for a fixed length: max_tokens plus vLLM's
  ignore_eos, temperature 0, a prompt of --input-tokens words.

The API key is read from $VLLM_API_KEY (then $OPENAI_API_KEY) or the variable --api-key-env names.
Exit status: 0 when at least one request succeeded, 1 when none did, 2 on usage errors."""


def register(subparsers: Any) -> None:
    """Add ``probe`` and its probes."""
    probe = subparsers.add_parser(
        "probe", help="run one probe on its own (see 'probe stream --help')"
    )
    probes = probe.add_subparsers(dest="probe", metavar="PROBE", required=True)
    stream = probes.add_parser(
        "stream", help="time streamed requests (TTFT, TPOT, ITL, E2E)", description=STREAM_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    stream.add_argument(
        "--target", required=True, help="base URL of the server, e.g. http://127.0.0.1:8000"
    )
    stream.add_argument("--model", help="model id (default: the first one /v1/models lists)")
    stream.add_argument("--endpoint", choices=["completions", "chat"], default="completions")
    stream.add_argument(
        "--input-tokens", type=int, default=32, help="prompt length in words (default 32)"
    )
    stream.add_argument("--max-tokens", type=int, default=64, help="output length (default 64)")
    stream.add_argument(
        "--repeat", type=int, default=5, help="requests, one after another (default 5)"
    )
    stream.add_argument(
        "--timeout", type=float, default=60.0, help="read timeout in seconds (default 60)"
    )
    stream.add_argument("--api-key-env", help="environment variable holding the API key")
    stream.add_argument("--json", action="store_true", help="print one JSON object")
    stream.set_defaults(handler=run_stream)


def run_stream(args: argparse.Namespace) -> int:
    """Run the stream probe and print the report."""
    import asyncio
    import dataclasses
    import json

    from wizard.auth import api_key_from_env, auth_headers, mask
    from wizard.errors import UsageError
    from wizard.probes.stream import stream_report

    for name in ("input_tokens", "max_tokens", "repeat"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be at least 1")
    if not args.target.startswith(("http://", "https://")):
        raise UsageError(f"--target must be an http(s) URL, got {args.target!r}")
    api_key = api_key_from_env(args.api_key_env)
    headers = auth_headers(api_key)
    spec, samples = asyncio.run(_measure(args, headers))
    report = {"target": args.target, "spec": dataclasses.asdict(spec), **stream_report(samples)}
    if args.json:
        print(mask(json.dumps(report, indent=2), api_key))
    else:
        from wizard.render import console, stream_table

        console().print(stream_table(report))
    return 0 if report["summary"]["succeeded"] else 1


async def _measure(args: argparse.Namespace, headers: dict[str, str]) -> tuple[Any, list[Any]]:
    import httpx

    from wizard.probes.endpoints import served_model
    from wizard.probes.stream import RequestSpec, measure_stream

    timeout = httpx.Timeout(args.timeout, connect=10.0)
    async with httpx.AsyncClient(timeout=timeout) as client:
        model = args.model or await served_model(client, args.target, headers)
        spec = RequestSpec(
            model=model,
            endpoint=args.endpoint,
            input_tokens=args.input_tokens,
            max_tokens=args.max_tokens,
        )
        samples = [
            await measure_stream(client, args.target, spec, headers) for _ in range(args.repeat)
        ]
    return spec, samples
