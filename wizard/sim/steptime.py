"""How long one engine step takes, from what it computes and how the model is laid out."""

from __future__ import annotations

from wizard.sim.config import SimConfig


def step_time_ms(
    config: SimConfig,
    prefill_tokens: int,
    decode_seqs: int,
    draft_tokens: int = 0,
    grammar_chars: tuple[int, ...] = (),
    context_tokens: int = 0,
) -> float:
    """Return the wall time of one step (see ``StepCosts`` for the model and its constants).

    ``draft_tokens``: the speculative tokens verified in the step, over the ``decode_seqs``.
    ``grammar_chars``: the constraint size of each constrained sequence in the step.
    ``context_tokens``: the KV cache the step's attention reads (every scheduled sequence's
    context up to its new tokens), at the GPU's memory bandwidth (``kv_read_ms``).
    """
    costs = config.costs
    tp = config.tensor_parallel_size
    fixed = costs.fixed_ms + (costs.eager_extra_ms if config.enforce_eager else 0.0)
    compute = (
        prefill_tokens * costs.per_prefill_token_ms
        + (decode_seqs + draft_tokens) * costs.per_decode_seq_ms
    ) / tp + _drafting_ms(config, decode_seqs)
    if config.tp_spans_nodes:
        per_rank_allreduce = costs.tp_allreduce_network_ms
    elif config.interconnect == "nvlink":
        per_rank_allreduce = costs.tp_allreduce_nvlink_ms
    else:
        per_rank_allreduce = costs.tp_allreduce_pcie_ms
    communication = (tp - 1) * per_rank_allreduce
    stages = config.pipeline_parallel_size - 1
    across = min(stages, config.nodes - 1)  # stages laid out node after node
    hops = (stages - across) * costs.pp_hop_ms + across * costs.pp_hop_network_ms
    kv_read = kv_read_ms(config, context_tokens)
    return fixed + compute + communication + hops + _bitmask_ms(config, grammar_chars) + kv_read


def _bitmask_ms(config: SimConfig, grammar_chars: tuple[int, ...]) -> float:
    """The engine core fills each constrained sequence's token bitmask before the step."""
    costs = config.costs
    return sum(costs.grammar_mask_ms + chars / 1000 * costs.grammar_mask_ms_per_kchar
               for chars in grammar_chars)  # fmt: skip


def kv_read_ms(config: SimConfig, context_tokens: int) -> float:
    """Reading ``context_tokens`` of KV cache from GPU memory, each rank its share in parallel.

    A decode step computes little and reads much: the weights (in ``fixed_ms``) and the KV cache
    of every running sequence, which grows with each sequence's context. At a long context
    the KV read is what the step waits for: TPOT rises with context length at the same batch.
    Tensor parallelism splits the KV heads across ranks; pipeline stages read their own layers
    one after another, which adds up to the whole.
    """
    per_rank = config.kv_bytes_per_token / config.tensor_parallel_size
    return context_tokens * per_rank / (config.gpu_memory_bandwidth_gbps * 1e9) * 1000


def _drafting_ms(config: SimConfig, decode_seqs: int) -> float:
    """The draft model's passes before the step: one per draft position, each over the batch."""
    spec = config.speculative_config
    if spec is None or not spec.runs_draft_model or decode_seqs == 0:
        return 0.0
    costs = config.costs
    return spec.num_speculative_tokens * (
        costs.draft_fixed_ms + decode_seqs * costs.draft_per_seq_ms
    )
