"""Running the client's event loop: uvloop when it is installed (it comes with uvicorn[standard]).

On the 2-core reference machine the stock selector loop wakes 1.5 ms late at the median even when
idle, while uvloop wakes 0.2 ms late; at 64 streams that halves the client's TTFT error
(benchmarks/README.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on uvloop if available."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
