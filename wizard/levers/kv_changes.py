"""The changes that give a loaded round's requests room: KV cache memory, or fewer sequences.

Each is computed from the server's own numbers: the round's demand in tokens (its streams times
their prompt and output), the tokens the KV cache holds now (the log's ``GPU KV cache size``, or
``num_gpu_blocks x block_size`` from ``vllm:cache_config_info``), the KV bytes per token (an earlier
start's cache memory over its tokens), the device's memory, and the limits vLLM reports. When one
of them is unknown the change names it and proposes no number.
"""

from __future__ import annotations

import math
from typing import Any

from wizard.levers import vllm_versions
from wizard.levers.change_values import (
    ROUNDS,
    Known,
    Proposal,
    current,
    fact,
    known_before,
    round_demand,
)
from wizard.levers.change_values import unknown_change as _unknown
from wizard.levers.change_values import vllm_change as _vllm

# The largest --gpu-memory-utilization proposed when the log does not say how much of the device
# was free at start: vLLM takes the share in (0, 1] (config/cache.py), but refuses to start when
# the share is more than the memory free on the device at start-up ("Free memory on device ...
# is less than desired GPU memory utilization", v1/worker/utils.py), and the CUDA context alone
# takes some of it: on a real GPU 1.0 never starts, the hundredth below it may.
LARGEST_UTILIZATION = 0.99
# The PyTorch OOM message and vLLM's memory lines print GiB with two decimals: each figure may be
# up to half a hundredth off.
PRINTED_GIB_HALF_ERROR = 0.005
# LAT010's lever when memory is not one: LAT015's.
FEWER = {"layer": "vllm", "parameter": "max_num_seqs", "direction": "lower"}


def blocks_for(concurrency: int, per_request: int, block_size: int) -> int:
    """KV blocks ``concurrency`` requests of ``per_request`` tokens hold at their longest.

    Every request holds ceil(tokens / block) blocks (its prompt's BOS and last token included),
    plus one the scheduler allocates ahead as it crosses a block boundary: measured on a real
    vLLM, exactly ceil(300 / 128) x 8 = 24 blocks still preempted under 8 streams.
    """
    return concurrency * (math.ceil((per_request + 1) / block_size) + 1)


def _kv_tokens(facts: dict[str, Any]) -> Known | None:
    """The tokens the KV cache holds now: the log's or cache_config_info's count."""
    tokens = current(facts, "kv_cache_tokens")
    blocks, block = current(facts, "num_gpu_blocks"), current(facts, "block_size")
    if tokens is None and blocks is not None and block is not None:
        tokens = Known(int(blocks.value) * int(block.value), f"{blocks.source} x {block.source}")
    return tokens


def kv_room(facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]) -> Proposal:
    """LAT010: give the KV cache room for the round that preempted, on the limit actually set."""
    demand = round_demand(facts, "loaded")
    block = current(facts, "block_size")
    override = current(facts, "num_gpu_blocks_override")
    blocks = current(facts, "num_gpu_blocks")
    if override is not None and demand is not None and block is not None:
        concurrency, per_request = demand
        needed = blocks_for(concurrency, per_request, int(block.value))
        after = max(needed, int(override.value) + 1)
        return _vllm("num_gpu_blocks_override", override, after, (
            f"the cache is capped at {override.value} blocks of {block.value} tokens; "
            f"{concurrency} streams of {per_request} tokens need {needed} blocks"
        ))  # fmt: skip
    device = current(facts, "kv_cache_device")
    if device is not None and str(device.value).upper() == "CPU":
        return {
            "layer": "host", "parameter": "VLLM_CPU_KVCACHE_SPACE", "before": None, "after": None,
            "apply": "VLLM_CPU_KVCACHE_SPACE=<more GiB than `Explicitly set ... GiB for KV cache` in the log>",
            "basis": "the CPU backend sizes its KV cache from VLLM_CPU_KVCACHE_SPACE, not from "
                     f"gpu_memory_utilization ({blocks.value if blocks else '?'} blocks now)",
        }  # fmt: skip
    utilization = current(facts, "gpu_memory_utilization")
    if utilization is None and blocks is not None:
        # The engine reported its cache configuration with the utilization unset: the default,
        # which depends on whether the KV cache is extensible (vLLM 0.34).
        extensible = any(fact(facts, f"{r}.server.enable_extensible_kv_cache") for r in ROUNDS)
        utilization = Known(
            vllm_versions.UNSET_GPU_MEMORY_UTILIZATION[extensible],
            "vLLM's default (reported unset" + (", extensible KV cache)" if extensible else ")"),
        )
        if extensible:
            # All of the device is the engine's already: more memory is not a lever, fewer
            # sequences competing for the KV cache is (LAT015's).
            fewer = {**fewer_seqs(facts, answers, FEWER), "direction": "lower"}
            fewer["basis"] += (
                "; the extensible KV cache already gives the engine the whole device "
                "(unset --gpu-memory-utilization resolves to 1.0)"
            )
            return fewer
    if utilization is None:
        return _unknown(
            template, "gpu_memory_utilization",
            "--gpu-memory-utilization <higher than now: read it in the log's non-default args>",
        )  # fmt: skip
    return _memory_for_demand(facts, answers, template, utilization, demand)


def _memory_for_demand(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any],
    utilization: Known, demand: tuple[int, int] | None,
) -> Proposal:  # fmt: skip
    """The share of the device whose KV cache holds the round's demand.

    vLLM gives the engine ``gpu_memory_utilization x`` the device's memory; the weights, the
    activations' peak and the CUDA graphs come out of it first and the KV cache gets the rest
    (gpu_worker.py's determine_available_memory). So raising the share by d gives the KV cache
    d x the device's memory more, everything else equal: the tokens the cache lacks for the
    round, times the KV bytes per token, over the device's memory, is the rise.
    """
    now = float(utilization.value)
    tokens, block = _kv_tokens(facts), current(facts, "block_size")
    per_token, device = current(facts, "kv_gib_per_token"), current(facts, "device_memory_gib")
    needs = {
        "the round's demand in tokens (its streams, prompt and output)": demand,
        "the tokens the KV cache holds now (the log's GPU KV cache size, or "
        "vllm:cache_config_info's num_gpu_blocks x block_size)": tokens,
        "the KV cache's block size": block,
        "the KV bytes per token (the log's `Available KV cache memory` with its "
        "`GPU KV cache size` of the same start)": per_token,
        "the device's memory (the log's, or the GPU host's nvidia-smi)": device,
    }
    missing = [name for name, value in needs.items() if value is None]
    if missing or demand is None or tokens is None or block is None:
        return known_before(_unknown(template, "; ".join(missing), (
            f"--gpu-memory-utilization <above {now:g}: enough that the KV cache holds the "
            "round's streams at their full length>"
        )), utilization)  # fmt: skip
    assert per_token is not None and device is not None
    concurrency, per_request = demand
    size = int(block.value)
    # One block more than the requests hold: V1's block pool keeps block 0 as its null block,
    # never given to a request (v1/core/block_pool.py).
    needed = (blocks_for(concurrency, per_request, size) + 1) * size
    had = int(tokens.value)
    if needed <= had:
        return known_before(_unknown(template, "a KV shortfall for this round", (
            f"--gpu-memory-utilization <the KV cache's {had} tokens already hold the round's "
            f"{concurrency} x {per_request}: the preemptions came from longer requests than the "
            "round's, measure the incident's own lengths>"
        )), utilization)  # fmt: skip
    more_gib = (needed - had) * float(per_token.value)
    total = float(device.value)
    # Rounded up to the hundredth the flag is usually given in: never a share that falls short.
    after = math.ceil((now + more_gib / total) * 100 - 1e-9) / 100
    why = (
        f"{concurrency} streams of {per_request} tokens need {needed} KV tokens in blocks of "
        f"{size} ({fact(facts, 'loaded.demand_tokens') or concurrency * per_request} in all), "
        f"the cache holds {had}: {needed - had} tokens of {float(per_token.value) * 2**30:.0f} "
        f"bytes each are {more_gib:.2f} GiB of the {total:g} GiB device"
    )
    if after > LARGEST_UTILIZATION:
        fewer = {**fewer_seqs(facts, answers, FEWER), "direction": "lower"}
        fewer["basis"] += (
            f"; more memory cannot do it: {why}, a share of {after:g}, above the "
            f"{LARGEST_UTILIZATION:g} vLLM can start with"
        )
        return fewer
    return _vllm("gpu_memory_utilization", utilization, after, f"{why}: from {now:g} to {after:g}")


def fewer_seqs(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT015 / LAT041 / LAT043: fewer sequences, as many as the memory holds.

    Where CUDA ran out of memory (LAT043), as many as the failed allocation fits in the memory
    that was free; else as many as the KV cache holds at the round's length (its tokens over a
    request's). Without those numbers, the change says which are missing.
    """
    seqs = current(facts, "max_num_seqs")
    tokens, demand = _kv_tokens(facts), round_demand(facts, "loaded")
    asked, free = current(facts, "oom_requested_gib"), current(facts, "oom_free_gib")
    how = "--max-num-seqs <as many requests as the KV cache holds at the incident's length>"
    if seqs is not None and asked is not None and free is not None:
        # The allocation that failed grows with the batch: at start the profile run samples
        # max_num_seqs dummy requests at once (their logits, sequences x vocabulary), while
        # serving a step holds at most max_num_seqs sequences. Scaled to what was free.
        share = (float(free.value) - PRINTED_GIB_HALF_ERROR) / (
            float(asked.value) + PRINTED_GIB_HALF_ERROR)  # fmt: skip
        after = max(1, math.floor(int(seqs.value) * share))
        when = ("the profile run that samples {} dummy requests at once"
                if fact(facts, "vllmlog.startup_failed") is True
                else "a step of at most {} sequences")  # fmt: skip
        return _vllm("max_num_seqs", seqs, after, (
            f"{when.format(seqs.value)} asked {float(asked.value):.2f} GiB with "
            f"{float(free.value):.2f} GiB free: a batch of {after} fits in that"
        ))  # fmt: skip
    if tokens is not None and demand is not None:
        fit = int(tokens.value) // demand[1]
        if fit < 1:
            return _unknown(template, "a sequence count the KV cache holds",
                            f"the KV cache's {tokens.value} tokens hold no request of "
                            f"{demand[1]}: give it more memory or lower max_model_len")  # fmt: skip
        basis = f"{tokens.value} KV tokens hold {fit} requests of {demand[1]} tokens"
        if seqs is not None and fit >= int(seqs.value):
            return known_before(_unknown(
                template, "a count below max_num_seqs that the round's length calls for",
                f"--max-num-seqs <below {seqs.value}: {basis}, as many as the limit; read the "
                "incident's own request lengths>",
            ), seqs)  # fmt: skip
        return _vllm("max_num_seqs", seqs, fit, basis + (
            "" if seqs is not None else " (the server's max_num_seqs is unknown)"))  # fmt: skip
    missing = "the KV cache's tokens and the round's length" + (
        "" if seqs is not None else ", and the server's max_num_seqs")  # fmt: skip
    if seqs is None:
        return _unknown(template, missing, how)
    return known_before(_unknown(template, missing, how), seqs)


def more_seqs(facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]) -> Proposal:
    """LAT013: room for every request that arrived together, if the KV cache holds them.

    Today's value is the server's (its log, else vLLM's default for the log's device), never what
    the round ran: the running count is capped by it, not the same thing.
    """
    seqs = current(facts, "max_num_seqs")
    running = fact(facts, "loaded.server.running_max")
    waiting = fact(facts, "loaded.server.waiting_max")
    if seqs is None:
        return _unknown(template, "the server's max_num_seqs (its log's arguments, or the release "
                        "and device that set vLLM's default)",
                        "--max-num-seqs <above today's value: read it in the log's non-default "
                        "args, else vLLM's default for the GPU>")  # fmt: skip
    arrived = int((running or 0) + (waiting or 0))
    demand = round_demand(facts, "loaded")
    wanted = max(arrived, demand[0] if demand else 0)
    if wanted <= int(seqs.value):
        return known_before(_unknown(
            template, "a demand above today's max_num_seqs",
            f"--max-num-seqs <above {seqs.value}: the round never filled it>"), seqs)  # fmt: skip
    tokens = _kv_tokens(facts)
    if tokens is not None and demand is not None:
        fit = int(tokens.value) // demand[1]
        if fit <= int(seqs.value):
            return {
                "layer": "vllm", "parameter": "replicas", "before": None, "after": None,
                "apply": "add a replica (the KV cache has no room for more sequences)",
                "basis": f"{tokens.value} KV tokens hold only {fit} requests of {demand[1]} tokens",
            }  # fmt: skip
        wanted = min(wanted, fit)
    source = fact(facts, "vllmlog.max_num_seqs_from")
    seen = (
        f"{arrived} requests were in the server at once ({running} running, {waiting} waiting)"
        if running is not None
        else "the server's stats are off (no running count)"
    )
    sent = f"the round sent {demand[0]} together" if demand else "the round's streams are unknown"
    limit = f"max_num_seqs {seqs.value}" + (
        f" ({source})" if source and source != "the log" else ""
    )  # fmt: skip
    return _vllm("max_num_seqs", seqs, wanted, f"{seen}; {sent}, against {limit}")
