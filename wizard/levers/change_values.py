"""The server's current values as a change reads them, and the two shapes of a proposed change.

A value comes with where it was read (``Known``): what the live server reports about itself, then
its log, then /v1/models. A change is either a vLLM flag with its computed value (``vllm_change``)
or, when a value it needs is unknown, what to read instead (``unknown_change``): never a guess.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wizard.playbook import conditions

# Where the server's current engine configuration is read, most authoritative first: what the live
# server reports about itself, then its log (the incident's run), then /v1/models.
ROUNDS = ("loaded", "direct", "long", "proxy")


@dataclass(frozen=True)
class Known:
    """One current value and where it came from (shown with the change)."""

    value: Any
    source: str


def fact(facts: dict[str, Any], path: str) -> Any:
    found = conditions.lookup(facts, path)
    return None if found is conditions.MISSING else found


def current(facts: dict[str, Any], key: str) -> Known | None:
    """The server's current value of an engine setting, with its source, or None when unknown."""
    paths = {
        "num_gpu_blocks": [f"{r}.server.num_gpu_blocks" for r in ROUNDS]
        + ["vllmlog.num_gpu_blocks"],
        "num_gpu_blocks_override": [f"{r}.server.num_gpu_blocks_override" for r in ROUNDS]
        + ["vllmlog.num_gpu_blocks_override"],
        "block_size": [f"{r}.server.block_size" for r in ROUNDS] + ["vllmlog.block_size"],
        "kv_cache_tokens": [f"{r}.server.kv_cache_tokens" for r in ROUNDS]
        + ["vllmlog.kv_cache_tokens"],
        "gpu_memory_utilization": ["vllmlog.gpu_memory_utilization"]
        + [f"{r}.server.gpu_memory_utilization" for r in ROUNDS],
        "max_model_len": ["endpoints.max_model_len", "vllmlog.max_model_len"],
        # The log's value, else vLLM's default for the log's device (vllm_defaults).
        "max_num_seqs": ["vllmlog.max_num_seqs", "vllmlog.max_num_seqs_effective"],
        "max_num_batched_tokens": ["vllmlog.max_num_batched_tokens"],
        "chunked_prefill": ["vllmlog.chunked_prefill"],
        "enforce_eager": ["vllmlog.enforce_eager"],
        "api_server_count": ["vllmlog.api_server_count"],
        "estimated_max_model_len": ["vllmlog.estimated_max_model_len"],
        "kv_cache_device": ["vllmlog.kv_cache_device"],
        # The device's memory: the log's (an OOM's capacity, a free-memory line), else the GPU
        # host's own evidence (nvidia-smi), which the host probe gives only for the server's host.
        "device_memory_gib": ["vllmlog.device_memory_gib", "host.gpu_host.gpu_memory_gib"],
        "kv_gib_per_token": ["vllmlog.kv_gib_per_token"],
    }.get(key, [f"vllmlog.{key}"])  # the rest only a log can say (a refusal's own numbers)
    for path in paths:
        value = fact(facts, path)
        if value is not None:
            return Known(value, path)
    return None


def round_demand(facts: dict[str, Any], round_as: str) -> tuple[int, int] | None:
    """(concurrency, tokens per request) of a measured round: what the KV cache must hold."""
    spec = fact(facts, f"{round_as}.spec")
    if not isinstance(spec, dict):
        return None
    return int(spec["concurrency"]), int(spec["input_tokens"]) + int(spec["output_tokens"])


Proposal = dict[str, Any]
Computer = Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], Proposal]


def flag(parameter: str) -> str:
    return "--" + parameter.replace("_", "-")


def vllm_change(parameter: str, before: Known | None, after: Any, basis: str) -> Proposal:
    return {
        "layer": "vllm", "parameter": parameter,
        "before": None if before is None else before.value,
        "before_from": None if before is None else before.source,
        "after": after, "apply": f"{flag(parameter)} {after}", "basis": basis,
    }  # fmt: skip


def unknown_change(template: dict[str, Any], missing: str, how: str) -> Proposal:
    """A lever whose value cannot be computed: say what to read, never guess a number."""
    return {
        "layer": template["layer"], "parameter": template["parameter"], "before": None,
        "after": None, "apply": how, "basis": f"not computed: {missing} is unknown",
        "direction": template.get("direction"),
    }  # fmt: skip


def known_before(change: Proposal, before: Known) -> Proposal:
    """An uncomputed change that still shows the server's current value and where it was read."""
    return {**change, "before": before.value, "before_from": before.source}
