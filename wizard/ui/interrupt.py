"""Ctrl-C, never lost: one SIGINT handler for a whole command, and checks where it is safe.

Python's own handler raises KeyboardInterrupt wherever the main thread happens to be. Raised inside
a weakref callback or a finalizer (both run at arbitrary points, many during the lazy imports that
set a walk up), CPython prints "Exception ignored" and drops it: the walk then ran to its end and
exited 0. asyncio.run's handler (which cancels the main task instead) covers only the time inside
an event loop. Here the interrupt is first recorded, then acted on: while ``aio.run`` runs a
coroutine its task is cancelled, as asyncio.run would; otherwise KeyboardInterrupt is raised.
``check`` raises it again where an earlier one may have been dropped (``aio.run`` calls it before
and after each loop), so a Ctrl-C always ends the command; the dropped one is not printed as an
"Exception ignored" traceback. A second Ctrl-C raises at once while the task still runs; once it
has ended and its loop only waits for its threads (a LoadGen run, the demo's restart), which the
process would wait for at exit anyway, further ones are only recorded.

A SIGINT the command was started with ignored (by a shell running it in the background, as POSIX
shells without job control do) stays ignored, as every program does: only Python's default
handler is replaced.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_requested = False
_held = False
# The task ``aio.run`` runs (until its loop is closed): what a first Ctrl-C cancels.
_task: asyncio.Task[Any] | None = None


def on_signal(signum: int, frame: FrameType | None) -> None:
    """The handler: record the interrupt, cancel the running task, or raise KeyboardInterrupt."""
    global _requested
    first = not _requested
    _requested = True
    if _held:
        return
    if _task is not None:
        if _task.done():
            # Cancelled already, its loop is closing: it waits for its threads (a LoadGen run,
            # the demo's restart) whatever comes, and raising here would leave them to print
            # tracebacks (and a restarted simulator running).
            return
        if first:
            _task.cancel()
            _task.get_loop().call_soon_threadsafe(_wake)  # it may sleep in select()
            return
    raise KeyboardInterrupt


def _wake() -> None:
    pass


@contextmanager
def taken() -> Iterator[None]:
    """Handle SIGINT with ``on_signal`` for the duration (only in place of Python's default)."""
    global _requested
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    _requested = False
    signal.signal(signal.SIGINT, on_signal)
    previous_hook = sys.unraisablehook

    def unraisable(report: Any) -> None:
        if not isinstance(report.exc_value, KeyboardInterrupt):
            previous_hook(report)
        # else: dropped where Python cannot raise it; ``check`` raises it again

    sys.unraisablehook = unraisable
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.unraisablehook = previous_hook
        _requested = False


def requested() -> bool:
    """Whether a Ctrl-C came."""
    return _requested


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came (its first KeyboardInterrupt may have been lost)."""
    if _requested:
        raise KeyboardInterrupt


@contextmanager
def held() -> Iterator[None]:
    """Inside, a Ctrl-C is only recorded (``check``, or the next ``aio.run``, raises it): for a step
    that must not be cut in two, as writing a transcript's header and handing its writer on."""
    global _held
    _held = True
    try:
        yield
    finally:
        _held = False


def watch(task: asyncio.Task[Any] | None) -> None:
    """Have a Ctrl-C cancel ``task`` (None: no task runs); one that came already cancels it now."""
    global _task
    _task = task
    if task is not None and _requested:
        task.cancel()
