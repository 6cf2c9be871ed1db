"""Run latency-wizard as a measuring client starved of CPU: ``python starved_client.py CORE ARGS``.

A CPU quota on the client's event loop, as a container's CPU limit sets one (cgroup ``cpu.max``)
but kept in the process: a thread of its own watches the loop thread's CPU clock and, once the
loop has used its quota of a period, holds the GIL to the end of the period, so the loop waits
however much work it has. Below its quota the loop runs at once. The quota sits between the work
of one engine step's events at half the streams and at all of them (the simulator sends every
stream's token of a step together), so the loop keeps up at half its streams and falls behind at
all of them: its concurrency decides, nothing else.

The rest of its core is burnt by a filler thread at nice 19 that hashes without holding the GIL
(the loop always preempts it): the process uses its whole core, as a client whose own work fills
it. The whole process is pinned to CORE; run it in a session of its own (``start_new_session``),
whose autogroup is raised above the machine's others where the test may (root), so that what it
gets of its core does not hang on what else runs there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import runpy
import sys
import threading
import time
from pathlib import Path

from wizard.probes.http.sample import StreamSample
from wizard.probes.http.sse import SseParser

# One engine step of the tp-over-pcie simulator (~30 ms): the quota is a period's worth of CPU.
PERIOD_S = 0.030
# The quota in what this machine takes to parse one streamed event with the client's parser
# (6.2-6.5 us at best on the 2-core reference machine), so that it scales with the machine's
# speed. There, in the walk's first round (64 streams of 512 tokens, the server's /metrics
# scraped meanwhile), the loop fell 9-14 ms behind (lag p90) at quotas of 3.0, 3.6 and 4.3 ms a
# period, and at 32 streams kept up at each (0.7-1.4 ms); at 2.1 ms it fell behind at 32 too,
# and at about 5 ms it kept up at 64. The quota is 48 events' parsing times 11 (3.3 ms at
# 6.3 us): the loop's whole work for an event (its read, its timestamps, its sample, its share
# of the scrapes) is several times the parse alone.
QUOTA_EVENTS = 48
LOOP_WORK_PER_PARSE = 11
BLOCK = os.urandom(1 << 20)
EVENT = ("data: " + json.dumps({
    "id": "cmpl-0123456789abcdef", "object": "text_completion", "created": 1, "model": "m",
    "choices": [{"index": 0, "text": " word", "logprobs": None, "finish_reason": None,
                 "stop_reason": None, "token_ids": None, "prompt_token_ids": None}],
}) + "\n\n").encode()  # fmt: skip


def raise_group() -> None:
    """This session's autogroup above the machine's others, where allowed (root): what the
    kernel gives its threads then does not hang on what else runs on their core."""
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("-10")


def parse_cost_s(events: int = 3000, tries: int = 7) -> float:
    """This machine's CPU time to parse one streamed completion event with the client's parser:
    the least of a few tries (the others were slowed by what else ran: 6.2-9 us here)."""
    costs = []
    for _ in range(tries):
        parser = SseParser(StreamSample(send_ns=0), max_tokens=events)
        began = time.thread_time()
        for _ in range(events):
            parser.feed(EVENT, time.monotonic_ns())
        costs.append((time.thread_time() - began) / events)
    return min(costs)


def fill() -> None:
    os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    while True:
        hashlib.sha256(BLOCK).digest()


def throttle(loop: int, quota_s: float) -> None:
    clock = time.pthread_getcpuclockid(loop)
    began, used = time.monotonic(), time.clock_gettime(clock)
    while True:
        time.sleep(0.0005)
        now = time.monotonic()
        if now - began >= PERIOD_S:
            began, used = now, time.clock_gettime(clock)
        elif time.clock_gettime(clock) - used >= quota_s:
            while time.monotonic() < began + PERIOD_S:  # the GIL held: the loop waits
                pass


def main() -> None:
    core = int(sys.argv.pop(1))
    os.sched_setaffinity(0, {core})
    raise_group()
    # WIZARD_STARVED_QUOTA_SCALE: the test's second try, when the first quota still let the loop
    # keep up at all its streams (the parse cost is timed once, and a slow timing raises it).
    scale = float(os.environ.get("WIZARD_STARVED_QUOTA_SCALE", "1"))
    quota_s = QUOTA_EVENTS * parse_cost_s() * LOOP_WORK_PER_PARSE * scale
    print(
        f"starved client: {quota_s * 1e3:.2f} ms of CPU each {PERIOD_S * 1e3:.0f} ms",
        file=sys.stderr,
    )
    # A holder of the GIL keeps it to the end of its period unless it blocks.
    sys.setswitchinterval(PERIOD_S)
    threading.Thread(target=fill, name="filler", daemon=True).start()
    threading.Thread(target=throttle, args=(threading.get_ident(), quota_s), name="quota",
                     daemon=True).start()  # fmt: skip
    sys.argv = ["latency-wizard", *sys.argv[1:]]
    runpy.run_module("wizard", run_name="__main__")


if __name__ == "__main__":
    main()
