"""``latency-wizard sim``: serve the built-in vLLM behaviour simulator."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

HELP = "serve the vLLM behaviour simulator (OpenAI API, /metrics, vLLM logs)"
DESCRIPTION = """\
Serve a simulator that behaves like vLLM wherever a latency diagnosis looks: the OpenAI-compatible
API with vLLM's HTTP and SSE framing, /metrics with vLLM's names, vLLM's log lines, and an
engine-step scheduler (running requests first, chunked prefill, KV blocks, RECOMPUTE preemption)
so that queueing, preemption and TTFT/ITL trade-offs emerge from the configuration.

--device cuda (default) behaves like vLLM 0.34 on a GPU; --device cpu like the CPU build of
vLLM 0.32 as measured on a real server (128-token blocks, 'CPU KV cache' lines, its banner and its
start-up failures). Engine flags are spelled as on 'vllm serve'. A scenario presets a fault;
explicit flags override it. Ground truth (the emission time of every token) is served at
GET /sim/trace."""
EPILOG = """\
examples:
  latency-wizard sim                                  # healthy, on http://127.0.0.1:8000
  latency-wizard sim --scenario kv-pressure --port 8001
  latency-wizard sim --list-scenarios
  VLLM_API_KEY=secret latency-wizard sim --scenario auth-required"""
DEMO_API_KEY = "demo-key"

# (flag, dest, type, help) for the engine knobs that take a value; None means "vLLM's default".
VALUE_FLAGS: tuple[tuple[tuple[str, ...], str, type, str], ...] = (
    (("--max-num-batched-tokens",), "max_num_batched_tokens", int, "token budget per engine step"),
    (("--max-num-seqs",), "max_num_seqs", int, "most requests running at once"),
    (("--max-model-len",), "max_model_len", int, "longest prompt + output (default 8192)"),
    (("--num-gpu-blocks-override", "--num-gpu-blocks"), "num_gpu_blocks", int,
     "KV-cache blocks (overrides the memory model)"),
    (("--kv-cache-tokens",), "kv_cache_tokens", int, "KV-cache size in tokens (alternative to blocks)"),
    (("--block-size",), "block_size", int,
     "tokens per KV block (default 64 as vLLM 0.34 on GPU, 128 with --device cpu)"),
    (("--tensor-parallel-size", "-tp"), "tensor_parallel_size", int, "tensor-parallel degree"),
    (("--pipeline-parallel-size", "-pp"), "pipeline_parallel_size", int, "pipeline-parallel degree"),
    (("--gpu-memory-utilization",), "gpu_memory_utilization", float,
     "fraction of GPU memory for the engine (unset: 0.92)"),
    (("--sse-keep-alive-interval",), "sse_keep_alive_interval", float,
     "seconds between ': keep-alive' comments while a stream is idle (0 = off)"),
    (("--gpu-memory-gib",), "gpu_memory_gib", float, "simulated device memory (default 80)"),
    (("--gpu-memory-bandwidth",), "gpu_memory_bandwidth_gbps", float,
     "simulated device memory bandwidth in GB/s, which decode steps read the KV cache at "
     "(default 3350, an H100 SXM)"),
    (("--nodes",), "nodes", int,
     "hosts the tp x pp GPUs are spread over, evenly (default 1; --host-evidence shows one)"),
    (("--kv-bytes-per-token",), "kv_bytes_per_token", int,
     "KV-cache bytes per token of the simulated model (default 131072, Llama-3.1-8B in bf16)"),
    (("--cpu-kvcache-space",), "cpu_kvcache_space_gib", float,
     "--device cpu: GiB of KV cache, vLLM's VLLM_CPU_KVCACHE_SPACE (default 4)"),
    (("--api-server-count",), "api_server_count", int,
     "API server processes, each one core of the CPU work per request and token (default 1)"),
    (("--log-stats-interval",), "log_stats_interval_s", float,
     "seconds between 'Engine 000:' stats lines (VLLM_LOG_STATS_INTERVAL, default 10)"),
)  # fmt: skip


def register(subparsers: Any) -> None:
    """Add the ``sim`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sim", help=HELP, description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    parser.add_argument("--port", type=int, default=8000, help="port (0 picks a free one)")
    parser.add_argument(
        "--scenario", default="healthy", help="named fault preset (see --list-scenarios)"
    )
    parser.add_argument("--list-scenarios", action="store_true",
                        help="print every scenario and what a correct diagnosis finds")  # fmt: skip
    parser.add_argument("--model", help="the model (a name or path, as on 'vllm serve')")
    parser.add_argument("--served-model-name", dest="served_model_name",
                        help="the name clients use (default: the model)")  # fmt: skip
    parser.add_argument("--api-key", help="require this key on /v1 paths (default: $VLLM_API_KEY)")
    parser.add_argument("--log-file", help="also write vLLM-formatted log lines to this file")
    parser.add_argument("--quiet", action="store_true", help="do not copy log lines to stderr")
    parser.add_argument(
        "--host-evidence", metavar="DIR",
        help="write the simulated GPU host's lscpu, nvidia-smi topo -m, GPU list and env into DIR "
        "(for 'run --host-evidence DIR' and 'probe host --host-evidence DIR')",
    )  # fmt: skip
    parser.add_argument("--host-cores", type=int, default=32, metavar="N",
                        help="physical cores of the simulated host, in its lscpu (default 32)")  # fmt: skip
    parser.add_argument(
        "--host-visible-devices", metavar="IDS",
        help="CUDA_VISIBLE_DEVICES in the simulated host's env (default: every GPU the layout uses)",
    )  # fmt: skip
    parser.add_argument(
        "--http", choices=["auto", "httptools", "h11"], default="auto",
        help="uvicorn's HTTP implementation (default auto = httptools, as a stock vLLM installs "
        "it). It changes what nginx does: httptools answers an HTTP/1.0 proxy request with a "
        "chunked body, which nginx 1.22 passes on event by event even with proxy_buffering on; "
        "h11 answers it with a close-delimited body, which nginx 1.22 buffers",
    )  # fmt: skip
    parser.add_argument(
        "--device", choices=["cuda", "cpu"],
        help="cuda (default): vLLM 0.34 on a GPU; cpu: the CPU build of vLLM 0.32 as measured",
    )  # fmt: skip
    engine = parser.add_argument_group("engine flags (as on 'vllm serve')")
    for flags, dest, kind, text in VALUE_FLAGS:
        engine.add_argument(*flags, dest=dest, type=kind, help=text)
    engine.add_argument(
        "--enable-chunked-prefill",
        dest="enable_chunked_prefill",
        action=argparse.BooleanOptionalAction,
        help="chunked prefill (default on)",
    )
    engine.add_argument(
        "--enable-prefix-caching",
        dest="enable_prefix_caching",
        action=argparse.BooleanOptionalAction,
        help="reuse the KV blocks of a prompt's cached prefix (default on, as vLLM V1)",
    )
    engine.add_argument(
        "--enforce-eager",
        dest="enforce_eager",
        action=argparse.BooleanOptionalAction,
        help="no CUDA graphs: faster start, slower steps, more KV memory",
    )
    engine.add_argument(
        "--speculative-config",
        dest="speculative_config",
        type=_speculative_config,
        metavar="JSON",
        help='speculative decoding, e.g. \'{"method": "ngram", "num_speculative_tokens": 3}\'; '
        "the simulator-only key draft_acceptance_rate (default 0.7) says how often a draft is "
        "right",
    )
    engine.add_argument(
        "--chat-template",
        dest="chat_template",
        action=argparse.BooleanOptionalAction,
        help="whether the tokenizer has a chat template (default yes)",
    )
    engine.add_argument(
        "--completions-api",
        dest="completions_api",
        action=argparse.BooleanOptionalAction,
        help="serve /v1/completions (default yes); --no-completions-api: a chat-only service, "
        "whose /v1/completions answers 404",
    )
    engine.add_argument(
        "--interconnect", choices=["nvlink", "pcie"], help="GPU link for TP all-reduce"
    )
    engine.add_argument(
        "--x-accel-buffering-no",
        dest="x_accel_buffering_no",
        action="store_const",
        const=True,
        help="send 'X-Accel-Buffering: no' on streams (tells nginx not to buffer)",
    )
    engine.add_argument(
        "--metrics-generation",
        choices=["v1", "v0"],
        help="metric names: v1 (current) or v0 (gpu_cache_usage_perc, ...)",
    )
    engine.add_argument("--disable-log-stats", dest="disable_log_stats", action="store_const", const=True,
                        help="no vllm:* metrics and no stats line (as vLLM 0.34)")  # fmt: skip
    engine.add_argument("--load-format", dest="load_format",
                        help="accepted and logged as vLLM does (the simulator loads nothing)")  # fmt: skip
    parser.set_defaults(handler=run)


ENGINE_DESTS = (
    *(dest for _, dest, _, _ in VALUE_FLAGS),
    "enable_chunked_prefill", "enable_prefix_caching", "enforce_eager", "chat_template",
    "completions_api", "interconnect", "x_accel_buffering_no", "metrics_generation", "disable_log_stats", "model",
    "served_model_name", "load_format", "device", "speculative_config",
)  # fmt: skip


# Knobs of the simulation itself (hardware, framing, env vars): a real `vllm serve` has no such
# argument, so they stay out of the logged `non-default args`.
NOT_VLLM_ARGS = frozenset({"gpu_memory_gib", "nodes", "interconnect", "x_accel_buffering_no",
                           "metrics_generation", "log_stats_interval_s", "chat_template", "device",
                           "completions_api",
                           "cpu_kvcache_space_gib", "kv_bytes_per_token",
                           "gpu_memory_bandwidth_gbps", "weights_gib"})  # fmt: skip
# vLLM's names for the simulator's destinations, where they differ.
VLLM_ARG_NAMES = {"num_gpu_blocks": "num_gpu_blocks_override"}
# The order in which vLLM 0.32 lists its non-default args (its parser's order).
VLLM_ARG_ORDER = (
    "host", "port", "api_key", "model", "max_model_len", "enforce_eager", "served_model_name",
    "load_format", "tensor_parallel_size", "pipeline_parallel_size", "block_size",
    "gpu_memory_utilization", "num_gpu_blocks_override", "kv_cache_tokens",
    "enable_prefix_caching", "max_num_batched_tokens", "max_num_seqs", "enable_chunked_prefill",
    "speculative_config", "disable_log_stats",
    "sse_keep_alive_interval", "api_server_count",
)  # fmt: skip


def _speculative_config(text: str) -> Any:
    """argparse type: vLLM's JSON, checked as the simulator's SpeculativeConfig."""
    from wizard.errors import ConfigError
    from wizard.sim.config import parse_speculative_config

    try:
        parsed = parse_speculative_config(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--speculative-config: ")) from None
    # argparse's None is "not given": null (no speculation) is kept as False until run() reads it.
    return False if parsed is None else parsed


def logged_args(
    config: Any, preset: dict[str, Any], overrides: dict[str, Any], api_key: str | None,
    host: str, port: int,
) -> dict[str, object]:  # fmt: skip
    """The ``non-default args`` a real ``vllm serve`` would log for this simulator's flags."""
    named = {
        VLLM_ARG_NAMES.get(key, key): value
        for key, value in {"model": config.model, **preset, **overrides}.items()
        if key not in NOT_VLLM_ARGS
    }
    if "served_model_name" in named:
        named["served_model_name"] = [named["served_model_name"]]
    if "speculative_config" in named and named["speculative_config"] is None:
        del named["speculative_config"]  # null: vLLM's default, not a non-default arg
    spec = named.get("speculative_config")
    if spec is not None:  # as typed: vLLM's keys only (the acceptance rate is the simulator's)
        typed = {"method": spec.method, "num_speculative_tokens": spec.num_speculative_tokens}
        named["speculative_config"] = {**({"model": spec.model} if spec.model else {}), **typed}
    if config.device != "cpu":  # as before: model first, the key last
        if api_key:
            named["api_key"] = api_key  # logged as [REDACTED]
        return named
    # 0.32 lists host and port first and the key right after them (logged as ***).
    named = {"host": host, "port": port, **named}
    if api_key:
        named["api_key"] = api_key
    rank = {key: index for index, key in enumerate(VLLM_ARG_ORDER)}
    return dict(sorted(named.items(), key=lambda item: rank.get(item[0], len(rank))))


def run(args: argparse.Namespace) -> int:
    """Serve until interrupted, or list scenarios."""
    from wizard.sim.config import SimConfig
    from wizard.sim.run import announce_listening, announce_ready, serve
    from wizard.sim.scenarios import SCENARIOS, get_scenario

    if args.list_scenarios:
        for scenario in SCENARIOS.values():
            print(f"{scenario.name}\n  {scenario.summary}\n  finds: {scenario.finds}\n")
        return 0
    scenario = get_scenario(args.scenario)
    overrides = {
        dest: getattr(args, dest) for dest in ENGINE_DESTS if getattr(args, dest) is not None
    }
    if overrides.get("speculative_config") is False:
        overrides["speculative_config"] = None
    config = scenario.apply(SimConfig()).replace(**overrides)
    api_key = args.api_key or os.environ.get("VLLM_API_KEY")
    if scenario.name == "auth-required" and not api_key:
        api_key = DEMO_API_KEY
        print(f"latency-wizard sim: no key given; using the public demo key '{DEMO_API_KEY}' "
              "(set VLLM_API_KEY to choose one)", file=sys.stderr)  # fmt: skip
    # What a user would have typed on `vllm serve` for this scenario, plus the explicit flags.
    preset = {key: value for key, value in scenario.changes.items() if key in ENGINE_DESTS}
    non_default = logged_args(config, preset, overrides, api_key, args.host, args.port)
    if args.host_evidence:
        from wizard.sim import host_evidence

        try:
            host_evidence.write(
                Path(args.host_evidence), config, args.host_cores, args.host_visible_devices
            )
        except OSError as exc:
            from wizard.errors import UsageError

            raise UsageError(
                f"cannot write host evidence to {args.host_evidence}: {exc.strerror}"
            ) from None
    streams: list[Any] = [] if args.quiet else [sys.stderr]
    log_file = None
    if args.log_file:
        try:
            # Stays open as long as the server runs; closed below.
            log_file = Path(args.log_file).open("a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            from wizard.errors import UsageError

            raise UsageError(f"cannot open log file {args.log_file}: {exc.strerror}") from None
        streams.append(log_file)
    try:
        return serve(
            config, host=args.host, port=args.port, api_key=api_key, non_default_args=non_default,
            log_streams=streams, on_listening=announce_listening, on_ready=announce_ready, http=args.http,
        )  # fmt: skip
    finally:
        if log_file is not None:
            log_file.close()
