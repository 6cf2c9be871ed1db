"""Running the client's event loop: uvloop when it is installed (it comes with uvicorn[standard]).

On the 2-core reference machine the stock selector loop wakes 1.5 ms late at the median even when
idle, while uvloop wakes 0.2 ms late; at 64 streams that halves the client's TTFT error
(benchmarks/README.md).

A Ctrl-C (``wizard.ui.interrupt``) cancels the coroutine's task and comes out of ``run`` as
KeyboardInterrupt; one that came before the loop started, or whose cancellation the coroutine
swallowed, is raised here too.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from wizard.ui import interrupt

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop if available, interrupted by Ctrl-C."""
    try:
        return _run(coro)
    except BaseException:
        # An interrupt that lands before the coroutine is awaited (as the loop starts) leaves it
        # never started: closed here, so no "coroutine was never awaited" warning on the way out
        # (closing one that ran is a no-op).
        coro.close()
        raise


def _run(coro: Coroutine[Any, Any, T]) -> T:
    if interrupt.requested():
        raise KeyboardInterrupt

    async def interruptible() -> T:
        interrupt.watch(asyncio.current_task())
        return await coro

    try:
        import uvloop
    except ImportError:
        runner: Any = asyncio.run
    else:
        runner = uvloop.run
    wrapper = interruptible()
    try:
        result: T = runner(wrapper)
    except asyncio.CancelledError:
        if interrupt.requested():
            raise KeyboardInterrupt from None
        raise
    finally:
        # An interrupt as the runner sets up its loop leaves the wrapper never started, like the
        # walk's coroutine in ``run``: closed, so it does not warn "never awaited".
        wrapper.close()
        interrupt.watch(None)
    interrupt.check()
    return result
