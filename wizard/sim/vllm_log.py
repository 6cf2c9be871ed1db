"""Log lines written the way vLLM 0.34 writes them (``vllm/logger.py`` format, exact messages).

Every line is ``(<process> pid=<pid>) <LEVEL> <MM-DD HH:MM:SS> [<file>:<line>] <message>``; the
messages are vLLM's format strings from ``facts/vllm.md`` §2, filled with the simulator's numbers.
"""

from __future__ import annotations

import datetime
import os
import threading
from typing import TextIO

from wizard.sim.config import Resolved, SimConfig

VLLM_VERSION = "0.34.0"


class VllmLog:
    """Writes vLLM-formatted lines to any number of text streams (stderr, a log file)."""

    def __init__(self, streams: list[TextIO]) -> None:
        self._streams = streams
        self._lock = threading.Lock()
        self.api_pid = os.getpid()
        self.engine_pid = self.api_pid + 1

    def line(
        self, process: str, level: str, source: str, message: str, pid: int | None = None
    ) -> None:
        """Write one line from ``process`` (APIServer, EngineCore, Worker_TP0, ...)."""
        stamp = datetime.datetime.now().strftime("%m-%d %H:%M:%S")
        pid = pid if pid is not None else self._pid_of(process)
        text = f"({process} pid={pid}) {level} {stamp} [{source}] {message}\n"
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
        shown = {k: ("[REDACTED]" if k == "api_key" else v) for k, v in args.items()}
        self.line("APIServer", "INFO", "utils.py:96", f"non-default args: {shown}")

    def banner(self, config: SimConfig, resolved: Resolved) -> None:
        """The API server's and engine's start-up lines up to loading the weights."""
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
            self.line(
                "APIServer", "WARNING", "arg_utils.py:1808",
                "This model does not officially support disabling chunked prefill. Disabling this "
                "manually may cause the engine to crash or produce incorrect outputs.",
            )  # fmt: skip
        self.line(
            "EngineCore", "INFO", "core.py:154",
            f"Initializing a V1 LLM engine (v{VLLM_VERSION}) with config: model='{config.model}', "
            f"max_seq_len={config.max_model_len}, tensor_parallel_size={config.tensor_parallel_size}, "
            f"pipeline_parallel_size={config.pipeline_parallel_size}, "
            f"enforce_eager={config.enforce_eager}, enable_prefix_caching=False, "
            f"enable_chunked_prefill={config.enable_chunked_prefill}",
        )  # fmt: skip

    def weights_loaded(self, config: SimConfig, seconds: float) -> None:
        """One ``Loading weights took`` / ``Model loading took`` pair per tensor-parallel rank."""
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

    def kv_cache(self, config: SimConfig, resolved: Resolved) -> None:
        """KV memory and the one-line capacity message of 0.34."""
        self.line(
            "Worker",
            "INFO",
            "gpu_worker.py:796",
            f"Available KV cache memory: {resolved.kv_cache_gib:.2f} GiB",
        )
        self.line(
            "EngineCore", "INFO", "kv_cache_utils.py:1169",
            f"GPU KV cache size: {resolved.kv_cache_tokens:,} tokens, Maximum concurrency for "
            f"{config.max_model_len:,} tokens per request: {resolved.max_concurrency:.2f}x",
        )  # fmt: skip

    def graphs_captured(self, seconds: float, gib: float) -> None:
        """``Graph capturing finished in N secs, took X GiB``."""
        self.line(
            "Worker", "INFO", "model_runner.py:1217",
            f"Graph capturing finished in {seconds:.0f} secs, took {gib:.2f} GiB",
        )  # fmt: skip

    def init_engine_took(self, seconds: float) -> None:
        """``init engine (profile, create kv cache, warmup model) took N s``."""
        self.line(
            "EngineCore", "INFO", "core.py:442",
            f"init engine (profile, create kv cache, warmup model) took {seconds:.2f} s",
        )  # fmt: skip

    def server_started(self, url: str) -> None:
        """The API server's ready lines."""
        self.line("APIServer", "INFO", "api_server.py:1971", f"Starting vLLM API server 0 on {url}")
        self.line("APIServer", "INFO", "launcher.py:188", "Available routes are:")
        for path, methods in (
            ("/health", "GET"), ("/version", "GET"), ("/metrics", "GET"), ("/v1/models", "GET"),
            ("/v1/completions", "POST"), ("/v1/chat/completions", "POST"),
        ):  # fmt: skip
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
    ) -> None:
        """The periodic ``Engine 000:`` line; ``Preemptions`` only when there were some."""
        parts = [
            f"Avg prompt throughput: {prompt_tps:.1f} tokens/s",
            f"Avg generation throughput: {generation_tps:.1f} tokens/s",
            f"Running: {running} reqs",
            f"Waiting: {waiting} reqs",
        ]
        if preemptions:
            parts.append(f"Preemptions: {preemptions}")
        parts.append(f"GPU KV cache usage: {kv_usage * 100:.1f}%")
        self.line("APIServer", "INFO", "loggers.py:270", "Engine 000: " + ", ".join(parts))

    def ignored_fields(self, fields: list[str]) -> None:
        """vLLM warns about, and ignores, request fields it does not know."""
        self.line(
            "APIServer", "WARNING", "protocol.py:86",
            f"The following fields were present in the request but ignored: {set(fields)}",
        )  # fmt: skip

    def fatal(self, message: str) -> None:
        """A start-up failure, as the engine core reports it before exiting."""
        self.line(
            "EngineCore",
            "ERROR",
            "core.py:1046",
            f"EngineCore failed to start.\nValueError: {message}",
        )
