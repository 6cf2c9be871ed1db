"""Runs walk probes by name: timeouts and exceptions become data, never crashes."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from wizard.errors import WizardError
from wizard.probes.registry import PROBES


@dataclass
class ProbeContext:
    """What every probe may use: where the server is and how to reach it."""

    target: str
    proxy: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    model: str | None = None
    max_model_len: int | None = None
    timeout_s: float = 60.0
    nginx_conf: str | None = None
    # ``run --nginx-access-log``: nginx's access log with each hop's time (walk probe nginx-access).
    nginx_access_log: str | None = None
    vllm_log: str | None = None
    host_evidence: str | None = None
    session: Any = None  # the walk's session, for probes that audit its history
    # The most streams the wizard's own client may open per round, once it has found itself the
    # bottleneck (LAT050) and lowered its own concurrency; None: the playbook's own numbers.
    client_concurrency: int | None = None
    # ``run --prometheus``: which fleet to read (a fleet.FleetQuery), and the report read at the
    # start of the run (the one that chose the target), which the walk's ``fleet`` probe records.
    fleet_query: Any = None
    fleet: dict[str, Any] | None = None
    # The incident's request shape (workload.Workload; None: the playbook's own shape).
    workload: Any = None
    # Called with {done, total, failed, elapsed_s} as a round's requests finish (the CLI draws
    # it; the engine and the probes know no terminal).
    on_progress: Callable[[dict[str, Any]], None] | None = None
    # ``run --replica URL``: the replicas behind the balancer, as the user listed them.
    replicas: list[str] | None = None
    # What the round measured now must answer (a sequential.Question the engine sets for a round
    # compared with others): it stops once answered. None: the round's full count.
    question: Any = None

    def url_for(self, path: str) -> str:
        """The base URL of an access path ("direct" or "proxy")."""
        if path == "proxy":
            if not self.proxy:
                raise WizardError("this step measures through the proxy, but no --proxy was given")
            return self.proxy
        return self.target


def report_progress(
    ctx: ProbeContext, done: int, total: int | None, failed: int, began: float, floor_s: float = 0.0
) -> None:
    """Hand a round's progress to ``ctx.on_progress``: n of N, elapsed, and an estimate of what
    is left (the mean request time so far, at least ``floor_s`` minus elapsed: LoadGen's minimum
    duration)."""
    if ctx.on_progress is None:
        return
    elapsed = time.monotonic() - began
    if total is not None:  # LoadGen goes past its minimum count until its minimum duration
        total = max(total, done)
    eta = None
    if total is not None and done:
        eta = max((total - done) * elapsed / done, floor_s - elapsed, 0.0)
    ctx.on_progress({"done": done, "total": total, "failed": failed,
                     "elapsed_s": elapsed, "eta_s": eta})  # fmt: skip


@dataclass
class ProbeResult:
    """A probe's facts, how long it took, and its error if it failed."""

    name: str
    facts: dict[str, Any]
    duration_s: float
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON shape (the transcript's ``probe_result`` data)."""
        return {
            "probe": self.name,
            "facts": self.facts,
            "duration_s": self.duration_s,
            "error": self.error,
        }


ProbeFn = Callable[[ProbeContext, dict[str, Any]], Awaitable[dict[str, Any]]]


def resolve(name: str) -> ProbeFn:
    """Import a registered probe."""
    module, _, function = PROBES[name].partition(":")
    probe: ProbeFn = getattr(importlib.import_module(module), function)
    return probe


async def run_probe(
    name: str, ctx: ProbeContext, params: dict[str, Any], timeout_s: float = 600.0
) -> ProbeResult:
    """Run one probe; a timeout or an exception is returned as ``error``."""
    began = time.monotonic()
    try:
        # Not asyncio.wait_for: on Python 3.11 it runs the probe as a task of its own and, when
        # Ctrl-C cancels the walk just as that task finishes, returns its result and drops the
        # cancellation (CPython gh-86296): a Ctrl-C landing as a probe finished was ignored (2 in
        # 300 in a stress loop). asyncio.timeout runs the probe in the walk's own task.
        async with asyncio.timeout(timeout_s):
            facts = await resolve(name)(ctx, params)
    except TimeoutError:
        return ProbeResult(
            name, {}, time.monotonic() - began, f"probe {name} timed out after {timeout_s:.0f} s"
        )
    except WizardError as exc:
        return ProbeResult(name, {}, time.monotonic() - began, str(exc))
    except Exception as exc:  # a probe bug must not end the walk; it is recorded instead
        return ProbeResult(name, {}, time.monotonic() - began, f"{type(exc).__name__}: {exc}")
    return ProbeResult(name, facts, time.monotonic() - began)
