"""``latency-wizard replay`` and ``export``: look at a saved session; nothing touches the network
unless ``--rerun`` asks to repeat the recorded measurements now."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import language, transcript_input

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(subparsers: Any, words: Words) -> None:
    """Add ``replay`` and ``export``."""
    replay = subparsers.add_parser(
        "replay", help=words("replay.help"), description=words("replay.description"),
        epilog=words("replay.exit_status"), raw_description=True,
    )  # fmt: skip
    replay.add_argument("transcript")
    replay.add_argument("--salvage", action="store_true", help=words("salvage"))
    replay.add_argument("--lang", choices=["en", "zh"], help=words("replay.lang"))
    replay.add_argument("--rerun", action="store_true", help=words("replay.rerun"))
    replay.add_argument("--target", metavar="URL", help=words("replay.target"))
    replay.add_argument("--proxy", metavar="URL", help=words("replay.proxy"))
    replay.add_argument("--api-key-env", help=words("replay.api_key_env"))
    replay.set_defaults(handler=replay_command)
    export = subparsers.add_parser(
        "export", help=words("export.help"), description=words("export.description"),
        epilog=words("replay.exit_status"), raw_description=True,
    )  # fmt: skip
    export.add_argument("transcript")
    export.add_argument("--salvage", action="store_true", help=words("salvage"))
    export.add_argument("--format", choices=["md", "html", "json", "text"], default="md")
    export.add_argument("-o", "--output", help=words("export.output"))
    export.add_argument("--force", action="store_true", help=words("export.force"))
    export.add_argument("--lang", choices=["en", "zh"], help=words("replay.lang"))
    export.set_defaults(handler=export_command)


def replay_command(args: argparse.Namespace) -> int:
    """Verify and render; optionally re-measure."""
    from wizard.i18n.words import say
    from wizard.ui.render import console
    from wizard.ui.render_events import render_event

    loaded = transcript_input(args)
    lang = args.lang or loaded.header.get("lang", "en")
    screen = console()
    heading = say("replay.heading", lang, path=loaded.path, n=len(loaded.events),
                  target=loaded.header.get("target"))  # fmt: skip
    screen.print(
        heading + ("" if loaded.complete else say("replay.incomplete", lang)), markup=False
    )
    signature = loaded.signature.said()  # what the chain and the signature prove, said plainly
    screen.print(signature.get(lang, signature["en"]), markup=False, soft_wrap=True)
    for event in loaded.events:
        renderable = render_event(event, lang, replay=True)
        if renderable is not None:
            screen.print(renderable)
    if args.rerun:
        return _rerun(loaded, args, screen)
    return 0


def _rerun(loaded: Any, args: argparse.Namespace, screen: Any) -> int:
    from wizard.auth import api_key_from_env, auth_headers, without_userinfo
    from wizard.cli import authority
    from wizard.measure import Measurement, MeasurementSpec, compare
    from wizard.probes.http.load import run_load
    from wizard.probes.http.stream import RequestSpec
    from wizard.ui import aio
    from wizard.ui.render_events import render_event

    recorded = [e["data"] for e in loaded.events if e["type"] == "measurement"]
    if not recorded:
        screen.print("nothing was measured in this session; nothing to repeat")
        return 0
    # Where each round goes now: a URL named on this command line (--target/--proxy: the
    # recorded one, or the one it replaces), else the recorded one, which is data and must be
    # confirmed first (cli/authority.py).
    header, named = loaded.header, {}
    for key in ("target", "proxy"):
        given = getattr(args, key)
        if given:
            named[without_userinfo(given)] = given
        if given and isinstance(header.get(key), str):
            named[header[key]] = given
    urls = {path: named.get(path) for path in (str(r["spec"]["access_path"]) for r in recorded)}
    unnamed = [authority.Unnamed("--proxy" if url == header.get("proxy") else "--target", url)
               for url, given in urls.items() if given is None]  # fmt: skip
    api_key = api_key_from_env(args.api_key_env)
    lang = args.lang or header.get("lang", "en")
    if not authority.confirm(unnamed, loaded.path, lang, authority.at_terminal(),
                             has_key=api_key is not None):  # fmt: skip
        api_key = None
    headers = auth_headers(api_key)
    for record in recorded:
        spec = MeasurementSpec(**record["spec"])
        url = urls[str(spec.access_path)] or str(spec.access_path)
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
    from wizard.cli import output
    from wizard.errors import UsageError
    from wizard.i18n.words import say
    from wizard.record.terminal import printable

    loaded = transcript_input(args)
    if args.output:
        output.refuse(Path(args.output), loaded.path, force=args.force)
    model = report.build(loaded, args.lang or loaded.header.get("lang", "en"))
    if args.format == "json":
        # JSON escapes C0 controls itself; C1 ones (an 8-bit CSI) are escaped here too.
        text = re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m[0]):04x}",
                      json.dumps(model, indent=2, ensure_ascii=False)) + "\n"  # fmt: skip
    elif args.format == "html":
        from wizard.report.html import html_page

        text = html_page(model)
    elif args.format == "text":
        from wizard.report.text import text as plain_text

        text = plain_text(model)
    else:
        from wizard.report.md import markdown

        text = markdown(model)
    if args.format != "json":  # a ticket or a terminal: no control sequence from the sessions' text
        text = printable(text)
    if not args.output:
        sys.stdout.write(text)
        return 0
    try:
        output.write(Path(args.output), text, loaded.path, force=args.force)
    except OSError as exc:
        raise UsageError.os_said("error.cannot_write", exc, path=args.output) from None
    print(say("note.wrote", language(), path=args.output))
    return 0
