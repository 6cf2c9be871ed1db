"""How late the event loop wakes while a look bootstraps in a worker thread.

Run on demand: ``python benchmarks/look_lag.py``. A thread runs ``measure.compare_values`` (64 values
a side, as a look does per segment) without pause, the worst case of a look; meanwhile the event
loop sleeps 1 ms, 1,500 times, and each wake's lateness is recorded. Once at the interpreter's
default switch interval, once at the one a look sets (``load.LOOK_SWITCH_S``). The loop's lateness is
how late it would stamp a token arriving then.
"""

from __future__ import annotations

import asyncio
import random
import sys
import threading
import time

from wizard import measure
from wizard.probes.http.load import LOOK_SWITCH_S


def lateness(interval: float) -> str:
    rng = random.Random(0)
    before = [rng.lognormvariate(3, 0.3) for _ in range(64)]
    after = [rng.lognormvariate(3.1, 0.3) for _ in range(64)]
    stop = threading.Event()
    done = [0]

    def look() -> None:
        while not stop.is_set():
            measure.compare_values("ttft_ms", before, after)
            done[0] += 1

    async def wakes() -> list[float]:
        late = []
        for _ in range(1500):
            began = time.perf_counter()
            await asyncio.sleep(0.001)
            late.append((time.perf_counter() - began - 0.001) * 1000)
        return late

    default = sys.getswitchinterval()
    sys.setswitchinterval(interval)
    worker = threading.Thread(target=look)
    worker.start()
    try:
        late = sorted(asyncio.run(wakes()))
    finally:
        stop.set()
        worker.join()
        sys.setswitchinterval(default)
    p50, p99 = late[len(late) // 2], late[int(len(late) * 0.99)]
    return (
        f"| {interval * 1000:g} ms | {p50:.2f} ms | {p99:.2f} ms | {late[-1]:.2f} ms | {done[0]} |"
    )


def main() -> None:
    print("| switch interval | wake late p50 | p99 | max | comparisons meanwhile |")
    print("|---|---|---|---|---|")
    for interval in (sys.getswitchinterval(), LOOK_SWITCH_S):
        print(lateness(interval))


if __name__ == "__main__":
    main()
