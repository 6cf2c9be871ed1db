"""A text stream's lines in blocks, in bounded memory whatever the stream holds.

A line is kept only until its newline comes, and never past MAX_LINE_CHARS: a longer line is
skipped (``None`` in its place, so the reader counts and notes it), and one past
MAX_SKIPPED_LINE_CHARS ends the reading (``/dev/zero``, a sparse file: no newline ever comes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TextIO

BLOCK_CHARS = 1 << 20
# vLLM's longest lines that are read are the engine config line, the "non-default args" dict and
# Namespace dumps: 3,336 characters in the real 0.32 logs (tests/fixtures/vllm-log/real-*), a few
# KB more on a GPU build's compilation config. 64 Ki is ~20 times that; every pattern the readers
# apply to a line is then bounded by it. Longer lines are request logs carrying a whole prompt,
# which no reader reads.
MAX_LINE_CHARS = 64 * 1024
# A line this long is no log's: a request log's prompt of a million tokens is ~4 MB of text.
MAX_SKIPPED_LINE_CHARS = 16 * 1024 * 1024


class LineTooLongError(Exception):
    """More than MAX_SKIPPED_LINE_CHARS without a newline: the input is no text log."""


def line_blocks(handle: TextIO, block_chars: int = BLOCK_CHARS) -> Iterator[str | None]:
    """The stream's text in blocks of whole lines, each ended by a newline (the last line gets the
    newline it lacked), and ``None`` for each line longer than MAX_LINE_CHARS, skipped in place.

    The stream is read MAX_LINE_CHARS characters at a time (less for smaller blocks), so a line
    inside one read is never too long; only a line across reads is measured."""
    pending: list[str] = []  # whole lines, not yet yielded
    pending_chars = 0
    partial: list[str] = []  # the start of a line whose newline has not come
    partial_chars = 0
    while piece := handle.read(min(block_chars, MAX_LINE_CHARS)):
        first = piece.find("\n")
        if first < 0:
            partial_chars += len(piece)
            if partial_chars > MAX_SKIPPED_LINE_CHARS:
                raise LineTooLongError(
                    f"more than {MAX_SKIPPED_LINE_CHARS:,} characters without a newline"
                )
            if partial_chars > MAX_LINE_CHARS:
                partial.clear()  # counted, not kept
            else:
                partial.append(piece)
            continue
        if partial_chars + first > MAX_LINE_CHARS:
            if pending:
                yield "".join(pending)
                pending.clear()
                pending_chars = 0
            yield None
        else:
            pending += partial
            pending.append(piece[: first + 1])
            pending_chars += partial_chars + first + 1
        last = piece.rfind("\n") + 1
        pending.append(piece[first + 1 : last])
        pending_chars += last - first - 1
        partial, partial_chars = [piece[last:]], len(piece) - last
        if pending_chars >= block_chars:
            yield "".join(pending)
            pending.clear()
            pending_chars = 0
    if pending:
        yield "".join(pending)
    if partial_chars > MAX_LINE_CHARS:
        yield None
    elif partial_chars:
        yield "".join(partial) + "\n"
