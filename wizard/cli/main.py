"""The ``latency-wizard`` command: builds the argument parser and dispatches to a subcommand.

Subcommand modules only build their parsers at import time; the heavy imports (uvicorn, httpx,
rich, ...) happen inside their ``run`` functions so that ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from wizard import __version__
from wizard.cli import demo, playbook_cmd, probe, replay, run, sim, triage
from wizard.cli.inputs import language
from wizard.cli.parser import WizardParser
from wizard.errors import WizardError
from wizard.i18n.words_cli import said, words_in
from wizard.record.terminal import printable

SUBCOMMANDS = (demo, triage, run, replay, playbook_cmd, probe, sim)


def build_parser(lang: str = "en") -> argparse.ArgumentParser:
    """Return the top-level parser with every subcommand registered, its help and errors in
    ``lang``."""
    words = words_in(lang)
    parser = WizardParser(prog="latency-wizard", description=words("main.description"), lang=lang)
    parser.add_argument("--version", action="version", version=f"latency-wizard {__version__}",
                        help=said("version", lang))  # fmt: skip
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers, words)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code."""
    argv = sys.argv[1:] if argv is None else list(argv)
    lang = language(argv)  # known before parsing: --help and a bad flag are said in it
    parser = build_parser(lang)
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    from wizard.ui import interrupt

    try:
        with interrupt.taken():
            code: int = args.handler(args)
    except WizardError as exc:
        from wizard.i18n.words import say

        # A message may quote a server or a file: one line, nothing a terminal would obey, and no
        # secret (a key in a URL's userinfo or in the environment).
        text = exc.texts.get(lang) or str(exc)
        message = " ".join(printable(_masker(args, argv)(text)).split())
        print(say("error.line", lang, command=_command(args), message=message), file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        from wizard.i18n.words import say

        print(say("interrupted.line", lang, command=_command(args)), file=sys.stderr)
        return 130
    return code


def _command(args: argparse.Namespace) -> str:
    """The command as typed, with its probe or action (``probe host``), as argparse names it."""
    return " ".join(str(part) for part in (args.command, getattr(args, "probe", None),
                                           getattr(args, "action", None)) if part)  # fmt: skip


def _masker(args: argparse.Namespace, argv: list[str]) -> Callable[[str], str]:
    from wizard.auth import api_key_from_env, url_secrets
    from wizard.record.transcript import Redactor

    return Redactor([api_key_from_env(getattr(args, "api_key_env", None)), *url_secrets(*argv)])
