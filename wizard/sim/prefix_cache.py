"""vLLM's automatic prefix cache, as the scheduler's block pool sees it.

vLLM hashes every *full* block of a prompt together with the hash of the block before it, so a
block's hash names the whole prefix up to its end: two prompts share cached blocks exactly as far
as their tokens agree from the start. A computed full block is kept under its hash; while requests
use it, it is shared (reference counted); once none does, it stays in the pool as a free block
that a later request can reuse, until the pool needs the space and evicts the least recently
freed one first (``vllm/v1/core/block_pool.py``).

Pure bookkeeping: no clock, no I/O. The scheduler owns the count of free blocks.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence


def block_hashes(tokens: Sequence[str], block_size: int) -> list[int]:
    """The chained hash of every full block of ``tokens`` (a partial last block has none)."""
    hashes: list[int] = []
    parent = 0
    for start in range(0, len(tokens) - block_size + 1, block_size):
        parent = hash((parent, tuple(tokens[start : start + block_size])))
        hashes.append(parent)
    return hashes


class PrefixCache:
    """Cached blocks by hash: how many requests hold each, and the free ones in eviction order."""

    def __init__(self) -> None:
        self._refs: dict[int, int] = {}
        # Cached blocks no request holds, least recently freed first: free, yet still reusable.
        self._evictable: OrderedDict[int, None] = OrderedDict()

    @property
    def evictable(self) -> int:
        """Free blocks that still hold a cached prefix."""
        return len(self._evictable)

    def longest_hit(self, hashes: Sequence[int], max_blocks: int) -> list[int]:
        """The leading blocks of ``hashes`` that are cached, at most ``max_blocks``."""
        hit: list[int] = []
        for block in hashes[:max_blocks]:
            if block not in self._refs:
                break
            hit.append(block)
        return hit

    def is_free(self, block: int) -> bool:
        """True when a cached block is held by no request (it counts among the free blocks)."""
        return block in self._evictable

    def acquire(self, block: int) -> bool:
        """A request reuses a cached block; True when the block was free until now."""
        self._refs[block] += 1
        was_free = block in self._evictable
        self._evictable.pop(block, None)
        return was_free

    def register(self, block: int) -> bool:
        """A request's freshly computed block joins the cache; False when that prefix is cached."""
        if block in self._refs:
            return False  # computed twice at once: the copy stays the request's own
        self._refs[block] = 1
        return True

    def release(self, block: int) -> bool:
        """A request lets go of a cached block; True when no request holds it any more."""
        self._refs[block] -= 1
        if self._refs[block] > 0:
            return False
        self._evictable[block] = None
        return True

    def evict(self, count: int) -> None:
        """Forget the ``count`` least recently freed cached blocks (the pool reuses their space)."""
        for _ in range(min(count, len(self._evictable))):
            block, _ = self._evictable.popitem(last=False)
            del self._refs[block]
