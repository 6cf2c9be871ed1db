"""The changes that let a server vLLM refused to start start, computed from the refusal's numbers.

Each of vLLM's start-up refusals names its own numbers (the budget and max_num_seqs, the model's
limit, the attention heads, the KV cache needed against what the engine had, what PyTorch could
not allocate); the change is the nearest value vLLM's own check accepts, never a placeholder.
Where a number the change needs is not in the log, the change says which one is missing.
"""

from __future__ import annotations

import math
from typing import Any

from wizard.levers.change_values import Computer, Known, Proposal, current, fact
from wizard.levers.change_values import unknown_change as _unknown
from wizard.levers.change_values import vllm_change as _vllm

# vLLM takes --gpu-memory-utilization in (0, 1] (CacheConfig's check): a share above 1 is refused.
MAX_UTILIZATION = 1.0
# The refusal prints GiB with two decimals (vLLM's format_gib): each figure may be up to half a
# hundredth low, so the shortfall read from two of them may be a hundredth short.
PRINTED_GIB_ERROR = 0.01


def budget_to_max_num_seqs(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT036: the budget raised to max_num_seqs, the least vLLM's scheduler check accepts.

    Every running sequence decodes one token a step inside the budget, so vLLM needs the budget at
    or above max_num_seqs (config/scheduler.py); with chunked prefill off it must also hold one
    max_model_len prompt. Raising the budget keeps the concurrency the operator chose.
    """
    budget, seqs = current(facts, "max_num_batched_tokens"), current(facts, "max_num_seqs")
    if seqs is None:
        return _unknown(template, "max_num_seqs",
                        "--max-num-batched-tokens <at least the max_num_seqs the server was given>")  # fmt: skip
    after, why = int(seqs.value), f"max_num_seqs is {seqs.value}"
    mml, chunked = current(facts, "max_model_len"), current(facts, "chunked_prefill")
    if chunked is not None and chunked.value is False and mml is not None and mml.value > after:
        after, why = (
            int(mml.value),
            f"{why} and chunked prefill is off with max_model_len {mml.value}",
        )
    return _vllm("max_num_batched_tokens", budget, after, (
        f"{why}: vLLM needs at least one token of the step's budget for every running sequence"
    ))  # fmt: skip


def model_len_of_the_model(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT037: max_model_len lowered to the model's own limit, which vLLM's refusal names."""
    derived, mml = current(facts, "derived_max_model_len"), current(facts, "max_model_len")
    if derived is None:
        return _unknown(template, "the model's own limit",
                        "--max-model-len <the max_position_embeddings of the model's config.json>")  # fmt: skip
    return _vllm("max_model_len", mml, int(derived.value), (
        f"the model's config.json allows {derived.value} tokens (vLLM's derived max_model_len)"
    ))  # fmt: skip


def tp_dividing_heads(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT033: the largest tensor-parallel size below today's that divides the attention heads."""
    heads, tp = current(facts, "num_attention_heads"), current(facts, "tensor_parallel_size")
    if heads is None or tp is None:
        return _unknown(template, "the model's attention heads",
                        "--tensor-parallel-size <a divisor of the model's num_attention_heads>")  # fmt: skip
    count, now = int(heads.value), int(tp.value)
    after = max(d for d in range(1, max(now, 2)) if count % d == 0)
    above = next((d for d in range(now + 1, count + 1) if count % d == 0), None)
    also = f"; with GPUs to spare and weights too large for {after}, {above} divides them too" if (
        above) else ""  # fmt: skip
    return _vllm("tensor_parallel_size", tp, after, (
        f"the model has {count} attention heads; {after} is the largest size below {now} that "
        f"divides them (vLLM gives every GPU the same share){also}"
    ))  # fmt: skip


def _utilization(facts: dict[str, Any]) -> Known | None:
    found = current(facts, "gpu_memory_utilization")
    return found if found is not None and 0 < float(found.value) <= MAX_UTILIZATION else None


def _raised(now: float, shortfall_gib: float, device_gib: float) -> float:
    """The share of the device that gives the engine ``shortfall_gib`` more, up to a hundredth."""
    return math.ceil((now + shortfall_gib / device_gib) * 100 - 1e-9) / 100


def kv_memory_for_one_request(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT038 / LAT040: the memory share that holds one max_model_len request's KV cache.

    From the log's numbers: the KV cache the request needs against what the engine had (the
    refusal's), the KV bytes per token (the refusal's, or an earlier start's cache size against
    its memory), the utilization and the device's memory. Where the KV cache is not sized by the
    utilization (the CPU backend, a block-count override), or even the whole device is too
    small, max_model_len is lowered to what the log says fits.
    """
    mml = current(facts, "max_model_len")
    device, utilization = current(facts, "device_memory_gib"), _utilization(facts)
    sized_otherwise = current(facts, "num_gpu_blocks_override") is not None or (
        str(getattr(current(facts, "kv_cache_device"), "value", "")).upper() == "CPU")  # fmt: skip
    shortfall, what = _kv_shortfall(facts, mml)
    if sized_otherwise or device is None or utilization is None or shortfall is None:
        missing = ("the device's memory" if device is None else "gpu_memory_utilization"
                   if utilization is None else what)  # fmt: skip
        return _model_len_that_fits(facts, template, mml, None if sized_otherwise else missing)
    now, total = float(utilization.value), float(device.value)
    after = _raised(now, shortfall + PRINTED_GIB_ERROR, total)
    if after > MAX_UTILIZATION:
        return _model_len_that_fits(facts, template, mml, None, (
            f"even all of the {total:g} GiB device leaves the KV cache {shortfall:.2f} GiB short"
        ))  # fmt: skip
    return _vllm("gpu_memory_utilization", utilization, after, (
        f"{what}: {shortfall:.2f} GiB more of the {total:g} GiB device, from {now:g} to {after:g} "
        "(lowering max_model_len to what fits is the other lever)"
    ))  # fmt: skip


def _kv_shortfall(facts: dict[str, Any], mml: Known | None) -> tuple[float | None, str]:
    """GiB the engine lacks for one max_model_len request, and how the log says so."""
    needed, had = current(facts, "kv_needed_gib"), current(facts, "kv_cache_memory_gib")
    if needed is not None and had is not None:
        return float(needed.value) - float(had.value), (
            f"the refusal says {needed.value} GiB of KV cache is needed and {had.value} GiB was there"
        )
    per_token = current(facts, "kv_gib_per_token")
    if had is None or mml is None:
        return None, "the KV cache memory the engine had"
    if per_token is None:
        return None, "the KV bytes per token (no start of this model in the log sized its cache)"
    request = float(per_token.value) * int(mml.value)
    return request - float(had.value), (
        f"the engine had {had.value} GiB for the KV cache and one request of {mml.value} tokens "
        f"needs {request:.2f} GiB ({fact(facts, 'vllmlog.kv_gib_per_token_from') or per_token.source})"
    )  # fmt: skip


def _model_len_that_fits(
    facts: dict[str, Any], template: dict[str, Any], mml: Known | None, missing: str | None,
    why: str = "",
) -> Proposal:  # fmt: skip
    """max_model_len lowered to vLLM's own estimate of what the KV cache holds."""
    estimated = current(facts, "estimated_max_model_len")
    why = f"{why}; " if why else f"raising gpu_memory_utilization is not computed: {missing} is unknown; " if missing else ""  # fmt: skip
    if estimated is not None and (mml is None or int(estimated.value) < int(mml.value)):
        return _vllm("max_model_len", mml, int(estimated.value), (
            f"{why}the log says the KV cache holds at most {estimated.value} tokens per request"
        ))  # fmt: skip
    tokens, block = current(facts, "kv_cache_tokens"), current(facts, "block_size")
    if tokens is not None and block is not None and int(tokens.value) > int(block.value):
        return _vllm("max_model_len", mml, int(tokens.value) - int(block.value), (
            f"{why}{tokens.value} KV tokens less one block of {block.value}"
        ))  # fmt: skip
    return _unknown(
        {**template, "parameter": "gpu_memory_utilization", "direction": "raise"},
        missing or "what fits",
        "--gpu-memory-utilization <the share that holds the weights and one max_model_len "
        f"request's KV cache: {missing or 'what fits'} is not in the log>",
    )  # fmt: skip


def room_for_graphs(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT039: the utilization lowered by the CUDA graphs' memory, which the capture lacked.

    The graphs are captured after the KV cache took its share (vLLM before 0.21 did not count
    them in it): the share must leave them room, their memory as an earlier start logged it
    ("Graph capturing finished ... took X GiB"), else at least what the failed allocation lacked.
    """
    utilization, device = _utilization(facts), current(facts, "device_memory_gib")
    graphs = current(facts, "graph_memory_gib")
    asked, free = current(facts, "oom_requested_gib"), current(facts, "oom_free_gib")
    lacked = float(asked.value) - float(free.value) if asked and free else None
    room = max(float(graphs.value) if graphs else 0.0, lacked or 0.0)
    if utilization is None or device is None or room <= 0:
        missing = ("gpu_memory_utilization" if utilization is None else "the device's memory"
                   if device is None else "the CUDA graphs' memory")  # fmt: skip
        return _unknown(template, missing, "--gpu-memory-utilization <lower by the CUDA graphs' "
                        f"memory: {missing} is not in the log>")  # fmt: skip
    now, total = float(utilization.value), float(device.value)
    after = math.floor((now - (room + PRINTED_GIB_ERROR) / total) * 100 + 1e-9) / 100
    if after <= 0:
        return _unknown(template, "a share that leaves the graphs room",
                        "--enforce-eager <the graphs need more than the engine's whole share>")  # fmt: skip
    source = (
        f"an earlier start's graphs took {graphs.value} GiB"
        if graphs is not None and room == float(graphs.value)
        else f"the capture asked {room:.2f} GiB more than was free"
    )
    return _vllm("gpu_memory_utilization", utilization, after, (
        f"{source}: {room:.2f} GiB of the {total:g} GiB device left to the graphs"
    ))  # fmt: skip


REFUSAL_COMPUTERS: dict[str, Computer] = {
    "budget_to_max_num_seqs": budget_to_max_num_seqs,
    "model_len_of_the_model": model_len_of_the_model, "tp_dividing_heads": tp_dividing_heads,
    "kv_memory_for_one_request": kv_memory_for_one_request, "room_for_graphs": room_for_graphs,
}  # fmt: skip
