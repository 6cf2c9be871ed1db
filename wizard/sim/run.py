"""Start the simulator: resolve the config, bind the socket, serve until interrupted."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Callable
from typing import TextIO

from wizard.errors import ConfigError
from wizard.sim.config import SimConfig, resolve
from wizard.sim.engine import Engine
from wizard.sim.metrics import SimMetrics
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
    http: str = "h11",
) -> int:
    """Run the simulator in this process until SIGINT/SIGTERM; return the exit code."""
    log = VllmLog(log_streams)
    log.non_default_args(non_default_args)
    try:
        resolved = resolve(config)
    except ConfigError as exc:
        log.fatal(str(exc))
        raise
    log.banner(config, resolved)
    cache_info = {
        "block_size": str(resolved.block_size),
        "num_gpu_blocks": str(resolved.num_gpu_blocks),
        "gpu_memory_utilization": str(config.gpu_memory_utilization),
        "cache_dtype": "auto",
        "enable_prefix_caching": "False",
        "kv_cache_size_tokens": str(resolved.kv_cache_tokens),
        "kv_cache_max_concurrency": f"{resolved.max_concurrency:.2f}",
    }
    metrics = SimMetrics(
        model=config.model, generation=config.metrics_generation,
        max_model_len=config.max_model_len, cache_info=cache_info,
    )  # fmt: skip
    engine = Engine(config, resolved, metrics, log)
    app = SimServer(engine, api_key).app()
    sock = bind(host, port)
    url = url_of(sock)
    log.server_started(url)
    engine.on_ready = lambda: on_ready(url)
    on_listening(url)
    return asyncio.run(_serve(app, sock, http))


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
