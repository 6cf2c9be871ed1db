"""Ctrl-C is honoured wherever it lands in a walk (issue #13: one in ten early in `run` was not)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from wizard.probes import registry
from wizard.probes.runner import ProbeContext, run_probe

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
