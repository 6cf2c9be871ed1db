"""Log lines written the way vLLM writes them (``vllm/logger.py`` format, exact messages).

Every line is ``(<process> pid=<pid>) <LEVEL> <MM-DD HH:MM:SS> [<file>:<line>] <message>``. With
``device="cuda"`` the messages are vLLM 0.34's format strings from ``facts/vllm.md`` §2; with
``device="cpu"`` they are what the CPU build of vLLM 0.32 writes, copied from real logs
(``facts/real-vllm.md``): the ASCII banner, ``Initializing model took``, ``Explicitly set ... GiB for
KV cache``, ``CPU KV cache size``, the stats line without ``Preemptions``, ``Starting vLLM server
on``, and the start-up failures with their tracebacks. Only the numbers are the simulator's.
"""

from __future__ import annotations

import datetime
import os
import threading
from dataclasses import dataclass, field
from typing import TextIO

from wizard.sim.config import GIB, Resolved, SimConfig, format_gib

VLLM_VERSION = "0.34.0"
CPU_VLLM_VERSION = "0.32.0"
# Where the tracebacks of a failed start say vLLM is installed.
SITE = "/usr/local/lib/python3.11/site-packages"

# The routes the simulator serves, as vLLM lists them at start-up.
ROUTES = (
    ("/health", "GET"), ("/version", "GET"), ("/metrics", "GET"), ("/v1/models", "GET"),
    ("/v1/completions", "POST"), ("/v1/chat/completions", "POST"),
)  # fmt: skip

# vLLM 0.32's banner (api_utils.py log_version_and_model, monochrome); the lines end in "\r".
BANNER = (
    "\r",
    "       █     █     █▄   ▄█\r",
    " ▄▄ ▄█ █     █     █ ▀▄▀ █  version {version}\r",
    "  █▄█▀ █     █     █     █  model   {model}\r",
    "   ▀▀  ▀▀▀▀▀ ▀▀▀▀▀ ▀     ▀\r",
    "",
)
ENFORCE_EAGER_WARNING = (
    "Enforce eager set, disabling torch.compile, CUDAGraphs, and JIT kernel warmup. This is "
    "equivalent to setting -cc.mode=none -cc.cudagraph_mode=none and "
    "--kernel_config.enable_jit_warmup=False"
)
CHUNKED_OFF_WARNING = (
    "This model does not officially support disabling chunked prefill. Disabling this manually "
    "may cause the engine to crash or produce incorrect outputs."
)


def _frame(path: str, line: int, function: str, code: str, marks: str = "") -> list[str]:
    """One traceback frame as Python prints it (``marks`` is the ``^^^`` line, if any)."""
    lines = [f'  File "{path}", line {line}, in {function}', f"    {code}"]
    if marks:
        lines.append(marks)
    return lines


def _vllm(relative: str) -> str:
    return f"{SITE}/vllm/{relative}"


# The API server's own frames, from ``main()`` down to building the engine client (0.32).
API_SERVER_FRAMES = [
    '  File "<frozen runpy>", line 198, in _run_module_as_main',
    '  File "<frozen runpy>", line 88, in _run_code',
    *_frame(_vllm("entrypoints/openai/api_server.py"), 59, "<module>", "main()"),
    *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 232, "main",
            "uvloop.run(run_server(args))"),
    *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 177, "run_server",
            "await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)"),
    *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 195, "run_server_worker",
            "async with build_async_engine_client("),
    *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 61, "build_async_engine_client",
            "async with build_async_engine_client_from_engine_args("),
]  # fmt: skip


@dataclass
class SpecStats:
    """Speculative-decoding counts since the last stats line (vLLM's SpecDecodingLogging)."""

    drafts: int = 0
    drafted: int = 0
    accepted: int = 0
    accepted_per_pos: dict[int, int] = field(default_factory=dict)

    def observe(self, drafted: int, accepted: int) -> None:
        """One request's drafts verified in a step."""
        self.drafts += 1
        self.drafted += drafted
        self.accepted += accepted
        for position in range(accepted):
            self.accepted_per_pos[position] = self.accepted_per_pos.get(position, 0) + 1


class VllmLog:
    """Writes vLLM-formatted lines to any number of text streams (stderr, a log file)."""

    def __init__(self, streams: list[TextIO], device: str = "cuda") -> None:
        self._streams = streams
        self._lock = threading.Lock()
        self.cpu = device == "cpu"
        self.api_pid = os.getpid()
        self.engine_pid = self.api_pid + 1

    def line(
        self, process: str, level: str, source: str, message: str, pid: int | None = None
    ) -> None:
        """Write one line from ``process`` (APIServer, EngineCore, Worker_TP0, ...)."""
        stamp = datetime.datetime.now().strftime("%m-%d %H:%M:%S")
        pid = pid if pid is not None else self._pid_of(process)
        self.raw([f"({process} pid={pid}) {level} {stamp} [{source}] {message}"])

    def raw(self, lines: list[str]) -> None:
        """Write lines as they are (tracebacks carry no vLLM prefix)."""
        text = "".join(f"{line}\n" for line in lines)
        with self._lock:
            for stream in self._streams:
                stream.write(text)
                stream.flush()

    def _pid_of(self, process: str) -> int:
        if process == "APIServer":
            return self.api_pid
        if process == "EngineCore":
            return self.engine_pid
        # Workers get their own pids after the engine core's.
        rank = int(process.rsplit("TP", 1)[-1]) if "TP" in process else 0
        return self.engine_pid + 1 + rank

    # -- start-up -----------------------------------------------------------------------------

    def non_default_args(self, args: dict[str, object]) -> None:
        """``non-default args: {...}`` (the API key is redacted, as vLLM does)."""
        if self.cpu:
            shown = {k: ("***" if k == "api_key" else v) for k, v in args.items()}
            model = str(args.get("model", ""))
            for line in BANNER:
                message = line.format(version=CPU_VLLM_VERSION, model=model)
                self.line("APIServer", "INFO", "api_utils.py:347", message)
            self.line("APIServer", "INFO", "api_utils.py:286", f"non-default args: {shown}")
            return
        shown = {k: ("[REDACTED]" if k == "api_key" else v) for k, v in args.items()}
        self.line("APIServer", "INFO", "utils.py:96", f"non-default args: {shown}")

    def banner(self, config: SimConfig, resolved: Resolved | None) -> None:
        """The API server's and engine's start-up lines up to loading the weights."""
        if self.cpu:
            self.cpu_api_server_lines(config)
            self.engine_config(config)
            return
        assert resolved is not None
        self.line(
            "APIServer", "INFO", "startup.py:18",
            f"vLLM server version {VLLM_VERSION}, serving model {config.model}",
        )  # fmt: skip
        self.line("APIServer", "INFO", "model.py:761", "Resolved architecture: LlamaForCausalLM")
        self.line(
            "APIServer", "INFO", "model.py:2214", f"Using max model len {config.max_model_len}"
        )
        if config.enable_chunked_prefill:
            self.line(
                "APIServer", "INFO", "scheduler.py:355",
                f"Chunked prefill is enabled with max_num_batched_tokens={resolved.max_num_batched_tokens}.",
            )  # fmt: skip
        else:
            self.line("APIServer", "WARNING", "arg_utils.py:1808", CHUNKED_OFF_WARNING)
        self.engine_config(config)

    def cpu_api_server_lines(self, config: SimConfig) -> None:
        """0.32's API-server lines between the arguments and the engine core's start."""
        self.line("APIServer", "INFO", "model.py:733", "Resolved architecture: LlamaForCausalLM")
        self.line(
            "APIServer", "INFO", "model.py:2152", f"Using max model len {config.max_model_len}"
        )
        if config.enforce_eager:
            self.line("APIServer", "WARNING", "vllm.py:1703", ENFORCE_EAGER_WARNING)
        if not config.enable_chunked_prefill:
            self.line("APIServer", "WARNING", "arg_utils.py:3005", CHUNKED_OFF_WARNING)

    def engine_config(self, config: SimConfig) -> None:
        """``Initializing a V1 LLM engine (vX) with config: ...`` (the leading fields)."""
        if self.cpu:
            self.line(
                "EngineCore", "INFO", "core.py:133",
                f"Initializing a V1 LLM engine (v{CPU_VLLM_VERSION}) with config: "
                f"model='{config.model}', speculative_config={speculative_repr(config)}, tokenizer='{config.model}', "
                "skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
                "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
                f"max_seq_len={config.max_model_len}, download_dir=None, "
                f"load_format={config.load_format or 'auto'}, "
                f"tensor_parallel_size={config.tensor_parallel_size}, "
                f"pipeline_parallel_size={config.pipeline_parallel_size}, data_parallel_size=1, "
                "decode_context_parallel_size=1, dcp_comm_backend=ag_rs, "
                "disable_custom_all_reduce=True, quantization=None, quantization_config=None, "
                f"enforce_eager={config.enforce_eager}, kv_cache_dtype=auto, device_config=cpu, "
                f"seed=0, served_model_name={config.served_name}, "
                f"enable_prefix_caching={config.enable_prefix_caching}, "
                f"enable_chunked_prefill={config.enable_chunked_prefill}, pooler_config=None",
            )  # fmt: skip
            return
        self.line(
            "EngineCore", "INFO", "core.py:154",
            f"Initializing a V1 LLM engine (v{VLLM_VERSION}) with config: model='{config.model}', "
            f"max_seq_len={config.max_model_len}, tensor_parallel_size={config.tensor_parallel_size}, "
            f"pipeline_parallel_size={config.pipeline_parallel_size}, "
            f"enforce_eager={config.enforce_eager}, "
            f"speculative_config={speculative_repr(config)}, "
            f"enable_prefix_caching={config.enable_prefix_caching}, "
            f"enable_chunked_prefill={config.enable_chunked_prefill}",
        )  # fmt: skip

    def loading_model(self, config: SimConfig) -> None:
        """0.32 CPU: ``Starting to load model ...`` (before the weights are read)."""
        self.line("Worker", "INFO", "cpu_model_runner.py:68",
                  f"Starting to load model {config.model}...")  # fmt: skip

    def weights_loaded(self, config: SimConfig, seconds: float) -> None:
        """GPU: ``Loading weights took`` / ``Model loading took`` per rank; CPU: ``Initializing model took``."""
        if self.cpu:
            self.line("Worker", "INFO", "base_loader.py:82",
                      f"Initializing model took {seconds:.6f} seconds")  # fmt: skip
            return
        ranks = config.tensor_parallel_size
        per_rank_gib = config.weights_gib / (ranks * config.pipeline_parallel_size)
        for rank in range(ranks):
            worker = f"Worker_TP{rank}" if ranks > 1 else "Worker"
            pid = self.engine_pid + 1 + rank
            self.line(
                worker,
                "INFO",
                "default_loader.py:544",
                f"Loading weights took {seconds:.2f} seconds",
                pid,
            )
            self.line(
                worker, "INFO", "model_runner.py:442",
                f"Model loading took {per_rank_gib:.2f} GiB memory and {seconds + 0.4:.6f} seconds", pid,
            )  # fmt: skip

    def warming_up(self, done: bool) -> None:
        """0.32 CPU without --enforce-eager: the compile warm-up around the KV-cache sizing."""
        if done:
            self.line("Worker", "INFO", "cpu_model_runner.py:91", "Warming up done.")
        else:
            self.line("Worker", "INFO", "cpu_model_runner.py:87",
                      "Warming up model for the compilation...")  # fmt: skip

    def cpu_kv_memory(self, config: SimConfig, kv_bytes: float) -> None:
        """0.32 CPU: ``Explicitly set (X/Y) GiB for KV cache on node 0.`` (VLLM_CPU_KVCACHE_SPACE)."""
        self.line(
            "Worker", "INFO", "cpu_worker.py:260",
            f"Explicitly set ({format_gib(kv_bytes)}/{format_gib(config.cpu_node_memory_gib * GIB)}) "
            "GiB for KV cache on node 0.",
        )  # fmt: skip

    def blocks_overridden(self, from_memory: int, override: int) -> None:
        """``Overriding num_gpu_blocks=N with num_gpu_blocks_override=M``."""
        self.line("EngineCore", "INFO", "kv_cache_utils.py:2619",
                  f"Overriding num_gpu_blocks={from_memory} with num_gpu_blocks_override={override}")  # fmt: skip

    def kv_cache(self, config: SimConfig, resolved: Resolved) -> None:
        """KV memory and the one-line capacity message (``GPU`` or ``CPU`` KV cache size)."""
        capacity = (
            f"KV cache size: {resolved.kv_cache_tokens:,} tokens, Maximum concurrency for "
            f"{config.max_model_len:,} tokens per request: {resolved.max_concurrency:.2f}x"
        )
        if self.cpu:
            self.line("EngineCore", "INFO", "kv_cache_utils.py:2327", f"CPU {capacity}")
            return
        self.kv_memory(resolved.kv_cache_gib)
        self.line("EngineCore", "INFO", "kv_cache_utils.py:1169", f"GPU {capacity}")

    def kv_memory(self, gib: float) -> None:
        """0.34 (GPU): the KV cache's share as the worker logs it before sizing the cache (negative
        when the weights and the profile run's peak took more than the share)."""
        self.line(
            "Worker", "INFO", "gpu_worker.py:796", f"Available KV cache memory: {gib:.2f} GiB"
        )

    def graphs_captured(self, seconds: float, gib: float) -> None:
        """``Graph capturing finished in N secs, took X GiB``."""
        self.line(
            "Worker", "INFO", "model_runner.py:1217",
            f"Graph capturing finished in {seconds:.0f} secs, took {gib:.2f} GiB",
        )  # fmt: skip

    def init_engine_took(self, seconds: float) -> None:
        """``init engine (profile, create kv cache, warmup model) took N s``."""
        self.line(
            "EngineCore", "INFO", "core.py:402" if self.cpu else "core.py:442",
            f"init engine (profile, create kv cache, warmup model) took {seconds:.2f} s",
        )  # fmt: skip

    def server_started(self, url: str) -> None:
        """The API server's ready lines (0.32 writes them once the engine is up)."""
        if self.cpu:
            self.line("APIServer", "INFO", "entry.py:140", f"Starting vLLM server on {url}")
            self.line("APIServer", "INFO", "launcher.py:186", "Available routes are:")
            for path, methods in ROUTES:
                self.line(
                    "APIServer", "INFO", "launcher.py:195", f"Route: {path}, Methods: {methods}"
                )
            return
        self.line("APIServer", "INFO", "api_server.py:1971", f"Starting vLLM API server 0 on {url}")
        self.line("APIServer", "INFO", "launcher.py:188", "Available routes are:")
        for path, methods in ROUTES:
            self.line("APIServer", "INFO", "launcher.py:188", f"Route: {path}, Methods: {methods}")

    # -- runtime -------------------------------------------------------------------------------

    def stats(
        self,
        prompt_tps: float,
        generation_tps: float,
        running: int,
        waiting: int,
        preemptions: int,
        kv_usage: float,
        prefix_hit_rate: float | None = None,
    ) -> None:
        """The periodic ``Engine 000:`` line.

        0.34 (GPU) adds ``Preemptions: N`` when there were some; 0.32 (CPU) never does (it resets
        the count before logging). Both add ``Prefix cache hit rate`` once prefix caching has seen
        a query (never with caching off: vLLM then looks nothing up).
        """
        parts = [
            f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
            f"Avg generation throughput: {generation_tps:.1f} tokens/s",
            f"Running: {running} reqs",
            f"Waiting: {waiting} reqs",
        ]
        if self.cpu:
            parts.append(f"CPU KV cache usage: {kv_usage * 100:.1f}%")
            if prefix_hit_rate is not None:
                parts.append(f"Prefix cache hit rate: {prefix_hit_rate * 100:.1f}%")
            self.line("APIServer", "INFO", "loggers.py:335", "Engine 000: " + ", ".join(parts))
            return
        if preemptions:
            parts.append(f"Preemptions: {preemptions}")
        parts.append(f"GPU KV cache usage: {kv_usage * 100:.1f}%")
        if prefix_hit_rate is not None:
            parts.append(f"Prefix cache hit rate: {prefix_hit_rate * 100:.1f}%")
        self.line("APIServer", "INFO", "loggers.py:270", "Engine 000: " + ", ".join(parts))

    def spec_decoding(
        self, stats: SpecStats, num_speculative_tokens: int, interval_s: float
    ) -> None:
        """vLLM V1's ``SpecDecoding metrics:`` line, logged with the stats line (spec_decode/metrics.py)."""
        rates = ", ".join(
            f"{stats.accepted_per_pos.get(pos, 0) / stats.drafts:.3f}"
            for pos in range(num_speculative_tokens)
        )
        rate = stats.accepted / stats.drafted * 100 if stats.drafted else float("nan")
        self.line(
            "APIServer", "INFO", "metrics.py:120",
            f"SpecDecoding metrics: Mean acceptance length: {1 + stats.accepted / stats.drafts:.2f}, "
            f"Accepted throughput: {stats.accepted / interval_s:.2f} tokens/s, "
            f"Drafted throughput: {stats.drafted / interval_s:.2f} tokens/s, "
            f"Accepted: {stats.accepted} tokens, Drafted: {stats.drafted} tokens, "
            f"Per-position acceptance rate: {rates}, Avg Draft acceptance rate: {rate:.1f}%",
        )  # fmt: skip

    def ignored_fields(self, fields: list[str]) -> None:
        """vLLM 0.34 warns about, and ignores, request fields it does not know (0.32 only at DEBUG)."""
        if self.cpu:
            return
        self.line(
            "APIServer", "WARNING", "protocol.py:86",
            f"The following fields were present in the request but ignored: {set(fields)}",
        )  # fmt: skip

    def request_error(self, message: str, kind: str, param: str | None, code: int) -> None:
        """0.32 logs a request for an unknown model: ``Error with model error=ErrorInfo(...)``."""
        if self.cpu:
            self.line(
                "APIServer", "ERROR", "serving.py:274",
                f"Error with model error=ErrorInfo(message={message!r}, type={kind!r}, "
                f"param={param!r}, code={code})",
            )  # fmt: skip

    def engine_died(self) -> None:
        """The engine core dying while serving (0.32's core.py and async_llm.py), as
        --die-after-requests makes it: its fatal error, then the API server's EngineDeadError."""
        for text in ("EngineCore encountered a fatal error.", "Traceback (most recent call last):",
                     *_frame(_vllm("v1/engine/core.py"), 1503, "run_engine_core",
                             "engine_core.run_busy_loop()"),
                     "RuntimeError: the simulated engine core died (--die-after-requests)"):  # fmt: skip
            self.line("EngineCore", "ERROR", "core.py:1512", text)
        self.line("APIServer", "ERROR", "async_llm.py:703", "AsyncLLM output_handler failed.")
        self.line("APIServer", "ERROR", "async_llm.py:703",
                  "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. "
                  "See stack trace (above) for the root cause.")  # fmt: skip

    # -- failed starts -------------------------------------------------------------------------

    def fatal(self, message: str) -> None:
        """0.34 (GPU): a start-up failure, as the engine core reports it before exiting."""
        self.line(
            "EngineCore",
            "ERROR",
            "core.py:1046",
            f"EngineCore failed to start.\nValueError: {message}",
        )

    def out_of_memory(self, config: SimConfig, message: str) -> None:
        """0.34 (GPU): PyTorch's CUDA OOM in the profile run; the rank that ran out says it (a
        worker of its own, ``Worker_TP0``, with tensor parallelism), then the engine core and the
        API server give up."""
        rank = "Worker_TP0" if config.tensor_parallel_size > 1 else "EngineCore"
        self.line("EngineCore", "ERROR", "core.py:1046", "EngineCore failed to start.")
        self.line(rank, "ERROR", "core.py:1046", f"torch.OutOfMemoryError: {message}")
        self.raw(
            [
                "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
                "proc(s): {'EngineCore': 1}",
            ]
        )

    def scheduler_config_refused(self, message: str) -> None:
        """0.32 (CPU): the API server's pydantic check refuses the arguments (no engine exists)."""
        self.raw([
            "Traceback (most recent call last):",
            *API_SERVER_FRAMES,
            *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 83,
                    "build_async_engine_client_from_engine_args",
                    "vllm_config = engine_args.create_engine_config(usage_context=usage_context)",
                    "                  " + "^" * 61),
            *_frame(_vllm("engine/arg_utils.py"), 2617, "create_engine_config",
                    "scheduler_config = SchedulerConfig(", "                       " + "^" * 16),
            *_frame(f"{SITE}/pydantic/_internal/_dataclasses.py", 121, "__init__",
                    "s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)"),
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for SchedulerConfig",
            f"  Value error, {message} [type=value_error, input_value=ArgsKwargs((), "
            "{'runner_t..., 'stream_interval': 1}), input_type=ArgsKwargs]",
            "    For further information visit https://errors.pydantic.dev/2.14/v/value_error",
        ])  # fmt: skip

    def engine_core_failed(self, message: str) -> None:
        """0.32 (CPU): the engine core's KV-cache check fails; the API server gives up after it."""
        frames = [
            *_frame(_vllm("v1/engine/core.py"), 1482, "run_engine_core",
                    "engine_core = EngineCoreProc(*args, engine_index=dp_rank, **kwargs)",
                    "                  " + "^" * 53),
            *_frame(_vllm("v1/engine/core.py"), 1194, "__init__", "super().__init__("),
            *_frame(_vllm("v1/engine/core.py"), 157, "__init__",
                    "kv_cache_config = self._initialize_kv_caches(vllm_config)",
                    "                      " + "^" * 39),
            *_frame(_vllm("v1/engine/core.py"), 326, "_initialize_kv_caches",
                    "kv_cache_configs = get_kv_cache_configs(", "                       " + "^" * 21),
            *_frame(_vllm("v1/core/kv_cache_utils.py"), 2642, "get_kv_cache_configs",
                    "_check_enough_kv_cache_memory("),
            *_frame(_vllm("v1/core/kv_cache_utils.py"), 1030, "_check_enough_kv_cache_memory",
                    "raise ValueError("),
        ]  # fmt: skip
        error = f"ValueError: {message}"
        for text in ("EngineCore failed to start.", "Traceback (most recent call last):",
                     *frames, error):  # fmt: skip
            self.line("EngineCore", "ERROR", "core.py:1510", text)
        self.line("EngineCore", "ERROR", "multiproc_executor.py:315",
                  "Worker proc VllmWorker-0 died unexpectedly (exit code: None), shutting down executor.")  # fmt: skip
        python = "/usr/local/lib/python3.11/multiprocessing/process.py"
        self.raw([
            "Process EngineCore:",
            "Traceback (most recent call last):",
            *_frame(python, 314, "_bootstrap", "self.run()"),
            *_frame(python, 108, "run", "self._target(*self._args, **self._kwargs)"),
            *_frame(_vllm("v1/engine/core.py"), 1514, "run_engine_core", "raise e"),
            *frames,
            error,
            "Traceback (most recent call last):",
            *API_SERVER_FRAMES,
            *_frame(_vllm("entrypoints/launchers/api_server/entry.py"), 95,
                    "build_async_engine_client_from_engine_args",
                    "async_llm = AsyncLLM.from_vllm_config(", "                " + "^" * 26),
            *_frame(_vllm("v1/engine/utils.py"), 1351, "launch_core_engines",
                    "wait_for_engine_startup("),
            *_frame(_vllm("v1/engine/utils.py"), 1431, "wait_for_engine_startup",
                    "raise RuntimeError("),
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core "
            "proc(s): {'EngineCore': 1}",
        ])  # fmt: skip


def speculative_repr(config: SimConfig) -> str:
    """How vLLM's engine config line prints ``speculative_config`` (its ``__repr__``)."""
    spec = config.speculative_config
    if spec is None:
        return "None"
    draft = "None" if spec.model is None else f"'{spec.model}'"
    return (
        f"SpeculativeConfig(method='{spec.method}', model={draft}, "
        f"num_spec_tokens={spec.num_speculative_tokens})"
    )
