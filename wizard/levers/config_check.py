"""The one change, checked against what the server says about itself after a restart.

A declared change is a claim; the server's own description is the evidence. After a restart the
wizard compares what the live server reports (``vllm:cache_config_info`` in the repeated round's
``/metrics``, the model it serves) and, when its log was given, the new run's arguments, with
what they were before. Exactly the declared parameter should differ: none means the change did
not take (or cannot be seen), several mean the round changed more than one thing, and a different
model means another server answers behind the same URL.
"""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import LANGS, joined, plain, texts

# What a round's /metrics says of the engine (measure probe's `server` facts).
METRIC_KEYS = (
    "num_gpu_blocks",
    "num_gpu_blocks_override",
    "block_size",
    "gpu_memory_utilization",
    "enable_prefix_caching",
)
# What a new run's log says (vllm-log probe's facts of the last run).
LOG_KEYS = (
    "max_num_seqs", "max_num_batched_tokens", "max_model_len", "gpu_memory_utilization",
    "num_gpu_blocks_override", "tensor_parallel_size", "pipeline_parallel_size",
    "chunked_prefill", "enforce_eager", "api_server_count",
)  # fmt: skip
# vLLM's parameter names for the log's keys, where they differ (a change names vLLM's).
LOG_NAMES = {"chunked_prefill": "enable_chunked_prefill"}
# What vLLM derives from a declared change, so that it moves with it (never a second change): an
# unset max_num_batched_tokens is max(max_model_len, the class default) with chunked prefill off
# and the class default with it on (facts/vllm.md §3.1).
CONSEQUENCES = {"enable_chunked_prefill": {"max_num_batched_tokens"}}


def reported(round_facts: dict[str, Any], log_facts: dict[str, Any] | None) -> dict[str, Any]:
    """The server's self-description: ``{key: value}`` for every key it reported."""
    server = round_facts.get("server") or {}
    said = {f"metrics.{k}": server.get(k) for k in METRIC_KEYS if server.get(k) is not None}
    if log_facts:
        # A run's `non-default args` leave out what is at its default: absent is "default", so a
        # flag given in only one of two runs of the same server is a difference.
        said.update({f"log.{LOG_NAMES.get(k, k)}": _or_default(log_facts.get(k)) for k in LOG_KEYS})
    return said


def logged(log_facts: dict[str, Any]) -> dict[str, Any] | None:
    """A run's configuration as its `non-default args` line gave it, None when it logged none.

    The line comes before vLLM checks the configuration, so a refused start has it too; the
    values the run logged later (its engine config line) do not count: a refused start never got
    there, and comparing them with a start that did would show differences nobody made.
    """
    args = log_facts.get("logged_args")
    if not isinstance(args, dict):
        return None
    return {f"log.{LOG_NAMES.get(k, k)}": _or_default(args.get(k)) for k in LOG_KEYS}


DEFAULT = "(default)"


def _or_default(value: Any) -> Any:
    return DEFAULT if value is None else value


def differences(before: dict[str, Any], after: dict[str, Any]) -> dict[str, list[Any]]:
    """Keys whose value differs (both sides known), as ``{key: [before, after]}``."""
    return {
        key: [before[key], after[key]]
        for key in sorted(set(before) & set(after))
        if before[key] is not None and after[key] is not None and before[key] != after[key]
    }


def parameter_name(key: str) -> str:
    """``metrics.num_gpu_blocks_override`` -> ``num_gpu_blocks_override``."""
    return key.split(".", 1)[1]


def judge(declared: str, diffs: dict[str, list[Any]], observable: set[str]) -> dict[str, Any]:
    """What the server's own description says of the declared one change.

    Keys seen in both sources (metrics and log) count once. ``num_gpu_blocks`` follows from an
    override or the memory (CUDA graphs' too), so it is a consequence, not a second change; so
    are the values vLLM derives from the declared one (``CONSEQUENCES``).
    """
    declared = declared.strip().lstrip("-").replace("-", "_")
    changed = sorted({parameter_name(k) for k in diffs})
    consequences = {"num_gpu_blocks"} if len(changed) > 1 else set()
    if declared in changed:
        consequences |= CONSEQUENCES.get(declared, set())
    causes = [name for name in changed if name not in consequences]
    if not causes:
        seen = declared in {parameter_name(k) for k in observable}
        said = texts("check.not_taken" if seen else "check.not_observable", name=declared)
        return {"verdict": "not seen" if seen else "not observable", "changed": [],
                "text": said["en"], "texts": said}  # fmt: skip
    if causes == [declared]:
        said = texts("check.confirmed", change=_described(diffs, [declared]))
        return {"verdict": "confirmed", "changed": causes, "text": said["en"], "texts": said}
    said = texts("check.other", changes=_described(diffs, causes), declared=declared)
    return {"verdict": "several" if len(causes) > 1 else "other", "changed": causes,
            "text": said["en"], "texts": said}  # fmt: skip


def _described(diffs: dict[str, list[Any]], names: list[str]) -> dict[str, str]:
    """``max_num_seqs 256 -> 128; enforce_eager yes -> no`` in every language."""
    return {lang: joined([_describe(diffs, name, lang) for name in names], lang) for lang in LANGS}


def _describe(diffs: dict[str, list[Any]], name: str, lang: str) -> str:
    key = next(k for k in diffs if parameter_name(k) == name)
    before, after = diffs[key]
    return f"{name} {plain(before, lang)} -> {plain(after, lang)}"
