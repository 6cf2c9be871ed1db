"""Start the simulator: resolve the config, bind the socket, serve until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import TextIO

from wizard.errors import ConfigError
from wizard.sim.config import GIB, OutOfMemory, Resolved, SimConfig, StartupError, resolve
from wizard.sim.engine import Engine
from wizard.sim.metrics import SimMetrics, cache_config_labels
from wizard.sim.server import SimServer
from wizard.sim.vllm_log import VllmLog


def bind(host: str, port: int) -> socket.socket:
    """Bind a listening TCP socket (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    if family in (socket.AF_INET, socket.AF_INET6):
        # Accepted connections inherit this: without it, Nagle + delayed ACK hold the first small
        # SSE events for ~40 ms, a delay no real vLLM shows.
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(2048)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    """The base URL a client uses for a bound socket."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def serve(
    config: SimConfig,
    *,
    host: str,
    port: int,
    api_key: str | None,
    non_default_args: dict[str, object],
    log_streams: list[TextIO],
    on_listening: Callable[[str], None],
    on_ready: Callable[[str], None],
    http: str = "auto",
) -> int:
    """Run the simulator in this process until SIGINT/SIGTERM; return the exit code."""
    log = VllmLog(log_streams, config.device)
    log.non_default_args(non_default_args)
    try:
        resolved = resolve(config)
    except StartupError as exc:
        _log_refusal(log, config, exc)
        raise
    except ConfigError as exc:
        log.fatal(str(exc))
        raise
    log.banner(config, resolved)
    spec = config.speculative_config
    metrics = SimMetrics(
        model=config.served_name, generation=config.metrics_generation,
        max_model_len=config.max_model_len, cache_info=cache_info(config, resolved),
        num_speculative_tokens=spec.num_speculative_tokens if spec else 0,
    )  # fmt: skip
    engine = Engine(config, resolved, metrics, log)
    app = SimServer(engine, api_key).app()
    sock = bind(host, port)
    url = url_of(sock)

    def ready() -> None:
        if config.device == "cpu":  # 0.32 announces the server once the engine is up
            log.server_started(url)
        on_ready(url)

    if config.device != "cpu":
        log.server_started(url)
    engine.on_ready = ready
    on_listening(url)
    return asyncio.run(_serve(app, sock, http))


def cache_info(config: SimConfig, resolved: Resolved) -> dict[str, str]:
    """The labels of ``vllm:cache_config_info`` for this configuration."""
    if config.metrics_generation == "v0":  # the 2024-era label set
        return {
            "block_size": str(resolved.block_size),
            "num_gpu_blocks": str(resolved.num_gpu_blocks),
            "gpu_memory_utilization": str(config.gpu_memory_utilization),
            "cache_dtype": "auto",
            "enable_prefix_caching": "False",
        }
    cpu = config.device == "cpu"
    # 0.34 shows an unset --gpu-memory-utilization as None; 0.32 shows the resolved 0.92.
    utilization = resolved.gpu_memory_utilization if cpu else config.gpu_memory_utilization
    return cache_config_labels(
        block_size=resolved.block_size, user_block_size=config.block_size is not None,
        num_gpu_blocks=resolved.num_gpu_blocks, override=config.num_gpu_blocks,
        gpu_memory_utilization=str(utilization),
        enable_prefix_caching=config.enable_prefix_caching,
        kv_cache_memory_bytes=resolved.kv_cache_memory_bytes,
        kv_cache_size_tokens=resolved.kv_cache_tokens,
        kv_cache_max_concurrency=resolved.kv_cache_tokens / config.max_model_len,
    )  # fmt: skip


def _log_refusal(log: VllmLog, config: SimConfig, exc: StartupError) -> None:
    """What vLLM writes when it refuses to start: 0.34's one line, or 0.32's tracebacks."""
    if config.device != "cpu":
        if isinstance(exc, OutOfMemory):  # the model was loaded; the profile run ran out
            log.engine_config(config)
            load_s = config.cold_start.checkpoint_read_s * config.tensor_parallel_size
            log.weights_loaded(config, load_s)
            log.out_of_memory(config, str(exc))
            return
        if exc.kv_bytes is not None:  # the model was loaded, the KV cache sized from what was left
            log.engine_config(config)
            load_s = config.cold_start.checkpoint_read_s * config.tensor_parallel_size
            log.weights_loaded(config, load_s)
            log.kv_memory(exc.kv_bytes / GIB)
        log.fatal(str(exc))
        return
    if exc.stage == "api_server":  # pydantic refuses the arguments; no engine core is started
        log.cpu_api_server_lines(config)
        log.scheduler_config_refused(str(exc))
        return
    log.banner(config, None)
    log.loading_model(config)
    log.weights_loaded(config, config.cold_start.checkpoint_read_s * config.tensor_parallel_size)
    log.cpu_kv_memory(config, exc.kv_bytes or 0)
    if config.num_gpu_blocks is not None and exc.blocks_from_memory is not None:
        log.blocks_overridden(exc.blocks_from_memory, config.num_gpu_blocks)
    log.engine_core_failed(str(exc))


async def _serve(app: object, sock: socket.socket, http: str) -> int:
    import uvicorn  # heavy; only the sim needs it

    uv_config = uvicorn.Config(
        app,  # type: ignore[arg-type]
        log_level="warning",
        access_log=False,
        http=http,
        lifespan="on",
        timeout_keep_alive=5,  # vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE default
        backlog=2048,
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(uv_config)
    with contextlib.closing(sock):
        await server.serve(sockets=[sock])
    return 0


def announce_listening(url: str) -> None:
    """One line a human (or a test) can read the URL from, as soon as the socket listens."""
    print(f"latency-wizard sim: listening on {url} (/health answers 503 until the engine is ready)",
          flush=True)  # fmt: skip


def announce_ready(url: str) -> None:
    """One line when the engine is ready to serve."""
    print(f"latency-wizard sim: ready on {url}", flush=True)
