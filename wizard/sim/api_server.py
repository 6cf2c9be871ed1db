"""The API server processes in front of the engine: each one core of CPU, and what it costs.

vLLM's API server (its own process, or ``--api-server-count`` of them) parses and renders every
request before the engine sees it, then detokenizes every output token and writes it as an SSE
event. The simulator charges that work to a process: ``ApiServerCosts.per_request_ms`` before a
request reaches the engine and ``per_token_ms`` for every token streamed back. A process is one
core: its work runs one piece after another, so when the tokens arriving per second times their
cost exceed one second a second, each event waits behind the ones before it and the client's
TTFT and TPOT grow with the concurrency while the engine's own steps stay as they were. Requests
are spread over the processes in turn (the kernel's SO_REUSEPORT does so on a real server).

Only the CPU is modelled: the wait is simulated by sleeping to the time the process is free, and
``cpu_seconds`` is the work charged, which ``/metrics`` shows as ``process_cpu_seconds_total``
when there is one process (with several, vLLM serves /metrics from a multiprocess registry
that has no process series; ``wizard.sim.metrics``).
"""

from __future__ import annotations

import asyncio
import time

from wizard.sim.config import ApiServerCosts

NS = 1_000_000_000
LOOP_RESOLUTION_NS = 1_000_000


class ApiServers:
    """``count`` single-core processes, each busy until the end of the work charged to it."""

    def __init__(self, count: int, costs: ApiServerCosts) -> None:
        self.costs = costs
        self._busy_until_ns = [0] * count
        self._cpu_ns = [0] * count
        self._next = 0

    @property
    def count(self) -> int:
        return len(self._busy_until_ns)

    def assign(self) -> int:
        """The process that serves a new request (in turn)."""
        process = self._next
        self._next = (self._next + 1) % self.count
        return process

    async def request(self, process: int) -> None:
        """Render and tokenize a request: return when ``process`` has done it."""
        await self._work(process, self.costs.per_request_ms)

    async def tokens(self, process: int, count: int) -> None:
        """Detokenize and serialize ``count`` tokens: return when ``process`` has done them."""
        await self._work(process, count * self.costs.per_token_ms)

    def cpu_seconds(self, process: int = 0) -> float:
        """CPU time charged to ``process`` so far."""
        return self._cpu_ns[process] / NS

    async def _work(self, process: int, cost_ms: float) -> None:
        cost_ns = int(cost_ms * 1_000_000)
        if cost_ns <= 0:
            return
        now = time.monotonic_ns()
        done = max(now, self._busy_until_ns[process]) + cost_ns
        self._busy_until_ns[process] = done
        self._cpu_ns[process] += cost_ns
        # A wait shorter than the event loop's timer resolution is not slept: an idle process
        # answers at once (the healthy server's events are not held back a millisecond each),
        # and a busy one's backlog grows past it within a few events.
        if done - now > LOOP_RESOLUTION_NS:
            await asyncio.sleep((done - now) / NS)
