"""The one change a finding proposes, computed from the server's current values.

A finding's ``change`` in the playbook names the layer and the lever; when it says ``compute:
NAME``, the concrete values come from the function registered under NAME here (each layer's in its
own module: ``vllm_changes``, ``kv_changes``, ``refusal_changes``, ``nginx_changes``,
``client_changes``), fed with what the walk knows about the server (its ``/metrics`` ``cache_config_info``, its log, ``/v1/models``,
the round's own spec). A constant could go the wrong way (a "lower to 2048" for a budget of 256),
so nothing here proposes a fixed number: when the current value is unknown, the change says what
to read instead of guessing. Every vLLM change is then checked against what vLLM refuses at
start-up (``refusals``), so the wizard never proposes a server that would not start.
"""

from __future__ import annotations

from typing import Any

from wizard.levers import vllm_versions
from wizard.levers.change_values import Computer
from wizard.levers.client_changes import (
    lower_client_concurrency,
    smaller_constraint,
    varying_part_to_end,
)
from wizard.levers.kv_changes import fewer_seqs, kv_room, more_seqs
from wizard.levers.nginx_changes import buffering_off, gzip_without_event_stream, read_timeout
from wizard.levers.refusal_changes import REFUSAL_COMPUTERS
from wizard.levers.refusals import CONFIG_KEYS, refusals, server_config
from wizard.levers.vllm_changes import (
    budget_to_model_len,
    chunked_prefill_on,
    context_the_bandwidth_serves,
    fewer_speculative_tokens,
    graphs_on,
    larger_budget,
    more_api_servers,
    parallel_layout,
    prefix_caching_on,
    smaller_budget,
)

# Every computer by the name a finding's ``compute:`` gives.
COMPUTERS: dict[str, Computer] = {
    "kv_room": kv_room, "fewer_seqs": fewer_seqs, "more_seqs": more_seqs,
    "smaller_budget": smaller_budget, "larger_budget": larger_budget,
    "budget_to_model_len": budget_to_model_len,
    "read_timeout": read_timeout, "buffering_off": buffering_off,
    "gzip_without_event_stream": gzip_without_event_stream,
    "lower_client_concurrency": lower_client_concurrency, "prefix_caching_on": prefix_caching_on,
    "chunked_prefill_on": chunked_prefill_on, "graphs_on": graphs_on,
    "parallel_layout": parallel_layout, "fewer_speculative_tokens": fewer_speculative_tokens,
    "more_api_servers": more_api_servers, "smaller_constraint": smaller_constraint,
    "context_the_bandwidth_serves": context_the_bandwidth_serves,
    "varying_part_to_end": varying_part_to_end,
    **REFUSAL_COMPUTERS,
}  # fmt: skip


def propose(
    template: dict[str, Any] | None, facts: dict[str, Any], answers: dict[str, Any]
) -> dict[str, Any] | None:
    """The concrete change of a finding: the playbook's template, its computed values filled in.

    A change that would do nothing, or that vLLM would refuse at start-up, is returned with
    ``not_applicable`` (why) rather than silently adjusted, so the operator sees why it is not
    offered as is.
    """
    if template is None:
        return None
    name = template.get("compute")
    if name is None:
        return dict(template)
    computed = COMPUTERS[name](facts, answers, template)
    change = {**{k: v for k, v in template.items() if k != "compute"}, **computed}
    release = vllm_versions.server_release(facts) if change["layer"] == "vllm" else None
    missing = (
        vllm_versions.missing_flags(str(change.get("apply", "")), release[0]) if release else []
    )
    if change.get("after") is not None and change.get("before") == change["after"]:
        change["not_applicable"] = f"{change['parameter']} is already {change['after']}"
    elif missing and release:
        change["not_applicable"] = (
            f"vLLM {'.'.join(map(str, release[0]))} ({release[1]}) has no " + "; ".join(missing)
        )
    elif change["layer"] == "vllm" and change.get("after") is not None:
        key = CONFIG_KEYS.get(change["parameter"], change["parameter"])
        problems = refusals({**server_config(facts), key: change["after"]})
        if problems:
            change["not_applicable"] = "vLLM would refuse to start: " + "; ".join(problems)
    return change


def unusable(change: dict[str, Any]) -> str | None:
    """Why a computed change cannot be applied as proposed (no value, or vLLM would refuse it)."""
    if change.get("not_applicable"):
        return str(change["not_applicable"])
    if "basis" in change and change.get("after") is None:
        return str(change["basis"])
    return None
