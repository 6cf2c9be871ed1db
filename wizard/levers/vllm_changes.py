"""The vLLM layer's changes, each computed from the server's current values (its ``/metrics``
``cache_config_info``, its log, ``/v1/models``, the rounds' own figures): the prefill budget,
chunked prefill, CUDA graphs, the parallel layout, prefix caching, speculative tokens, the context
the bandwidth serves and the API servers. The KV cache's own are in ``kv_changes``."""

from __future__ import annotations

import math
from typing import Any

from wizard.levers import vllm_versions
from wizard.levers.change_values import (
    Known,
    Proposal,
    current,
    known_before,
    round_demand,
)
from wizard.levers.change_values import fact as _fact
from wizard.levers.change_values import unknown_change as _unknown
from wizard.levers.change_values import vllm_change as _vllm
from wizard.levers.refusals import server_config
from wizard.levers.vllm_defaults import SMALLEST_DEFAULT_BATCHED_TOKENS


def _budget(facts: dict[str, Any]) -> Known | None:
    found = current(facts, "max_num_batched_tokens")
    if found is None:
        default = _fact(facts, "host.batch_budget_default")
        if default:
            return Known(int(default), "host.batch_budget_default (vLLM's default for this GPU)")
    return found


# LAT011's target for the long round's worst gap: twice the baseline's worst gap, half of what
# LAT011's bar (3x) allows above it; the other half is left to the re-measure's noise and to the
# linear step model (LAT024 aims below its bar the same way).
LONG_PROMPT_GAP_TARGET = 2.0


def smaller_budget(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT011: the prefill tokens per step whose step keeps the decoding streams' gaps short.

    A step that carries a chunk of prefill takes the plain decode step (the long round's median
    gap) plus a cost per prefill token; the long round's worst gap is a step with one chunk of
    the long prompt (the budget, or the prompt when it is shorter). The budget whose step stays
    within twice the baseline's worst gap follows, never below vLLM's default for the GPU class
    (LAT012's bar: below it long prompts wait) nor below what vLLM needs to start. Without the
    log's budget, the long round's timing estimates it (``long.budget_estimate``).
    """
    budget = current(facts, "max_num_batched_tokens")
    if budget is None:
        return _below_measured_budget(facts, template)
    today = int(budget.value)
    worst, plain = _fact(facts, "long.steady.itl_p99"), _fact(facts, "long.steady.itl_p50")
    base, prompt = _fact(facts, "direct.steady.itl_p99"), _fact(facts, "long.spec.input_tokens")
    if not all(isinstance(v, int | float) and v > 0 for v in (worst, plain, base)) or (
        worst <= plain
    ):
        return known_before(_unknown(
            template, "the long round's gaps (median and p99) and the baseline's worst gap",
            "--max-num-batched-tokens <below today's: the budget whose step keeps the gaps "
            "near the baseline's>",
        ), budget)  # fmt: skip
    chunk = min(today, prompt) if isinstance(prompt, int) and prompt > 0 else today
    per_token = (worst - plain) / chunk
    target = LONG_PROMPT_GAP_TARGET * base
    wanted = max(1, int((target - plain) / per_token))
    default = _fact(facts, "host.batch_budget_default")
    lowest = default if isinstance(default, int) else SMALLEST_DEFAULT_BATCHED_TOKENS
    config = server_config(facts)
    floor = [lowest, config.get("max_num_seqs") or 1]
    if config.get("chunked_prefill") is False and config.get("max_model_len"):
        floor.append(int(config["max_model_len"]))
    after = max(wanted, *floor)
    why = (
        f"the long round's worst gap {worst:.0f} ms against its median {plain:.0f} ms is a step "
        f"with {chunk} prefill tokens ({per_token * 1000:.2f} ms per 1,000); a gap of "
        f"{target:.0f} ms (twice the baseline's worst, {base:.0f} ms) allows {wanted}"
    )
    if after >= today:
        return known_before(_unknown(
            template, "a budget below today's that the gaps call for",
            f"--max-num-batched-tokens <below {today}: {why}, not below today's>",
        ), budget)  # fmt: skip
    if after > wanted:
        why += (
            f"; {after} is "
            + ("vLLM's default for this GPU class" if after == lowest and default else
               "the least vLLM takes here" if after != lowest else
               "the smallest of vLLM's class defaults")
            + " (fewer would slow long prompts' first token, LAT012)"
        )  # fmt: skip
    return _vllm("max_num_batched_tokens", budget, after, why)


def _below_measured_budget(facts: dict[str, Any], template: dict[str, Any]) -> Proposal:
    estimate = _fact(facts, "long.budget_estimate")
    if not isinstance(estimate, int) or estimate < 4:
        return _unknown(
            template, "max_num_batched_tokens",
            "--max-num-batched-tokens <half of today's value: read it in the log's non-default "
            "args>",
        )  # fmt: skip
    # LAT011 claims a budget above the class default only at twice the default (the estimate's
    # margin): today's budget is taken to be above half the estimate, and the change stays there.
    default = _fact(facts, "host.batch_budget_default")
    if isinstance(default, int) and 2 * default < estimate:
        after, target = default, f"vLLM's default for this GPU class, {default}"
    else:
        after = 1 << (estimate // 2).bit_length() - 1
        target = f"{after}, at most half of that,"
    after = max(after, int(server_config(facts).get("max_num_seqs") or 1))
    return _vllm("max_num_batched_tokens", None, after, (
        f"the log is not given: the long round's timing (its longest gap against its prefill "
        f"time) puts today's budget near {estimate} prefill tokens per step; {target} is below "
        "it. This assumes chunked prefill is on (V1's default): with it off, turning it on is "
        "the lever"
    ))  # fmt: skip


def larger_budget(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT012: the budget vLLM itself picks for this GPU class, which the server's is below.

    Without the GPU class: enough tokens per step to bring long prompts' TTFT back under the
    finding's bar (3x the baseline TTFT; a long prompt's TTFT is about its number of prefill
    steps, prompt / budget), at least 2048 (the smallest class default), never past the long
    prompt itself (more buys nothing). Without the two TTFTs, it says so.
    """
    budget = _budget(facts)
    if budget is None:
        return _unknown(
            template, "max_num_batched_tokens",
            "--max-num-batched-tokens <twice today's value: read it in the log's non-default args>",
        )  # fmt: skip
    today = int(budget.value)
    default = _fact(facts, "host.batch_budget_default")
    if isinstance(default, int) and today < default:
        return _vllm("max_num_batched_tokens", budget, default, (
            f"vLLM's default for this GPU class is {default} prefill tokens per step; at {today} "
            "a long prompt waits many more steps for its first token"
        ))  # fmt: skip
    long_ttft, base_ttft = (
        _fact(facts, "long.steady.ttft_p50"),
        _fact(facts, "direct.steady.ttft_p50"),
    )
    if not (
        isinstance(long_ttft, int | float) and isinstance(base_ttft, int | float) and base_ttft > 0
    ):
        return known_before(_unknown(
            template, "long prompts' TTFT against the baseline's",
            f"--max-num-batched-tokens <above {today}: enough steps fewer to bring long prompts' "
            "TTFT within 3x the baseline's>",
        ), budget)  # fmt: skip
    # A long prompt's TTFT is about its number of prefill steps (prompt / budget): the budget
    # grows by the factor its TTFT is above the bar.
    factor = math.ceil(long_ttft / (3 * base_ttft))
    why = (f"long prompts' TTFT p50 {long_ttft:.0f} ms is {long_ttft / base_ttft:.0f}x the "
           f"baseline's {base_ttft:.0f} ms, and the bar is 3x")  # fmt: skip
    after = max(today * factor, SMALLEST_DEFAULT_BATCHED_TOKENS)
    prompt = _fact(facts, "long.spec.input_tokens")
    if isinstance(prompt, int) and prompt > today:
        # Past the power of two that holds the whole prompt, a larger budget buys it nothing.
        after = min(after, 1 << (prompt - 1).bit_length())
    if after <= today:
        return known_before(_unknown(
            template, "a budget above today's that long prompts' TTFT calls for",
            f"--max-num-batched-tokens <above {today}: {why}>",
        ), budget)  # fmt: skip
    return _vllm("max_num_batched_tokens", budget, after, (
        f"{after / today:.3g}x today's {today} prefill tokens per step: {why}"
    ))  # fmt: skip


def budget_to_model_len(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT014: with chunked prefill off, the budget must hold one whole max_model_len prompt.

    No more than that: with chunked prefill off every prompt is prefilled whole whatever the
    budget, so a larger one buys long prompts nothing and lets more of them share (and stretch)
    one step.
    """
    mml = current(facts, "max_model_len")
    budget = current(facts, "max_num_batched_tokens")
    if mml is None:
        return _unknown(
            template, "max_model_len", "--max-num-batched-tokens <at least max_model_len>"
        )
    return _vllm("max_num_batched_tokens", budget, int(mml.value), (
        f"max_model_len is {mml.value} and chunked prefill is off: every prompt is prefilled in "
        "one step, so the budget must hold the longest one (more only packs more prompts into "
        "a step)"
    ))  # fmt: skip


def chunked_prefill_on(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT017: chunked prefill on, so a long prompt is cut into steps of the budget's size."""
    now = current(facts, "chunked_prefill")
    if now is None or now.value is not False:
        return _unknown(template, "whether chunked prefill is on",
                        "read enable_chunked_prefill in the log's engine config line")  # fmt: skip
    default = _fact(facts, "host.batch_budget_default")
    step = f"{default} tokens (vLLM's default budget for this GPU class)" if default else (
        "the budget (vLLM's default for the GPU class when it is not set)")  # fmt: skip
    return {
        "layer": "vllm", "parameter": "enable_chunked_prefill", "before": False,
        "before_from": now.source, "after": True, "apply": "--enable-chunked-prefill",
        "basis": "with chunked prefill off every prompt is prefilled whole, whatever "
                 f"max_num_batched_tokens; on, a long prompt takes at most {step} per step and "
                 "running decodes are scheduled first",
    }  # fmt: skip


def graphs_on(facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]) -> Proposal:
    """LAT048: CUDA graphs back on (the server's log says it runs --enforce-eager)."""
    now = current(facts, "enforce_eager")
    if now is None or now.value is not True:
        return _unknown(template, "enforce_eager",
                        "read enforce_eager in the log's engine config line")  # fmt: skip
    release = vllm_versions.server_release(facts)
    memory = vllm_versions.graph_memory_note(release[0] if release else None)
    return {
        "layer": "vllm", "parameter": "enforce_eager", "before": True, "before_from": now.source,
        "after": False, "apply": "start vLLM without --enforce-eager",
        "basis": "the log says enforce_eager=True: every step launches its kernels one by one "
                 f"instead of replaying a captured CUDA graph; {memory}",
    }  # fmt: skip


def parallel_layout(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT031 / LAT032: the same GPUs laid out so that no all-reduce leaves NVLink.

    From the server's TP and PP and the GPUs it has on each node: tp = GPUs per node and pp =
    nodes when the GPUs of a node share NVLink (the documented multi-node layout); without
    NVLink (PCIe, or NVLink between some pairs only) pipeline parallelism over all of them.
    vLLM gives every TP rank the same share of the attention heads (LAT033's refusal), so the
    TP size proposed divides them: the model's head count when a log names it, else today's
    TP size (which the running server's heads divide), and the GPUs of one node.
    """
    tp, pp = answers.get("tensor_parallel_size"), answers.get("pipeline_parallel_size") or 1
    nodes, link = answers.get("nodes") or 1, answers.get("interconnect")
    if not tp:
        return _unknown(template, "tensor_parallel_size",
                        "--tensor-parallel-size <GPUs per node> --pipeline-parallel-size <nodes>")  # fmt: skip
    tp, pp, nodes = int(tp), int(pp), int(nodes)
    world = tp * pp
    if world % nodes:
        return _unknown(template, "how the GPUs are spread over the nodes",
                        "--tensor-parallel-size <GPUs per node> --pipeline-parallel-size <nodes>")  # fmt: skip
    per_node = world // nodes
    heads = current(facts, "num_attention_heads")
    if link in ("pcie", "mixed"):
        after_tp = 1
        why = f"GPUs linked by {link}: pipeline parallelism over all {world} (P4.5)"
    else:
        # The largest TP group that stays on one node (divides its GPUs) and whose size the
        # heads divide: with the heads unknown, a divisor of today's TP, whose heads it splits.
        whole = int(heads.value) if heads is not None else tp
        after_tp = max(d for d in range(1, per_node + 1) if per_node % d == 0 and whole % d == 0)
        why = (
            f"{per_node} GPUs on each of {nodes} node(s): TP within a node, PP across nodes (P4.4)"
        )
        if after_tp < per_node:
            why += (
                f"; {after_tp} is the largest TP size that divides both the {per_node} GPUs of a "
                + (f"node and the model's {whole} attention heads" if heads is not None
                   else f"node and today's tensor_parallel_size {tp} (the model's attention "
                        "heads are unknown: today's size divides them)")
            )  # fmt: skip
    after_pp = world // after_tp
    before, after = f"tp={tp} pp={pp}", f"tp={after_tp} pp={after_pp}"
    return {
        "layer": "vllm", "parameter": "parallel_layout", "before": before,
        "before_from": "answers.tensor_parallel_size, answers.pipeline_parallel_size",
        "after": after,
        "apply": f"--tensor-parallel-size {after_tp} --pipeline-parallel-size {after_pp}",
        "basis": f"{world} GPUs, {why}",
    }  # fmt: skip


def prefix_caching_on(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT016: prefix caching on, when the server's own cache_config_info says it is off."""
    source = "prefix.server.enable_prefix_caching"
    if _fact(facts, source) is not False:
        return _unknown(template, "whether prefix caching is on",
                        "read enable_prefix_caching in vllm:cache_config_info (/metrics)")  # fmt: skip
    return {
        "layer": "vllm", "parameter": "enable_prefix_caching", "before": False,
        "before_from": source, "after": True, "apply": "--enable-prefix-caching",
        "basis": "vllm:cache_config_info says enable_prefix_caching=False (drop "
                 "--no-enable-prefix-caching; vLLM V1 enables it by default)",
    }  # fmt: skip


def fewer_speculative_tokens(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT018: keep the leading draft positions the target accepted at least half the time.

    From the server's own per-position acceptance over the loaded round (accepted there per
    draft, which only falls with the position): a position accepted less than half the time
    costs a verified token for less than half a token. None kept: speculation off.
    """
    source = "loaded.server.spec_num_speculative_tokens"
    now = _fact(facts, source)
    per_pos = _fact(facts, "loaded.server.spec_acceptance_per_pos")
    # The flags' spelling is the release's: separate flags before 0.8, the JSON from it on.
    found = vllm_versions.server_release(facts)
    release = found[0] if found else None
    if not isinstance(now, int) or not isinstance(per_pos, list) or len(per_pos) != now:
        return _unknown(template, "the acceptance of each draft position",
                        vllm_versions.speculation_apply(release, "<the leading positions "
                        "vllm:spec_decode_num_accepted_tokens_per_pos shows accepted at least "
                        "half the time>"))  # fmt: skip
    kept = next((index for index, rate in enumerate(per_pos) if rate < 0.5), now)
    shown = ", ".join(f"{rate:.0%}" for rate in per_pos)
    apply = vllm_versions.speculation_apply(release, kept)
    return {
        "layer": "vllm", "parameter": "num_speculative_tokens", "before": now,
        "before_from": source, "after": kept, "apply": apply,
        "basis": f"under load the draft positions were accepted {shown} of the time; "
                 + (f"the first {kept} at least half the time" if kept else
                    "none at least half the time"),
    }  # fmt: skip


# LAT024's TPOT target: the decode step at most this much above the short-context one (the KV
# read a quarter of it), with room below the finding's own bar of 1.5 for the re-measure's noise.
LONG_CONTEXT_STEP_TARGET = 1.25


def context_the_bandwidth_serves(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT024: the longest context whose decode step stays near the short-context one.

    The two rounds at the same streams give the step's cost per token of context (the KV read:
    the median gap's rise over the context's rise, the context of a decoding request being its
    prompt and half its output); the context at which that read adds a quarter to the short
    step is the cap, in whole blocks of 256 tokens. A linear model of what was measured, no
    hardware table.
    """
    mml = current(facts, "max_model_len")
    short, long = (_fact(facts, f"{r}.steady.itl_p50") for r in ("direct", "long"))
    demands = [round_demand(facts, r) for r in ("direct", "long")]
    # A decoding request's context: its prompt and, on average, half its output.
    contexts = [
        _fact(facts, f"{r}.spec.input_tokens") + _fact(facts, f"{r}.spec.output_tokens") / 2
        for r in ("direct", "long")
    ] if None not in demands else []  # fmt: skip
    if not isinstance(short, int | float) or not isinstance(long, int | float) or not contexts:
        return _unknown(template, "the median gap at a short and a long context",
                        "--max-model-len <the context whose decode step stays near the "
                        "short-context one>")  # fmt: skip
    per_token = (long - short) / (contexts[1] - contexts[0]) if contexts[1] > contexts[0] else 0
    if per_token <= 0:
        return _unknown(template, "a rise of the median gap with the context",
                        "--max-model-len <the context whose decode step stays near the "
                        "short-context one>")  # fmt: skip
    cap = contexts[0] + (LONG_CONTEXT_STEP_TARGET - 1) * short / per_token
    after = max(256, int(cap) // 256 * 256)
    return _vllm("max_model_len", mml, after, (
        f"the median gap rose from {short:.1f} ms at {contexts[0]:.0f} tokens of context to "
        f"{long:.1f} ms at {contexts[1]:.0f} ({per_token * 1000:.2f} ms per 1,000 tokens, the KV "
        f"read); at {after} tokens it stays within {LONG_CONTEXT_STEP_TARGET:g} times the short "
        "step. Longer prompts are then refused: serve them on a GPU with more memory bandwidth"
    ))  # fmt: skip


def more_api_servers(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT035: API server processes enough for the loaded round's demand, each under a core.

    The round's demand is what the process burnt, scaled by how far the client's TPOT fell
    behind the engine's own inter-token gap (a saturated process serves the tokens that late);
    each process is one asyncio loop, one core at most, so the least count that puts each under
    a core is the demand's whole cores plus one. vLLM's /metrics carries
    process_cpu_seconds_total only with one API server, so a server that shows it runs one
    unless its log says otherwise. V0 has no --api-server-count.
    """
    if _fact(facts, "loaded.server.generation") == "v0":
        return _unknown(template, "a way to add API servers to a V0 server",
                        "upgrade to a vLLM V1 release, which takes --api-server-count N")  # fmt: skip
    cores = _fact(facts, "loaded.server.api_server_cpu_cores")
    tpot = _fact(facts, "loaded.steady.tpot_p50")
    gap = _fact(facts, "loaded.server.itl_mean_ms")
    if not all(isinstance(v, int | float) and v > 0 for v in (cores, tpot, gap)):
        return _unknown(template, "the API server's CPU and the engine's own inter-token gap",
                        "--api-server-count <enough processes to keep each under a core>")  # fmt: skip
    now = current(facts, "api_server_count")
    count, source = (
        (now.value, now.source) if now is not None
        else (1, "loaded.server.api_server_cpu_cores (process series: one API server)")
    )  # fmt: skip
    demand = cores * count * max(1.0, tpot / gap)
    after = math.floor(demand) + 1
    why = (
        f"the API server used {cores:.2f} cores while the client's TPOT ({tpot:.1f} ms) ran "
        f"{tpot / gap:.2f}x the engine's own gap ({gap:.1f} ms): about {demand:.2f} cores of work"
    )
    if after <= count:
        return {**_unknown(template, "a demand above today's processes",
                           f"--api-server-count <above {count}: {why}, which {count} hold>"),
                "before": count, "before_from": source}  # fmt: skip
    return {
        "layer": "vllm", "parameter": "api_server_count", "before": count, "before_from": source,
        "after": after, "apply": f"--api-server-count {after}",
        "basis": f"{why}, under one core each over {after} processes",
    }  # fmt: skip
