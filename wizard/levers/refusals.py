"""What vLLM refuses at start-up (P4.7), checked for every proposed vLLM change: the engine values the
walk knows (``server_config``) with the change applied must pass ``refusals``, or the change is
not offered as is."""

from __future__ import annotations

from typing import Any

from wizard.levers.change_values import (
    current,
)


def refusals(config: dict[str, Any]) -> list[str]:
    """What vLLM refuses at start-up for this configuration (only the keys present are checked)."""
    problems = []
    mml, budget = config.get("max_model_len"), config.get("max_num_batched_tokens")
    seqs = config.get("max_num_seqs")
    if config.get("chunked_prefill") is False and mml and budget and budget < mml:
        problems.append(
            f"max_num_batched_tokens {budget} < max_model_len {mml} with chunked prefill off"
        )
    if budget and seqs and budget < seqs:
        problems.append(f"max_num_batched_tokens {budget} < max_num_seqs {seqs}")
    blocks, block_size = config.get("num_gpu_blocks"), config.get("block_size")
    if blocks and block_size and mml and blocks < mml // block_size + 1:
        problems.append(
            f"{blocks} blocks of {block_size} tokens cannot hold one request of max_model_len "
            f"{mml} (needs {mml // block_size + 1})"
        )
    estimated = config.get("estimated_max_model_len")
    if estimated and mml and mml > estimated:
        problems.append(f"max_model_len {mml} is above the KV cache's estimate {estimated}")
    derived = config.get("derived_max_model_len")
    if derived and mml and mml > derived:
        problems.append(f"max_model_len {mml} is above the model's {derived}")
    heads, tp = config.get("num_attention_heads"), config.get("tensor_parallel_size")
    if heads and tp and heads % tp:
        problems.append(f"{heads} attention heads do not divide by tensor_parallel_size {tp}")
    utilization = config.get("gpu_memory_utilization")
    if utilization is not None and not 0 < utilization <= 1:
        problems.append(f"gpu_memory_utilization {utilization} outside (0, 1]")
    if seqs is not None and seqs < 1:
        problems.append("max_num_seqs below 1")
    return problems


def server_config(facts: dict[str, Any]) -> dict[str, Any]:
    """Every current engine value the walk knows (for the start-up check of a proposed change)."""
    keys = ("max_model_len", "max_num_batched_tokens", "max_num_seqs", "chunked_prefill",
            "num_gpu_blocks", "block_size", "gpu_memory_utilization", "derived_max_model_len",
            "num_attention_heads", "tensor_parallel_size")  # fmt: skip
    known = {key: current(facts, key) for key in keys}
    return {key: k.value for key, k in known.items() if k is not None}


# A change's parameter (vLLM's name) under the key ``refusals`` and ``server_config`` use.
CONFIG_KEYS = {"enable_chunked_prefill": "chunked_prefill"}
