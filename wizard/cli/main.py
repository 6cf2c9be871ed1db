"""The ``latency-wizard`` command: builds the argument parser and dispatches to a subcommand.

Subcommand modules only build their parsers at import time; the heavy imports (uvicorn, httpx,
rich, ...) happen inside their ``run`` functions so that ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from wizard import __version__
from wizard.cli import demo, playbook_cmd, probe, replay, run, sim
from wizard.errors import WizardError
from wizard.terminal import printable

SUBCOMMANDS = (demo, run, replay, playbook_cmd, probe, sim)


def build_parser() -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="latency-wizard",
        description=(
            "Guided troubleshooting for LLM inference latency on vLLM (optionally behind nginx): "
            "an ordered diagnosis with evidence at every step, one change at a time, a transcript "
            "you can replay and an incident summary you can paste. Try it with nothing deployed: "
            "'latency-wizard demo'. On a real server: 'latency-wizard run --target URL'."
        ),
    )
    parser.add_argument("--version", action="version", version=f"latency-wizard {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from wizard import interrupt

    try:
        with interrupt.taken():
            code: int = args.handler(args)
    except WizardError as exc:
        from wizard.cli.inputs import language
        from wizard.words import say

        # A message may quote a server or a file: one line, nothing a terminal would obey, and no
        # secret (a key in a URL's userinfo or in the environment).
        lang = language(argv)
        text = exc.texts.get(lang) or str(exc)
        message = " ".join(printable(_masker(args, argv)(text)).split())
        print(say("error.line", lang, command=args.command, message=message), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"latency-wizard {args.command}: interrupted", file=sys.stderr)
        return 130
    return code


def _masker(args: argparse.Namespace, argv: list[str]) -> Callable[[str], str]:
    from wizard.auth import api_key_from_env, url_secrets
    from wizard.transcript import Redactor

    return Redactor([api_key_from_env(getattr(args, "api_key_env", None)), *url_secrets(*argv)])
