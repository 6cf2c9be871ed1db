"""Input files named on the command line: text where ``-`` means standard input (so a paste works),
and transcripts (``--salvage`` keeps the verified part of a damaged one)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


@contextmanager
def text_input(path: str) -> Iterator[TextIO]:
    """Open ``path`` as text (undecodable bytes replaced), or standard input for ``-``."""
    from wizard.errors import UsageError

    if path == "-":
        yield sys.stdin
        return
    try:
        handle = open(path, encoding="utf-8", errors="replace")  # noqa: PTH123, SIM115
    except OSError as exc:
        raise UsageError.cannot_read(path, exc) from None
    with handle:
        yield handle


def seconds(text: str) -> float:
    """A ``--timeout``: a finite number of seconds above 0 (0 would time out every request and
    hide the real failure behind 'no response within 0 s')."""
    from wizard.i18n.words import say

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            say("error.not_seconds", language(), text=repr(text))
        ) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(say("error.seconds_above_0", language(), text=repr(text)))
    return value


def count(text: str) -> int:
    """A ``--max-requests``: a whole number, 0 or more (0 sends no round of load)."""
    from wizard.i18n.words import say

    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(say("error.not_count", language(), text=repr(text)))
    return int(text)


def default_language() -> str:
    """zh when the locale says Chinese, else en."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(name, "")
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def language(argv: list[str] | None = None) -> str:
    """The language the command asked for (``--lang``), else the locale's: an error in the
    arguments is said before they are parsed."""
    argv = sys.argv[1:] if argv is None else argv
    for i, arg in enumerate(argv):
        given = arg.removeprefix("--lang=") if arg.startswith("--lang=") else None
        if arg == "--lang" and i + 1 < len(argv):
            given = argv[i + 1]
        if given in ("en", "zh"):
            return given
    return default_language()


def lang_argument(parser: argparse.ArgumentParser, words: Words, shown: str) -> None:
    """A probe's ``--lang``: its human output (never ``--json``) in English or Chinese; ``shown``
    is the key of what it shows."""
    parser.add_argument("--lang", choices=["en", "zh"], help=words("lang", shown=words(shown)))


def chosen_language(args: argparse.Namespace) -> str:
    """The ``--lang`` given, else the locale's."""
    return str(args.lang or default_language())


def check_base_url(url: str) -> None:
    """A server's base URL, as every probe adds its path to it: http(s), and without the API's own
    ``/v1`` (pasted from a client's config, it made every request ``/v1/v1/...``: a 404 each)."""
    from urllib.parse import urlsplit

    from wizard.auth import without_userinfo
    from wizard.errors import UsageError

    shown = without_userinfo(url)  # a key given in the URL is never echoed
    if not url.startswith(("http://", "https://")):
        raise UsageError.said("error.not_http_url", url=repr(shown))
    parts = urlsplit(shown)
    path = parts.path.rstrip("/")
    if path.endswith("/v1") or "/v1/" in path:
        base = f"{parts.scheme}://{parts.netloc}{path[: path.find('/v1')]}"
        raise UsageError.said("error.base_url", url=repr(shown), base=base)


def transcript_input(args: argparse.Namespace) -> Any:
    """The transcript the command names; with --salvage its verified prefix, the loss reported."""
    from wizard.i18n.words import say
    from wizard.record import transcript

    loaded = transcript.load(args.transcript, salvage=args.salvage)
    if loaded.lost is not None:
        lang = args.lang or loaded.header.get("lang") or language()
        lost = loaded.lost.said()
        print(say("transcript.salvaged", lang, command=args.command, path=loaded.path,
                  n=len(loaded.events), lost=lost.get(lang, lost["en"])), file=sys.stderr)  # fmt: skip
    return loaded


def check_nginx_conf(path: str | None) -> None:
    """``--nginx-conf`` parsed before any request: a config that does not parse is said first,
    not after the target was checked."""
    if not path:
        return
    from pathlib import Path

    from wizard.errors import UsageError, WizardError
    from wizard.probes.readers.nginx_config import analyse

    try:
        analyse(Path(path).expanduser())
    except WizardError as exc:  # a syntax error (file:line), a folder without a .conf
        raise UsageError.said("error.flag_said", flag="--nginx-conf", message=exc.texts) from None


def check_transcript_path(path: Any) -> None:
    """The transcript's folder can hold it: the nearest part of its path that exists must be a
    folder (``a-file/walk.ndjson`` said "File exists" after the target was checked)."""
    from wizard.errors import UsageError

    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise UsageError.said("error.transcript_parent_file", path=path, parent=parent)
            return
