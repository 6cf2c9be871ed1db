"""vLLM 0.34's hardware-dependent serve defaults (facts/vllm.md §3.1), shared by the simulator and
the findings that say which way to move a limit."""

from __future__ import annotations


def default_batch_limits(gpu_memory_gib: float, gpu_name: str = "") -> tuple[int, int]:
    """``vllm serve``'s (max_num_batched_tokens, max_num_seqs) for a device of this size and name.

    A100s stay on the small budget even with 80 GiB: large budgets hurt their throughput
    (vLLM PR #17885), so the 70 GiB class excludes them.
    """
    if gpu_memory_gib >= 160:
        return 16384, 1024
    if gpu_memory_gib >= 70 and "A100" not in gpu_name.upper():
        return 8192, 1024
    return 2048, 256


SMALLEST_DEFAULT_BATCHED_TOKENS = 2048  # below this, a budget is small on every GPU class
