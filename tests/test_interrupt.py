"""Ctrl-C is honoured wherever it lands in a walk (issue #13: one in ten early in `run` was not)."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from typing import Any

import pytest

from wizard.probes import registry
from wizard.probes.runner import ProbeContext, run_probe
from wizard.ui import aio, interrupt

# The walk's task, as the Ctrl-C handler of asyncio's runner sees it.
WALK: list[asyncio.Task[Any]] = []


async def probe_finishing_as_ctrl_c_lands(
    ctx: ProbeContext, params: dict[str, Any]
) -> dict[str, Any]:
    """A probe whose last step is the moment asyncio's runner cancels the walk for a Ctrl-C."""
    WALK[0].cancel()
    return {"done": True}


def test_a_ctrl_c_as_a_probe_finishes_still_stops_the_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.PROBES, "finishing", f"{__name__}:probe_finishing_as_ctrl_c_lands")
    steps: list[str] = []

    async def walk() -> None:
        WALK[:] = [asyncio.current_task()]  # type: ignore[list-item]
        await run_probe("finishing", ProbeContext(target="http://127.0.0.1:1"), {})
        await asyncio.sleep(0)  # the walk's next await: the cancellation must be delivered here
        steps.append("the walk went on")

    with pytest.raises(asyncio.CancelledError):
        asyncio.run(walk())
    assert steps == []


# wizard.ui.interrupt and aio.run with a real SIGINT in this process: the walk's coroutine is
# cancelled, and the Ctrl-C comes out as KeyboardInterrupt even where the first one was lost.


async def wait_for_ctrl_c() -> str:
    signal.raise_signal(signal.SIGINT)
    await asyncio.sleep(30)  # cancelled by the Ctrl-C
    return "not interrupted"


async def swallow_ctrl_c() -> str:
    signal.raise_signal(signal.SIGINT)
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:  # as a library that turns a cancellation into a result might
        return "carried on"
    return "not interrupted"


def test_ctrl_c_cancels_the_running_coroutine() -> None:
    with interrupt.taken(), pytest.raises(KeyboardInterrupt):
        aio.run(wait_for_ctrl_c())


def test_a_swallowed_cancellation_still_ends_in_keyboard_interrupt() -> None:
    with interrupt.taken(), pytest.raises(KeyboardInterrupt):
        aio.run(swallow_ctrl_c())


def test_a_lost_interrupt_keeps_the_next_loop_from_starting() -> None:
    started = []

    async def walk() -> None:
        started.append(True)

    with interrupt.taken():
        with pytest.raises(KeyboardInterrupt):  # raised outside a loop: where one can be dropped
            signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            aio.run(walk())
    assert not started
    assert not interrupt.requested()  # the handler and its state end with the command


def test_an_ignored_sigint_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupt.taken():
            assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


async def ctrl_c_twice_while_a_thread_runs() -> None:
    def work() -> None:  # a LoadGen run, the demo's restart: the loop waits for it as it closes
        os.kill(os.getpid(), signal.SIGINT)  # the first cancels the task awaiting this thread
        time.sleep(0.3)
        os.kill(os.getpid(), signal.SIGINT)  # the second comes while the loop waits for it
        time.sleep(0.3)

    await asyncio.to_thread(work)


def test_a_second_ctrl_c_while_the_loop_waits_for_its_threads_breaks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """It used to cut the loop's shutdown short: uvloop's shutdown thread then failed with 'Event
    loop is closed', a traceback on the terminal."""
    failures: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda failed: failures.append(failed.exc_value))
    with interrupt.taken(), pytest.raises(KeyboardInterrupt):
        aio.run(ctrl_c_twice_while_a_thread_runs())
    for thread in threading.enumerate():  # the loop's worker and shutdown threads, if still there
        if thread is not threading.current_thread() and not thread.daemon:
            thread.join(30)
    assert failures == []
