"""``latency-wizard replay`` and ``export``: look at a saved session; nothing touches the network
unless ``--rerun`` asks to repeat the recorded measurements now."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from wizard.cli.inputs import SALVAGE_HELP, transcript_input

REPLAY_DESCRIPTION = """\
Verify a transcript's hash chain (an edit or a truncation is reported with its line, exit 1) and
show every step with the same renderers as the live walk. Nothing touches the network, unless
--rerun repeats the recorded measurements now (against the recorded target, or --target) and shows
how each segment moved since."""
EXIT_STATUS = """\
Exit status: 0 shown (with --salvage also when a damaged tail was left out); 1 the transcript
cannot be trusted or read (the line is named; --salvage may keep what precedes it); 2 usage
errors."""


EXPORT_DESCRIPTION = """\
Write the incident summary, the answer first: the root cause (finding id and title), the symptom
in numbers, the one change and its effect as the walk measured it; then the incident's first
rounds beside the final ones, every round (failed ones too), findings, evidence and the audit.
md pastes into a ticket, html is one self-contained page with charts, json is the model for
scripts, text is at most 15 plain lines for an incident channel."""


def register(subparsers: Any) -> None:
    """Add ``replay`` and ``export``."""
    replay = subparsers.add_parser(
        "replay", help="show a saved session", description=REPLAY_DESCRIPTION, epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    replay.add_argument("transcript")
    replay.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    replay.add_argument("--lang", choices=["en", "zh"], help="language (default: the session's)")
    replay.add_argument("--rerun", action="store_true", help="repeat the recorded measurements now")
    replay.add_argument(
        "--target", help="with --rerun: measure this base URL instead of the recorded one"
    )
    replay.add_argument(
        "--api-key-env", help="environment variable holding the API key (for --rerun)"
    )
    replay.set_defaults(handler=replay_command)
    export = subparsers.add_parser(
        "export", help="write the incident summary (md, html, json, text)",
        description=EXPORT_DESCRIPTION, epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    export.add_argument("transcript")
    export.add_argument("--salvage", action="store_true", help=SALVAGE_HELP)
    export.add_argument("--format", choices=["md", "html", "json", "text"], default="md")
    export.add_argument("-o", "--output", help="file to write (default: standard output)")
    export.add_argument("--lang", choices=["en", "zh"], help="language (default: the session's)")
    export.set_defaults(handler=export_command)


def replay_command(args: argparse.Namespace) -> int:
    """Verify and render; optionally re-measure."""
    from wizard.render import console
    from wizard.render_events import render_event

    loaded = transcript_input(args)
    lang = args.lang or loaded.header.get("lang", "en")
    screen = console()
    screen.print(f"{loaded.path}: verified, {len(loaded.events)} events, target {loaded.header.get('target')}"
                 + ("" if loaded.complete else " (incomplete: continue it with 'latency-wizard resume')"),
                 markup=False)  # fmt: skip
    for event in loaded.events:
        renderable = render_event(event, lang, replay=True)
        if renderable is not None:
            screen.print(renderable)
    if args.rerun:
        return _rerun(loaded, args, screen)
    return 0


def _rerun(loaded: Any, args: argparse.Namespace, screen: Any) -> int:
    from wizard import aio
    from wizard.auth import api_key_from_env, auth_headers
    from wizard.measure import Measurement, MeasurementSpec, compare
    from wizard.probes.load import run_load
    from wizard.probes.stream import RequestSpec
    from wizard.render_events import render_event

    headers = auth_headers(api_key_from_env(args.api_key_env))
    recorded = [e["data"] for e in loaded.events if e["type"] == "measurement"]
    if not recorded:
        screen.print("nothing was measured in this session; nothing to repeat")
        return 0
    header = loaded.header
    for record in recorded:
        spec = MeasurementSpec(**record["spec"])
        url = spec.access_path
        if args.target:
            url = args.target if url == header.get("target") else url
        request = RequestSpec(model=spec.model, endpoint=spec.endpoint, input_tokens=spec.input_tokens,  # type: ignore[arg-type]
                              max_tokens=spec.output_tokens)  # fmt: skip
        requests = max(len(record["values"].get("ttft_ms", [])), 4)
        result = aio.run(run_load(url, request, concurrency=spec.concurrency, requests=requests,
                                  warmup=1, headers=headers))  # fmt: skip
        now = result.measurement(spec)  # the recorded spec: the same fingerprint by construction
        results = compare(Measurement(spec, record["values"]), now)
        screen.print(render_event({"type": "comparison", "data": {
            "against": "the recording", "before": record["round"], "after": f"{record['round']} now ({url})",
            "segments": [r.to_dict() for r in results if r.segment != "e2e_ms"],
        }}))  # fmt: skip
    return 0


def export_command(args: argparse.Namespace) -> int:
    """Write the summary."""
    import json
    import re
    import sys

    from wizard import report
    from wizard.errors import UsageError
    from wizard.terminal import printable

    loaded = transcript_input(args)
    model = report.build(loaded, args.lang or loaded.header.get("lang", "en"))
    if args.format == "json":
        # JSON escapes C0 controls itself; C1 ones (an 8-bit CSI) are escaped here too.
        text = re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m[0]):04x}",
                      json.dumps(model, indent=2, ensure_ascii=False)) + "\n"  # fmt: skip
    elif args.format == "html":
        from wizard.report_html import html_page

        text = html_page(model)
    elif args.format == "text":
        from wizard.report_text import text as plain_text

        text = plain_text(model)
    else:
        from wizard.report_md import markdown

        text = markdown(model)
    if args.format != "json":  # a ticket or a terminal: no control sequence from the sessions' text
        text = printable(text)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        Path(args.output).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
    print(f"wrote {args.output}")
    return 0
