"""Fixed vocabularies other tools rely on (design §5): extend them, never rename an entry."""

from __future__ import annotations

CAUSES = frozenset({
    "proxy_buffering", "proxy_gzip_buffering", "proxy_read_timeout", "proxy_connect_timeout",
    "kv_cache_preemption", "batched_tokens_hurts_itl", "batched_tokens_hurts_ttft",
    "queue_saturation", "chunked_prefill_budget", "chat_template_missing", "wrong_endpoint",
    "auth_failure", "cpu_cores_insufficient", "tp_without_nvlink", "multinode_layout",
    "kv_cache_too_small_for_max_model_len", "gpu_memory_pressure", "cold_start_slow",
    "cold_steady_mixed", "multiple_changes_in_step", "total_time_only",
    "cross_scenario_comparison", "client_saturated",
    # added after the first release (extend, never rename):
    "proxy_upstream_keepalive", "cuda_visible_devices", "server_not_started",
    "engine_died", "server_unreachable", "validation_invalid", "prefix_cache_off",
    "chunked_prefill_off", "cuda_graphs_off", "speculative_decoding_costly", "replica_slow",
    "balancer_unbalanced", "balancer_sticky", "replica_config_differs", "api_server_cpu_saturated",
    "structured_output_overhead",
    "long_context_decode_bound", "prefix_cache_defeated_by_shape",
    "batched_tokens_below_max_num_seqs", "max_model_len_above_model", "tp_heads_indivisible",
    "kv_cache_no_memory", "cuda_graph_capture_oom",
})  # fmt: skip

SEVERITIES = ("info", "warn", "fail")
# How a walk ended (the end event, `run`'s exit code and JSON).
OUTCOMES = ("no_cause", "cause_remains", "nothing_measured")
# "client" is the service's own client (endpoint, base URL, key); "measurement" the wizard's
# measuring client, which the wizard changes itself (LAT050).
LAYERS = ("vllm", "nginx", "host", "client", "measurement")
LANGUAGES = ("en", "zh")
# How much each round measures (`--rounds`, the transcript header's `rounds`; workload.py).
ROUND_DEPTHS = ("full", "brief")

# Every item of the procedure (shared/seed/procedure.md); the playbook must cover all of them.
PROCEDURE_ITEMS = (
    *(f"P0.{i}" for i in range(1, 5)),
    *(f"P1.{i}" for i in range(1, 4)),
    *(f"P2.{i}" for i in range(1, 6)),
    *(f"P3.{i}" for i in range(1, 7)),
    *(f"P4.{i}" for i in range(1, 10)),
    *(f"P5.{i}" for i in range(1, 7)),
    *(f"P6.{i}" for i in range(1, 7)),
    *(f"P7.{i}" for i in range(1, 6)),
)
