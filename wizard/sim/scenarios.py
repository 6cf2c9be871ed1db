"""Named simulator presets: each one sets up a fault the way a real deployment gets it.

Nothing here scripts a symptom: a scenario only changes engine knobs or simulated hardware, and the
symptom emerges from the scheduler and the step-time model. ``finds`` says what a correct diagnosis
concludes (the ``cause`` vocabulary of design §5) and how to see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wizard.errors import UsageError
from wizard.sim.config import ApiServerCosts, ColdStart, SimConfig, SpeculativeConfig, StepCosts


@dataclass(frozen=True)
class Scenario:
    """A preset: what it models, what a diagnosis should find, and the config changes."""

    name: str
    summary: str
    finds: str
    causes: tuple[str, ...]
    changes: dict[str, object] = field(default_factory=dict)
    # The incident's traffic, when the fault is in the requests rather than the server: the
    # demo walks with it as its --request-body.
    incident_body: dict[str, object] | None = None

    def apply(self, config: SimConfig) -> SimConfig:
        """Return ``config`` with this scenario's changes."""
        return config.replace(**self.changes)


def _record_schema(properties: int) -> dict[str, object]:
    """A wide JSON schema as form-filling clients send: required string enums, described."""
    fields = {
        f"field_{i}": {"type": "string", "description": "one of the listed codes for this field",
                       "enum": [f"code_{j}" for j in range(8)]}
        for i in range(properties)
    }  # fmt: skip
    return {"type": "object", "properties": fields, "required": sorted(fields)}


SCENARIOS: dict[str, Scenario] = {
    s.name: s
    for s in (
        Scenario(
            "healthy",
            "An 8B model on one 80 GiB GPU with vLLM 0.34's defaults for that class of GPU.",
            "Nothing wrong: TTFT and TPOT are steady, no preemptions, nothing waits.",
            (),
        ),
        Scenario(
            "kv-pressure",
            "A 24 GiB GPU at --gpu-memory-utilization 0.73: the KV cache holds ~1,800 tokens.",
            "Preemptions under modest concurrency (8 streams of 100+200 tokens): "
            "vllm:num_preemptions_total grows and 'Preemptions: N' appears in the stats line. "
            "Fix: raise --gpu-memory-utilization (or lower --max-num-seqs).",
            ("kv_cache_preemption",),
            {
                "gpu_memory_gib": 24.0,
                "gpu_memory_utilization": 0.73,
                "max_model_len": 1024,
                "block_size": 16,
            },
        ),
        Scenario(
            "batch-budget-large",
            "--max-num-batched-tokens 16384: a long prompt is prefilled in one big step.",
            "Long prompts arriving during decodes stretch the running streams' inter-token gaps "
            "(ITL p99 far above p50). Fix: lower --max-num-batched-tokens (e.g. 2048).",
            ("batched_tokens_hurts_itl",),
            {"max_num_batched_tokens": 16384, "max_model_len": 16384},
        ),
        Scenario(
            "batch-budget-small",
            "--max-num-batched-tokens 256: a long prompt needs many steps to prefill.",
            "High TTFT for long prompts while ITL stays low. Fix: raise --max-num-batched-tokens.",
            ("batched_tokens_hurts_ttft",),
            {"max_num_batched_tokens": 256, "max_num_seqs": 128},
        ),
        Scenario(
            "queue-saturation",
            "--max-num-seqs 4: more concurrent requests than the engine runs at once.",
            "vllm:num_requests_waiting grows, TTFT grows with the queue, ITL does not. "
            "Fix: add capacity (replicas) or raise --max-num-seqs if the KV cache allows.",
            ("queue_saturation",),
            {"max_num_seqs": 4},
        ),
        Scenario(
            "no-chat-template",
            "A base model whose tokenizer has no chat template.",
            "/v1/chat/completions answers 400 with transformers' chat-template message; "
            "/v1/completions works. Fix: use /v1/completions or pass --chat-template.",
            ("chat_template_missing",),
            {"chat_template": False, "model": "meta-llama/Llama-3.1-8B"},
        ),
        Scenario(
            "tp-over-pcie",
            "--tensor-parallel-size 4 on GPUs linked by PCIe only (no NVLink).",
            "Every decode step pays a slow all-reduce: ITL several times the healthy value. "
            "Fix: prefer --pipeline-parallel-size over tensor parallelism without NVLink.",
            ("tp_without_nvlink",),
            {"tensor_parallel_size": 4, "interconnect": "pcie"},
        ),
        Scenario(
            "tp-across-nodes",
            "--tensor-parallel-size 4 over two nodes of two NVLinked GPUs each (pp 1).",
            "Every step's all-reduce crosses the network between the nodes: ITL several times the "
            "healthy value although each node has NVLink. The host's files show two GPUs, the "
            "log tp 4: the layout spans two nodes. Fix: --tensor-parallel-size 2 "
            "--pipeline-parallel-size 2 (tp = GPUs per node, pp = nodes).",
            ("multinode_layout",),
            {"tensor_parallel_size": 4, "nodes": 2, "interconnect": "nvlink"},
        ),
        Scenario(
            "enforce-eager",
            "--enforce-eager: no CUDA graphs, every step launches its kernels from the CPU.",
            "Every decode step costs more (TPOT above the healthy value at any batch size), the "
            "log shows enforce_eager=True and no graph capture. Fix: start without "
            "--enforce-eager (graphs take a little KV-cache memory back).",
            ("cuda_graphs_off",),
            {"enforce_eager": True},
        ),
        Scenario(
            "chunked-prefill-off",
            "--no-enable-chunked-prefill with --max-model-len 16384 on an L40S-class GPU (48 GiB, "
            "prefill at half an H100's speed): vLLM raises the budget to 16384 and prefills every "
            "prompt whole.",
            "A long prompt (12,000 tokens) is prefilled in one ~500 ms step that every decoding "
            "stream waits for: ITL p99 far above the baseline's, whatever the budget. Fix: "
            "--enable-chunked-prefill (the budget then falls back to the class default, 2048, "
            "and a long prompt is cut into steps of that size behind the running decodes).",
            ("chunked_prefill_off",),
            {
                "enable_chunked_prefill": False,
                "max_model_len": 16384,
                "gpu_memory_gib": 48.0,
                "costs": StepCosts(per_prefill_token_ms=0.04),
            },
        ),
        Scenario(
            "speculative-decoding",
            '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 4}\' '
            "on a 32B-class model (0.5 ms of every step per decoding sequence) whose traffic "
            "repeats its prompt rarely: each draft token is right 45 % of the time.",
            "Each step verifies 4 drafts per sequence and keeps 1.8 tokens on average: one "
            "stream decodes faster than without speculation, but the verification grows with "
            "the batch, so at 8 streams TPOT is above what the server gives without it. "
            "vllm:spec_decode_num_accepted_tokens_total / ..._num_draft_tokens_total and the "
            "'SpecDecoding metrics:' line show the acceptance rate. Fix: fewer speculative "
            "tokens (the leading positions accepted more often than not), here none.",
            ("speculative_decoding_costly",),
            {
                "speculative_config": SpeculativeConfig("ngram", 4, 0.45),
                "costs": StepCosts(per_decode_seq_ms=0.5),
            },
        ),
        Scenario(
            "long-context-decode",
            "An 8B model with FP8 weights (8 GiB) on an L4-class GPU (24 GiB, 300 GB/s of memory "
            "bandwidth) serving prompts up to --max-model-len 16384.",
            "Every decode step reads the KV cache of every running sequence (128 KiB a token): "
            "at 4 streams of 12,000 tokens that is 6 GB a step, 21 ms at 300 GB/s, twice the "
            "rest of the step. The long-prompt round's median gap (client and engine) is far "
            "above the short baseline's at the same concurrency, with no queue and no "
            "preemption. Nothing is misconfigured: it is the workload on this hardware. Fix: "
            "cap --max-model-len at the context the bandwidth serves near the short TPOT (or an "
            "FP8 KV cache, or the long requests on a GPU of more bandwidth).",
            ("long_context_decode_bound",),
            {
                "gpu_memory_gib": 24.0,
                "gpu_memory_bandwidth_gbps": 300.0,
                "weights_gib": 8.0,
                "max_model_len": 16384,
            },
        ),
        Scenario(
            "api-server-cpu",
            "One API server process (vLLM's default) whose per-token work is slow: a tokenizer "
            "without its fast implementation on a shared vCPU, 2 ms of CPU to detokenize and "
            "serialize each streamed token.",
            "At 4 streams the API server needs about 0.8 of its core; at 8 it would need more "
            "than one, so every event waits behind the others and TTFT and TPOT grow with the "
            "concurrency while the engine's own steps (vllm:inter_token_latency_seconds), its "
            "queue and its KV cache stay as they were. process_cpu_seconds_total of the API "
            "server rises at about one core a second. Fix: --api-server-count 2.",
            ("api_server_cpu_saturated",),
            {"api_server_costs": ApiServerCosts(per_token_ms=2.0)},
        ),
        Scenario(
            "structured-output",
            "A healthy server whose clients ask for JSON under a large schema: response_format "
            "json_schema of 100 required properties, each an 8-value enum with a description "
            "(14,700 characters).",
            "Before every step the engine core fills each constrained sequence's token mask "
            "from the grammar, work that grows with its size: at 4 streams TPOT about twice "
            "the same requests' without the constraint. The walk measures the incident's body "
            "and the same body without response_format. Fix: a smaller schema (the client's "
            "change; the demo cannot make it).",
            ("structured_output_overhead",),
            incident_body={
                "model": "meta-llama/Llama-3.1-8B-Instruct",
                "prompt": " ".join(["Fill in the record for this customer."] * 8),
                "max_tokens": 16,
                "temperature": 0,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "record", "schema": _record_schema(100)},
                },
            },
        ),
        Scenario(
            "cold-start-heavy",
            "--tensor-parallel-size 4 reading a checkpoint from slow shared storage.",
            "Start-up takes seconds (weights read 4x, CUDA-graph capture), /health answers 503 "
            "meanwhile, and the first requests are slower than steady state. Keep cold and "
            "steady measurements apart.",
            ("cold_start_slow",),
            {
                "tensor_parallel_size": 4,
                "cold_start": ColdStart(
                    checkpoint_read_s=1.0,
                    graph_capture_s=1.5,
                    slow_first_steps=40,
                    slow_first_step_ms=40.0,
                ),
            },
        ),
        Scenario(
            "auth-required",
            "Started with an API key: /v1 paths need 'Authorization: Bearer <key>'.",
            'Requests without the key get 401 {"error": "Unauthorized"}; /health and '
            "/metrics stay open. Fix: send the key (the wizard reads it from $VLLM_API_KEY).",
            ("auth_failure",),
        ),
        Scenario(
            "prefix-caching-off",
            "--no-enable-prefix-caching: no request reuses the KV blocks of a prefix it shares.",
            "Requests that share a long system prompt each prefill all of it: the shared-prefix "
            "round's TTFT is far above the baseline, vllm:prefix_cache_hits_total stays 0 and "
            "vllm:cache_config_info says enable_prefix_caching False. Fix: --enable-prefix-caching.",
            ("prefix_cache_off",),
            {"enable_prefix_caching": False},
        ),
        Scenario(
            "chunked-prefill-off-bad-budget",
            "--no-enable-chunked-prefill with --max-num-batched-tokens 2048 < --max-model-len 8192.",
            "The server refuses to start with vLLM's message 'max_num_batched_tokens (2048) is "
            "smaller than max_model_len (8192)...'. Fix: raise the budget or lower max_model_len.",
            ("chunked_prefill_budget",),
            {"enable_chunked_prefill": False, "max_num_batched_tokens": 2048},
        ),
    )
}


def get_scenario(name: str) -> Scenario:
    """Look a scenario up by name, with the list of names in the error."""
    try:
        return SCENARIOS[name]
    except KeyError:
        names = ", ".join(SCENARIOS)
        raise UsageError.said("error.unknown_scenario", name=repr(name), names=names) from None
