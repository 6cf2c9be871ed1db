"""The simulator's configuration: vLLM's engine knobs plus the simulated hardware and cost model.

Field names follow vLLM's ``EngineArgs`` so that a flag means the same here as on ``vllm serve``.
``resolve`` turns a config into the numbers the engine runs with (KV-cache size, budgets) and refuses
a configuration the way vLLM refuses it, with vLLM's own message: vLLM 0.34 on a GPU
(``device="cuda"``), or the CPU build of vLLM 0.32 (``device="cpu"``), whose defaults, KV sizing
and messages were measured on a real server (``facts/real-vllm.md``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Literal

from wizard.errors import ConfigError
from wizard.levers.vllm_defaults import CPU_BATCH_DEFAULTS, default_batch_limits

GIB = 1024**3

# vLLM 0.34 resolves an unset --gpu-memory-utilization to 0.92 without the extensible KV cache
# (CacheConfig.DEFAULT_GPU_MEMORY_UTILIZATION). The simulator models the non-extensible sizing.
DEFAULT_GPU_MEMORY_UTILIZATION = 0.92

Interconnect = Literal["nvlink", "pcie"]
MetricsGeneration = Literal["v1", "v0"]
Device = Literal["cuda", "cpu"]

# vLLM 0.32's CPU backend: 128-token blocks, serve defaults of 2048 tokens / 128 sequences per
# rank, and a KV cache of VLLM_CPU_KVCACHE_SPACE GiB (``cpu_kvcache_space_gib``; the simulator's
# default of 4 GiB lets the default 8B model start at 8,192 tokens; the real tier runs its tiny
# model with 1).
CPU_BLOCK_SIZE = 128
CUDA_BLOCK_SIZE = 64


class StartupError(ConfigError):
    """vLLM refuses to start; ``stage`` says which process refuses (it decides the log's shape).

    ``api_server``: the argument checks (pydantic ``SchedulerConfig``), before any engine exists.
    ``engine_core``: the engine core's KV-cache initialisation, after the model was loaded.
    """

    def __init__(
        self,
        message: str,
        stage: Literal["api_server", "engine_core"],
        *,
        kv_bytes: int | None = None,
        blocks_from_memory: int | None = None,
    ) -> None:
        super().__init__(message)
        self.stage = stage
        # What the engine core had logged before it failed (0.32 logs the KV sizing first).
        self.kv_bytes = kv_bytes
        self.blocks_from_memory = blocks_from_memory


class OutOfMemory(StartupError):
    """The profile run asked the device for more memory than it has: PyTorch's CUDA OOM.

    ``message`` is PyTorch's text (``facts/vllm.md`` §5); the engine core dies with it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, "engine_core")


@dataclass(frozen=True)
class StepCosts:
    """Step-time model constants, in milliseconds, for an 8B model on one data-centre GPU.

    One engine step costs ``fixed_ms`` (kernel launches, sampling, scheduler) plus
    ``per_prefill_token_ms`` for every prompt token computed in the step and ``per_decode_seq_ms``
    for every sequence decoding one token. Compute is split across tensor-parallel ranks; each extra
    TP rank adds an all-reduce cost that is an order of magnitude higher over PCIe than over NVLink,
    and higher still over the network when the TP group spans nodes (its ranks wait for the
    slowest link). Pipeline parallelism does not shorten one step for one request; each extra
    stage adds a hop, a little dearer when it crosses nodes (one activation per step, not an
    all-reduce per layer). Without CUDA graphs (``--enforce-eager``) every step launches its
    kernels one by one from the CPU: ``eager_extra_ms`` more per step, whatever its batch.
    With speculative decoding every decoding sequence also has its draft tokens verified in the
    same step, each one a query over the sequence's KV cache like a decode (``per_decode_seq_ms``),
    and a draft model runs one pass per draft position before the step (``draft_fixed_ms`` plus
    ``draft_per_seq_ms`` a sequence); an n-gram proposer looks its drafts up on the CPU for free.
    Every sequence under a structured-output constraint has its token bitmask filled on the
    engine core's CPU before the step: ``grammar_mask_ms`` plus ``grammar_mask_ms_per_kchar`` for
    every thousand characters of its grammar (``wizard.sim.structured``), one after another.
    The defaults give ~10 ms decode steps at small batch and 5,000 prefill tokens per 100 ms.
    """

    fixed_ms: float = 10.0
    eager_extra_ms: float = 6.0
    per_prefill_token_ms: float = 0.02
    per_decode_seq_ms: float = 0.08
    tp_allreduce_nvlink_ms: float = 0.4
    tp_allreduce_pcie_ms: float = 5.0
    tp_allreduce_network_ms: float = 8.0
    pp_hop_ms: float = 0.5
    pp_hop_network_ms: float = 1.5
    draft_fixed_ms: float = 1.0
    draft_per_seq_ms: float = 0.02
    grammar_mask_ms: float = 0.05
    grammar_mask_ms_per_kchar: float = 0.2


@dataclass(frozen=True)
class ApiServerCosts:
    """CPU milliseconds of the API server's work (``wizard.sim.api_server``): rendering and
    tokenizing a request, and detokenizing and serializing one streamed token. The defaults (an
    8B model's tokenizer on a server CPU core) keep a process under a tenth of a core at the
    walk's loads."""

    per_request_ms: float = 0.5
    per_token_ms: float = 0.1


@dataclass(frozen=True)
class SpeculativeConfig:
    """``--speculative-config`` (vLLM's ``SpeculativeConfig``), plus how often drafts are right.

    ``method`` and ``num_speculative_tokens`` are vLLM's keys. How many drafts the target model
    accepts depends on the draft model and the traffic, which a simulator does not have:
    ``draft_acceptance_rate`` (a simulator-only key, never logged as vLLM's) is the chance a draft
    token is accepted given the one before it was, so position ``i`` is accepted with probability
    ``rate ** (i + 1)``, as rejection sampling stops at the first rejected draft.
    """

    method: str = "draft_model"
    num_speculative_tokens: int = 3
    draft_acceptance_rate: float = 0.7
    model: str | None = None

    @property
    def runs_draft_model(self) -> bool:
        """False for the n-gram proposer, which drafts from the prompt on the CPU."""
        return self.method != "ngram"


def parse_speculative_config(text: str) -> SpeculativeConfig | None:
    """``--speculative-config`` JSON as vLLM takes it; a clear error for anything it would refuse.

    JSON ``null`` is no speculation (vLLM's default), so a scenario's preset can be turned off.
    """
    import json

    try:
        given = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--speculative-config: not JSON ({exc.msg})") from None
    if given is None:
        return None
    if not isinstance(given, dict):
        raise ConfigError("--speculative-config: expected a JSON object")
    known = {field.name for field in dataclasses.fields(SpeculativeConfig)}
    unknown = sorted(set(given) - known)
    if unknown:
        raise ConfigError(f"--speculative-config: the simulator does not know {', '.join(unknown)}")
    tokens = given.get("num_speculative_tokens")
    if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens <= 0:
        raise ConfigError("--speculative-config: num_speculative_tokens must be an integer > 0")
    rate = given.get("draft_acceptance_rate", SpeculativeConfig.draft_acceptance_rate)
    if not isinstance(rate, int | float) or isinstance(rate, bool) or not 0 <= rate <= 1:
        raise ConfigError("--speculative-config: draft_acceptance_rate must be between 0 and 1")
    method = given.get("method") or ("draft_model" if given.get("model") else None)
    if not isinstance(method, str):
        raise ConfigError("--speculative-config: give a method (e.g. ngram) or a draft model")
    model = given.get("model")
    return SpeculativeConfig(method, tokens, float(rate), str(model) if model else None)


@dataclass(frozen=True)
class ColdStart:
    """Start-up model: checkpoint reading, CUDA-graph capture and slow first steps.

    Every tensor-parallel rank reads the whole checkpoint from a shared disk, so the read time is
    ``checkpoint_read_s`` multiplied by the TP degree. The first ``slow_first_steps`` engine steps
    after start-up each cost ``slow_first_step_ms`` extra (lazy compilation of shapes nobody
    warmed up), which makes the first requests slower than steady state.
    """

    checkpoint_read_s: float = 0.2
    graph_capture_s: float = 0.2
    slow_first_steps: int = 0
    slow_first_step_ms: float = 0.0


@dataclass(frozen=True)
class SimConfig:
    """Everything the simulator needs to know; ``None`` means "let the simulator decide like vLLM"."""

    model: str = "meta-llama/Llama-3.1-8B-Instruct"
    served_model_name: str | None = None
    load_format: str | None = None
    device: Device = "cuda"
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    max_model_len: int = 8192
    num_gpu_blocks: int | None = None
    kv_cache_tokens: int | None = None
    block_size: int | None = None
    enable_chunked_prefill: bool = True
    enable_prefix_caching: bool = True  # vLLM V1's default for a decoder-only LLM
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    # Hosts the TP x PP GPUs are spread over, the same number on each (ranks in vLLM's order:
    # TP fastest, so a TP group stays on one node exactly when the nodes divide PP).
    nodes: int = 1
    enforce_eager: bool = False
    speculative_config: SpeculativeConfig | None = None
    gpu_memory_utilization: float | None = None
    sse_keep_alive_interval: float = 0.0
    chat_template: bool = True
    # The /v1/completions route; off: a service that serves chat only (its gateway exposes no
    # completions), where /v1/completions answers 404 as an unknown path does.
    completions_api: bool = True
    interconnect: Interconnect = "nvlink"
    x_accel_buffering_no: bool = False
    metrics_generation: MetricsGeneration = "v1"
    disable_log_stats: bool = False
    log_stats_interval_s: float = 10.0
    # A server that slows as it runs (a GPU throttling as it heats, a neighbour's growing load):
    # each step takes (1 + step_drift x steps done / 1000) times its modelled time. Its rounds
    # disagree with their own A/A repeats, the unstable baseline the walk must not judge on.
    step_drift: float = 0.0
    gpu_memory_gib: float = 80.0
    # Memory bandwidth of one GPU (H100 SXM's HBM3): every decode step reads the KV cache of
    # every running sequence through it (``steptime.kv_read_ms``).
    gpu_memory_bandwidth_gbps: float = 3350.0
    cpu_kvcache_space_gib: float = 4.0
    cpu_node_memory_gib: float = 7.71
    weights_gib: float = 15.0
    activation_peak_gib: float = 1.5
    cuda_graph_gib: float = 0.8
    kv_bytes_per_token: int = 131072
    # The model's config.json (Llama-3.1-8B's): its attention heads, which tensor parallelism must
    # divide, and its context limit, which --max-model-len must not pass (vLLM's ModelConfig).
    num_attention_heads: int = 32
    max_position_embeddings: int = 131072
    # The engine core dies after admitting this many requests (a simulated fatal error while
    # serving: vLLM's EngineDeadError); None: never.
    die_after_requests: int | None = None
    # The model's vocabulary (Llama-3.1-8B's): vLLM's sampler warm-up holds float32 logits of
    # max_num_seqs x vocab_size during the profile run, which is what too many sequences exceed.
    vocab_size: int = 128256
    costs: StepCosts = StepCosts()
    cold_start: ColdStart = ColdStart()
    # --api-server-count: API server processes, each one core (wizard.sim.api_server); vLLM's
    # default is data_parallel_size, 1 here.
    api_server_count: int = 1
    api_server_costs: ApiServerCosts = ApiServerCosts()

    def replace(self, **changes: object) -> SimConfig:
        """Return a copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def served_name(self) -> str:
        """The name clients use (``--served-model-name``, else the model)."""
        return self.served_model_name or self.model

    @property
    def gpus_per_node(self) -> int:
        """GPUs of the layout on each node."""
        return self.tensor_parallel_size * self.pipeline_parallel_size // self.nodes

    @property
    def tp_spans_nodes(self) -> bool:
        """True when a tensor-parallel group's all-reduce crosses the network."""
        return self.nodes > 1 and self.pipeline_parallel_size % self.nodes != 0

    @property
    def vllm_version(self) -> str:
        """The vLLM version this configuration behaves like."""
        return "0.32.0" if self.device == "cpu" else "0.34.0"


@dataclass(frozen=True)
class Resolved:
    """The numbers the engine runs with once defaults are applied and limits checked."""

    max_num_batched_tokens: int
    max_num_seqs: int
    num_gpu_blocks: int
    block_size: int
    kv_cache_tokens: int
    kv_cache_gib: float
    gpu_memory_utilization: float
    max_concurrency: float
    load_time_s: float
    # The blocks the memory model gave before --num-gpu-blocks(-override) replaced them.
    num_gpu_blocks_from_memory: int | None = None
    # Blocks the scheduler can hand out: vLLM 0.32 keeps one block back (the null block).
    usable_blocks: int = 0
    kv_cache_memory_bytes: int | None = None


def resolve(config: SimConfig) -> Resolved:
    """Apply vLLM's defaults and checks; raise StartupError with vLLM's message when it would not start."""
    _check_positive(config)
    cpu = config.device == "cpu"
    world = config.tensor_parallel_size * config.pipeline_parallel_size
    if cpu:
        default_tokens, default_seqs = CPU_BATCH_DEFAULTS[0] * world, CPU_BATCH_DEFAULTS[1] * world
    else:
        default_tokens, default_seqs = default_batch_limits(config.gpu_memory_gib)
    _check_model(config)
    max_num_seqs = config.max_num_seqs or default_seqs
    if config.max_num_batched_tokens is not None:
        budget = config.max_num_batched_tokens
    elif config.enable_chunked_prefill:
        budget = min(default_tokens, max_num_seqs * config.max_model_len)
    else:
        budget = max(config.max_model_len, default_tokens)
    if config.max_num_seqs is None:
        # An unset max_num_seqs is lowered to the budget, not refused (vLLM 0.32's
        # EngineArgs._set_default_max_num_seqs_and_batched_tokens_args): only both set by hand
        # meet the check below.
        max_num_seqs = min(max_num_seqs, budget)
    if not config.enable_chunked_prefill and budget < config.max_model_len:
        raise StartupError(
            f"max_num_batched_tokens ({budget}) is smaller than max_model_len "
            f"({config.max_model_len}). This effectively limits the maximum sequence length to "
            "max_num_batched_tokens and makes vLLM reject longer sequences. Please increase "
            "max_num_batched_tokens or decrease max_model_len.",
            "api_server",
        )
    if budget < max_num_seqs:
        raise StartupError(
            f"max_num_batched_tokens ({budget}) must be greater than or equal to "
            f"max_num_seqs ({max_num_seqs}).",
            "api_server",
        )
    block_size = config.block_size or (CPU_BLOCK_SIZE if cpu else CUDA_BLOCK_SIZE)
    if cpu:
        return _resolve_cpu(config, budget, max_num_seqs, block_size)
    _check_profile_run_fits(config, max_num_seqs)
    utilization = config.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    num_blocks, kv_gib = _kv_cache_blocks(config, utilization, block_size)
    kv_tokens = num_blocks * block_size
    if kv_tokens < config.max_model_len:
        needed_gib = config.max_model_len * _kv_bytes_per_token_per_rank(config) / GIB
        estimated = kv_tokens // block_size * block_size
        raise StartupError(
            "To serve at least one request with the model's max seq len "
            f"({config.max_model_len}), ({needed_gib:.2f} GiB KV cache is needed, which is larger "
            f"than the available KV cache memory ({kv_gib:.2f} GiB). Based on the available "
            f"memory, the estimated maximum model length is {estimated}. Try increasing "
            "`gpu_memory_utilization` when initializing the engine. Decreasing `max_model_len` "
            "also reduces what is needed. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
            "engine_core",
            kv_bytes=int(kv_gib * GIB),
        )
    load_time = config.cold_start.checkpoint_read_s * config.tensor_parallel_size
    return Resolved(
        max_num_batched_tokens=budget,
        max_num_seqs=max_num_seqs,
        num_gpu_blocks=num_blocks,
        block_size=block_size,
        kv_cache_tokens=kv_tokens,
        kv_cache_gib=kv_gib,
        gpu_memory_utilization=utilization,
        max_concurrency=kv_tokens / config.max_model_len,
        load_time_s=load_time,
        usable_blocks=num_blocks,
    )


def format_gib(num_bytes: float) -> str:
    """vLLM's ``format_gib``: GiB rounded to two places, as Python prints the float."""
    return f"{round(num_bytes / GIB, 2)}"


def _resolve_cpu(config: SimConfig, budget: int, max_num_seqs: int, block_size: int) -> Resolved:
    """vLLM 0.32's CPU backend: the KV cache is VLLM_CPU_KVCACHE_SPACE; one block is the null block."""
    utilization = config.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION
    per_token = _kv_bytes_per_token_per_rank(config)
    if config.kv_cache_tokens is not None:  # the simulator's knob stands in for the memory
        space = int(config.kv_cache_tokens // block_size * block_size * per_token)
    else:
        space = int(config.cpu_kvcache_space_gib * GIB)
    from_memory = math.floor(space / (per_token * block_size))
    num_blocks = config.num_gpu_blocks if config.num_gpu_blocks is not None else from_memory
    available = num_blocks * block_size * per_token
    if num_blocks <= 0:
        raise StartupError(
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine (this flag also controls CPU memory reservation on the "
            "CPU backend, despite its name). See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
            "engine_core",
        )
    # vLLM needs max_model_len / block_size blocks plus one for a request of max_model_len
    # (measured: 16 blocks of 128 cannot serve 2,048 tokens; the estimate is then 1,920).
    needed_blocks = math.ceil(config.max_model_len / block_size) + 1
    if num_blocks < needed_blocks:
        estimated = (num_blocks - 1) * block_size
        estimate = (
            f"Based on the available memory, the estimated maximum model length is {estimated}. "
            if estimated > 0
            else ""
        )
        raise StartupError(
            "To serve at least one request with the model's max seq len "
            f"({config.max_model_len}), ({format_gib(needed_blocks * block_size * per_token)} GiB "
            "KV cache is needed, which is larger than the available KV cache memory "
            f"({format_gib(available)} GiB). {estimate}Try increasing `gpu_memory_utilization` "
            "(which also controls CPU memory on the CPU backend) or decreasing `max_model_len` "
            "when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
            "engine_core",
            kv_bytes=space,
            blocks_from_memory=from_memory,
        )
    kv_tokens = num_blocks * block_size
    overridden = config.num_gpu_blocks is not None
    return Resolved(
        max_num_batched_tokens=budget,
        max_num_seqs=max_num_seqs,
        num_gpu_blocks=num_blocks,
        block_size=block_size,
        kv_cache_tokens=kv_tokens,
        kv_cache_gib=space / GIB,
        gpu_memory_utilization=utilization,
        max_concurrency=kv_tokens / config.max_model_len,
        load_time_s=config.cold_start.checkpoint_read_s * config.tensor_parallel_size,
        num_gpu_blocks_from_memory=from_memory if overridden else None,
        usable_blocks=num_blocks - 1,
        kv_cache_memory_bytes=space,
    )


def _check_model(config: SimConfig) -> None:
    """vLLM's ModelConfig checks against the model's config.json, in the API server (0.32's
    config/model.py wording)."""
    heads, tp = config.num_attention_heads, config.tensor_parallel_size
    if heads % tp:
        raise StartupError(
            f"Total number of attention heads ({heads}) must be divisible by tensor parallel "
            f"size ({tp}).",
            "api_server",
        )
    if config.max_model_len > config.max_position_embeddings:
        raise StartupError(
            f"User-specified max_model_len ({config.max_model_len}) is greater than the derived "
            f"max_model_len (max_position_embeddings={config.max_position_embeddings} or "
            "model_max_length=None in model's config.json). To allow overriding this maximum, "
            "set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must "
            "be used with extreme caution. If the model uses relative position encoding (RoPE), "
            "positions exceeding derived_max_model_len lead to nan. If the model uses absolute "
            "position encoding, positions exceeding derived_max_model_len will cause a CUDA "
            "array out-of-bounds error.",
            "api_server",
        )


def _check_profile_run_fits(config: SimConfig, max_num_seqs: int) -> None:
    """The profile run's peak on one device: its weights, the activations, and the sampler
    warm-up's float32 logits for max_num_seqs dummy requests; past the device's memory PyTorch
    raises its CUDA out-of-memory error (before the KV cache is sized)."""
    ranks = config.tensor_parallel_size * config.pipeline_parallel_size
    held = config.weights_gib / ranks + config.activation_peak_gib
    logits = max_num_seqs * config.vocab_size * 4 / GIB
    if held + logits <= config.gpu_memory_gib:
        return
    free = max(config.gpu_memory_gib - held, 0.0)
    raise OutOfMemory(
        f"CUDA out of memory. Tried to allocate {_torch_size(logits)}. GPU 0 has a total capacity "
        f"of {_torch_size(config.gpu_memory_gib)} of which {_torch_size(free)} is free. Including "
        f"non-PyTorch memory, this process has {_torch_size(config.gpu_memory_gib - free)} memory "
        f"in use. Of the allocated memory {_torch_size(held)} is allocated by PyTorch, and "
        f"{_torch_size(0.0)} is reserved by PyTorch but unallocated. If reserved but unallocated "
        "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
        "fragmentation."
    )


def _torch_size(gib: float) -> str:
    """PyTorch's ``format_size``: GiB from one GiB up, MiB below it, two decimals."""
    return f"{gib:.2f} GiB" if gib >= 1 else f"{gib * 1024:.2f} MiB"


def _kv_bytes_per_token_per_rank(config: SimConfig) -> float:
    # Tensor parallelism splits the KV heads, pipeline parallelism splits the layers.
    return config.kv_bytes_per_token / (config.tensor_parallel_size * config.pipeline_parallel_size)


def _kv_cache_blocks(config: SimConfig, utilization: float, block_size: int) -> tuple[int, float]:
    """Return (num_gpu_blocks, KV-cache GiB per rank) from explicit sizes or the memory model."""
    per_token = _kv_bytes_per_token_per_rank(config)
    if config.num_gpu_blocks is not None:
        blocks = config.num_gpu_blocks
        return blocks, blocks * block_size * per_token / GIB
    if config.kv_cache_tokens is not None:
        blocks = config.kv_cache_tokens // block_size
        return blocks, blocks * block_size * per_token / GIB
    ranks = config.tensor_parallel_size * config.pipeline_parallel_size
    graphs = 0.0 if config.enforce_eager else config.cuda_graph_gib
    free = (
        config.gpu_memory_gib * utilization
        - config.weights_gib / ranks
        - config.activation_peak_gib
        - graphs
    )
    if free <= 0:
        raise StartupError(
            "No available memory for the cache blocks. Try increasing `gpu_memory_utilization` "
            "when initializing the engine. See "
            "https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
            "engine_core",
            kv_bytes=int(free * GIB),  # negative: what the weights and overhead took past the share
        )
    blocks = math.floor(free * GIB / per_token / block_size)
    return blocks, free


def _check_positive(config: SimConfig) -> None:
    checks: dict[str, float | None] = {
        "max_num_batched_tokens": config.max_num_batched_tokens,
        "max_num_seqs": config.max_num_seqs,
        "max_model_len": config.max_model_len,
        "num_gpu_blocks": config.num_gpu_blocks,
        "kv_cache_tokens": config.kv_cache_tokens,
        "block_size": config.block_size,
        "tensor_parallel_size": config.tensor_parallel_size,
        "pipeline_parallel_size": config.pipeline_parallel_size,
        "nodes": config.nodes,
        "api_server_count": config.api_server_count,
        "die_after_requests": config.die_after_requests,
    }
    for name, value in checks.items():
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}.")
    world = config.tensor_parallel_size * config.pipeline_parallel_size
    if world % config.nodes:
        raise ConfigError(
            f"{world} GPUs (tp x pp) cannot be spread evenly over {config.nodes} nodes."
        )
    util = config.gpu_memory_utilization
    if util is not None and not 0 < util <= 1:
        raise ConfigError(f"gpu_memory_utilization must be in (0, 1], got {util}.")
    if config.sse_keep_alive_interval < 0:
        raise ConfigError("sse_keep_alive_interval must be >= 0.")
    if config.gpu_memory_bandwidth_gbps <= 0:
        raise ConfigError(
            f"gpu_memory_bandwidth_gbps must be > 0, got {config.gpu_memory_bandwidth_gbps}."
        )
    if config.cpu_kvcache_space_gib <= 0:
        raise ConfigError(f"cpu_kvcache_space_gib must be > 0, got {config.cpu_kvcache_space_gib}.")
