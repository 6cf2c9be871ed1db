"""Input files named on the command line, where ``-`` means standard input (so a paste works)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TextIO


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
