"""Input files named on the command line: text where ``-`` means standard input (so a paste works),
and transcripts (``--salvage`` keeps the verified part of a damaged one)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


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
        raise UsageError(f"cannot read {path}: {exc.strerror}") from None
    with handle:
        yield handle


def seconds(text: str) -> float:
    """A ``--timeout``: a finite number of seconds above 0 (0 would time out every request and
    hide the real failure behind 'no response within 0 s')."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds above 0")
    return value


def check_base_url(url: str) -> None:
    """A server's base URL, as every probe adds its path to it: http(s), and without the API's own
    ``/v1`` (pasted from a client's config, it made every request ``/v1/v1/...``: a 404 each)."""
    from urllib.parse import urlsplit

    from wizard.auth import without_userinfo
    from wizard.errors import UsageError

    shown = without_userinfo(url)  # a key given in the URL is never echoed
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"{shown!r} is not an http(s) URL")
    parts = urlsplit(shown)
    path = parts.path.rstrip("/")
    if path.endswith("/v1") or "/v1/" in path:
        base = f"{parts.scheme}://{parts.netloc}{path[: path.find('/v1')]}"
        raise UsageError(
            f"{shown!r}: give the server's base URL without /v1 ({base}); the wizard adds the paths"
        )


SALVAGE_HELP = (
    "keep the verified part of a damaged transcript (a last line cut mid-write, a torn tail after "
    "a full disk): everything from the first line that does not verify is left out, and standard "
    "error says what"
)


def transcript_input(args: argparse.Namespace) -> Any:
    """The transcript the command names; with --salvage its verified prefix, the loss reported."""
    from wizard import transcript

    loaded = transcript.load(args.transcript, salvage=args.salvage)
    if loaded.lost is not None:
        print(
            f"latency-wizard {args.command}: salvaged {loaded.path}: kept {len(loaded.events)} "
            f"verified events; {loaded.lost.describe()}",
            file=sys.stderr,
        )
    return loaded
