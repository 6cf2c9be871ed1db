"""vLLM 0.34's hardware-dependent serve defaults (facts/vllm.md §3.1), shared by the simulator and
the findings that say which way to move a limit."""

from __future__ import annotations

from typing import Any

from wizard.levers.vllm_versions import parse

# vLLM's CPU backend serve defaults per rank (2048 tokens, 128 sequences), measured on the real
# 0.32 CPU build (facts/real-vllm.md); they scale with the world size.
CPU_BATCH_DEFAULTS = (2048, 128)
# The first release whose serve defaults depend on the GPU (EngineArgs.get_batch_defaults, with
# the A100 exception of vLLM PR #17885): before it the table below says nothing.
HARDWARE_DEFAULTS_SINCE = (0, 9, 0)


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


def configured_max_num_seqs(report: dict[str, Any]) -> tuple[int | None, str | None]:
    """The max_num_seqs a server runs with, from its log's report, and where that comes from:
    the value it logged; else vLLM's default for its device (the CPU build's per rank, or the GPU
    class's by the device memory the log names, from the release that made them hardware's),
    lowered to a smaller budget as vLLM lowers an unset max_num_seqs (0.32's EngineArgs)."""
    if report.get("max_num_seqs"):
        return int(report["max_num_seqs"]), "the log"
    world = (report.get("tensor_parallel_size") or 1) * (report.get("pipeline_parallel_size") or 1)
    release = parse(report.get("version"))
    if str(report.get("kv_cache_device") or "").upper() == "CPU":
        seqs, source = CPU_BATCH_DEFAULTS[1] * world, "vLLM's CPU default (128 per rank)"
    elif report.get("device_memory_gib") and release and release >= HARDWARE_DEFAULTS_SINCE:
        seqs = default_batch_limits(float(report["device_memory_gib"]))[1]
        source = f"vLLM's default for a {report['device_memory_gib']:g} GiB GPU"
    else:
        return None, None
    budget = report.get("max_num_batched_tokens")
    if budget and int(budget) < seqs:
        return int(budget), f"{source}, lowered to the budget of {budget} tokens"
    return seqs, source
