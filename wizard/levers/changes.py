"""The one change a finding proposes, computed from the server's current values.

A finding's ``change`` in the playbook names the layer and the lever; when it says ``compute:
NAME``, the concrete values come from the function registered under NAME here, fed with what the
walk knows about the server (its ``/metrics`` ``cache_config_info``, its log, ``/v1/models``,
the round's own spec). A constant could go the wrong way (a "lower to 2048" for a budget of 256),
so nothing here proposes a fixed number: when the current value is unknown, the change says what
to read instead of guessing. Every vLLM change is then checked against what vLLM refuses at
start-up (``refusals``), so the wizard never proposes a server that would not start.
"""

from __future__ import annotations

import math
import re
from typing import Any

from wizard.levers import vllm_versions
from wizard.levers.change_values import (
    Computer,
    Known,
    Proposal,
    current,
    known_before,
    round_demand,
)
from wizard.levers.change_values import fact as _fact
from wizard.levers.change_values import unknown_change as _unknown
from wizard.levers.change_values import vllm_change as _vllm
from wizard.levers.kv_changes import fewer_seqs, kv_room, more_seqs
from wizard.levers.refusal_changes import REFUSAL_COMPUTERS
from wizard.levers.vllm_defaults import SMALLEST_DEFAULT_BATCHED_TOKENS


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


def read_timeout(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT003: above twice the longest silence seen, in whole tens of seconds."""
    now = answers.get("proxy_read_timeout_s")
    silences = [
        _fact(facts, path)
        for path in ("proxy.steady.ttft_p99", "loaded.steady.ttft_p99", "long.steady.ttft_p99",
                     "long.steady.itl_p99", "proxy.steady.itl_p99")
    ]  # fmt: skip
    worst_s = max((float(s) / 1000 for s in silences if s is not None), default=None)
    floor = float(now) if now else 0.0
    if worst_s is None:
        return _unknown(
            template,
            "the longest silence",
            "proxy_read_timeout <above the longest queue + prefill>",
        )
    after = math.ceil(2 * worst_s / 10) * 10
    if after <= floor:
        return {**_unknown(
            template, "a silence that today's timeout cuts",
            f"proxy_read_timeout <above {floor:g}s: it is already above twice the longest silence "
            f"measured ({worst_s:.1f} s); find what else cuts the streams>",
        ), "before": f"{floor:g}s", "before_from": "answers.proxy_read_timeout_s"}  # fmt: skip
    return {
        "layer": "nginx", "parameter": "proxy_read_timeout",
        "before": f"{now:g}s" if now else None, "before_from": "answers.proxy_read_timeout_s",
        "after": f"{after}s", "apply": f"proxy_read_timeout {after}s;",
        "basis": f"the longest silence measured is {worst_s:.1f} s; twice that, rounded up",
    }  # fmt: skip


def buffering_off(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT001: the effective proxy_buffering of the location (the config, else nginx's default)."""
    location = _fact(facts, "nginxconf.locations.0")
    before, source = "on", "nginx's default"
    if isinstance(location, dict) and location.get("proxy_buffering"):
        before = location["proxy_buffering"]
        source = f"{location.get('file')}:{location.get('line')} ({location.get('proxy_buffering_from')})"
    return {
        "layer": "nginx", "parameter": "proxy_buffering", "before": before, "before_from": source,
        "after": "off", "apply": "proxy_buffering off;",
        "basis": "events arrive through the proxy in bursts the direct path does not show",
    }  # fmt: skip


def gzip_without_event_stream(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT002: the location's own gzip_types, less text/event-stream (or gzip off for `*`)."""
    location = _fact(facts, "nginxconf.locations.0")
    types = location.get("gzip_types") if isinstance(location, dict) else None
    if not types:
        return {
            "layer": "nginx", "parameter": "gzip_types", "before": None, "after": None,
            "apply": "gzip_types <today's list without text/event-stream>; (or gzip off; in the "
                     "streaming location)",
            "basis": "the proxied stream is gzip-encoded; without the config its gzip_types are unknown",
        }  # fmt: skip
    if "*" in types:
        return {
            "layer": "nginx", "parameter": "gzip", "before": "on", "after": "off",
            "apply": "gzip off;", "basis": "gzip_types * compresses the event stream too",
        }  # fmt: skip
    kept = [t for t in types if t != "text/event-stream"]
    return {
        "layer": "nginx", "parameter": "gzip_types", "before": " ".join(types),
        "before_from": f"{location.get('file')}:{location.get('line')}", "after": " ".join(kept),
        "apply": f"gzip_types {' '.join(kept)};" if kept else "gzip off;",
        "basis": "today's gzip_types without text/event-stream",
    }  # fmt: skip


def lower_client_concurrency(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT050: half the measuring client's own concurrency (the wizard's, not the service's).

    A bisection step, not a computed value, on purpose: the client is one event loop, so its CPU
    share stops at one core and a saturated client cannot say by how much it is over (0.95 and
    1.0 of a core may be 1.1x or 3x the work it can do). Halving finds the concurrency it keeps up
    with in a few steps, and the round measured again after it shows whether it does (LAT050
    gone). It changes the wizard's own client only, never the service."""
    spec = _fact(facts, "direct.spec") or {}
    now = int(spec.get("concurrency", 0)) or None
    after = max(1, now // 2) if now else None
    return {
        "layer": "measurement", "parameter": "concurrency", "before": now, "before_from": "direct.spec",
        # `run --concurrency N` is how an operator sets it on the next walk.
        "after": after,
        "apply": f"measure with {after} streams (run --concurrency {after})" if after else "fewer streams",
        "basis": "the measuring client is behind by an amount its CPU share (capped at one core) "
                 "cannot tell; half the streams, then measured again",
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


def varying_part_to_end(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT023: the body's per-request part, named, moved after the prompt's shared words."""
    kind, text = _fact(facts, "shape.varying_kind"), _fact(facts, "shape.varying_text")
    word, words = _fact(facts, "shape.varying_word"), _fact(facts, "shape.prompt_words")
    if not isinstance(kind, str) or not isinstance(text, str) or not isinstance(word, int):
        return _unknown(template, "the body's per-request part",
                        "<the per-request value> moved to the end of the prompt")  # fmt: skip
    return {
        "layer": "client", "parameter": "prompt_layout",
        "before": f"{kind} at word {word} of {words}", "before_from": "shape.varying_word",
        "after": f"{kind} at the end of the prompt",
        "apply": f"put the {kind} ('{text}' in the body) after the rest of the prompt, e.g. at the "
                 "end of the last user message",
        "basis": f"the {words - word if isinstance(words, int) else '?'} words after it differ "
                 "from one request to the next only because it does",
    }  # fmt: skip


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


# LAT019's bar: the constrained round's TPOT at most this multiple of the unconstrained one's.
CONSTRAINT_BAR = 1.2


def smaller_constraint(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT019: the constraint cut to the size whose work stays within LAT019's bar.

    The engine core fills each constrained sequence's token mask every step, work that grows
    with the grammar: the larger of the extra TPOT and the extra TTFT the constraint cost
    (relative to the same requests without it), scaled to the 20 % the bar allows, gives the
    share of the constraint's size to keep.
    """
    chars = _fact(facts, "session.constraint_chars")
    fields = _fact(facts, "session.constraint_fields") or []
    ratios = []
    for segment in ("tpot_p50", "ttft_p50"):
        with_it = _fact(facts, f"direct.steady.{segment}")
        without = _fact(facts, f"unconstrained.steady.{segment}")
        if isinstance(with_it, int | float) and isinstance(without, int | float) and without > 0:
            ratios.append((with_it / without, segment.removesuffix("_p50").upper()))
    excess, segment = max(ratios, default=(0.0, ""))
    excess -= 1
    if not isinstance(chars, int) or chars <= 0 or excess <= CONSTRAINT_BAR - 1:
        return _unknown(template, "the constraint's price",
                        "a smaller schema (fewer properties, enums and alternatives)")  # fmt: skip
    after = max(1, round(chars * (CONSTRAINT_BAR - 1) / excess))
    named = ", ".join(str(f) for f in fields) or "constraint"
    return {
        "layer": "client", "parameter": "constraint_chars", "before": chars,
        "before_from": "session.constraint_chars", "after": after,
        "apply": f"send a {named} of at most about {after} characters (now {chars}): fewer "
                 "properties, enums and alternatives, then walk again with the new --request-body",
        "basis": f"{segment} p50 {excess:.0%} above the same requests without the constraint "
                 f"of {chars} characters, where the bar is {CONSTRAINT_BAR - 1:.0%}; the mask's "
                 "work grows with the grammar",
    }  # fmt: skip


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


# One parameter is one name: a flag, a directive, an environment variable.
PARAMETER = re.compile(r"^-{0,2}[A-Za-z_][\w.\-]*$")
# Two values in one field: a second directive, a second flag, or a list of alternatives.
SECOND_VALUE = re.compile(r";|\n|(?:^|\s)--\w|\s(?:and|&|\+)\s|,\s*--")


def more_than_one_change(parameter: str, after: str | None) -> str | None:
    """Why a declared change names more than one thing (P0.2), or None when it names one."""
    if not PARAMETER.match(parameter.strip()):
        return f"'{parameter}' is not one parameter name"
    if after and SECOND_VALUE.search(after.strip().rstrip(";")):
        return f"its new value '{after}' holds more than one change"
    return None
