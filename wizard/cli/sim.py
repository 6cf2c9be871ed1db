"""``latency-wizard sim``: serve the built-in vLLM behaviour simulator."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words

DEMO_API_KEY = "demo-key"

# (flag, dest, type) for the engine knobs that take a value; None means "vLLM's default". Each
# one's help is ``sim.DEST`` in wizard.i18n.words_cli.
VALUE_FLAGS: tuple[tuple[tuple[str, ...], str, type], ...] = (
    (("--max-num-batched-tokens",), "max_num_batched_tokens", int),
    (("--max-num-seqs",), "max_num_seqs", int),
    (("--max-model-len",), "max_model_len", int),
    (("--num-gpu-blocks-override", "--num-gpu-blocks"), "num_gpu_blocks", int),
    (("--kv-cache-tokens",), "kv_cache_tokens", int),
    (("--block-size",), "block_size", int),
    (("--tensor-parallel-size", "-tp"), "tensor_parallel_size", int),
    (("--pipeline-parallel-size", "-pp"), "pipeline_parallel_size", int),
    (("--gpu-memory-utilization",), "gpu_memory_utilization", float),
    (("--sse-keep-alive-interval",), "sse_keep_alive_interval", float),
    (("--gpu-memory-gib",), "gpu_memory_gib", float),
    (("--gpu-memory-bandwidth",), "gpu_memory_bandwidth_gbps", float),
    (("--nodes",), "nodes", int),
    (("--kv-bytes-per-token",), "kv_bytes_per_token", int),
    (("--num-attention-heads",), "num_attention_heads", int),
    (("--max-position-embeddings",), "max_position_embeddings", int),
    (("--die-after-requests",), "die_after_requests", int),
    (("--cpu-kvcache-space",), "cpu_kvcache_space_gib", float),
    (("--api-server-count",), "api_server_count", int),
    (("--log-stats-interval",), "log_stats_interval_s", float),
    (("--step-drift",), "step_drift", float),
)  # fmt: skip


def register(subparsers: Any, words: Words) -> None:
    """Add the ``sim`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "sim", help=words("sim.help"), description=words("sim.description"),
        epilog=words("sim.epilog"), raw_description=True,
    )  # fmt: skip
    parser.add_argument("--host", default="127.0.0.1", help=words("sim.host"))
    parser.add_argument("--port", type=int, default=8000, help=words("sim.port"))
    parser.add_argument("--scenario", default="healthy", help=words("sim.scenario"))
    parser.add_argument("--list-scenarios", action="store_true", help=words("sim.list_scenarios"))
    parser.add_argument("--model", help=words("sim.model"))
    parser.add_argument("--served-model-name", dest="served_model_name",
                        help=words("sim.served_model_name"))  # fmt: skip
    parser.add_argument("--api-key", help=words("sim.api_key"))
    parser.add_argument("--log-file", help=words("sim.log_file"))
    parser.add_argument("--quiet", action="store_true", help=words("sim.quiet"))
    parser.add_argument("--host-evidence", metavar="DIR", help=words("sim.host_evidence"))
    parser.add_argument("--host-cores", type=int, default=32, metavar="N",
                        help=words("sim.host_cores"))  # fmt: skip
    parser.add_argument("--host-visible-devices", metavar="IDS",
                        help=words("sim.host_visible_devices"))  # fmt: skip
    parser.add_argument("--http", choices=["auto", "httptools", "h11"], default="auto",
                        help=words("sim.http"))  # fmt: skip
    parser.add_argument("--device", choices=["cuda", "cpu"], help=words("sim.device"))
    engine = parser.add_argument_group(words("sim.engine"))
    for flags, dest, kind in VALUE_FLAGS:
        engine.add_argument(*flags, dest=dest, type=kind, help=words(f"sim.{dest}"))
    for flag in ("--enable-chunked-prefill", "--enable-prefix-caching", "--enforce-eager"):
        dest = flag[2:].replace("-", "_")
        engine.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction,
                            help=words(f"sim.{dest}"))  # fmt: skip
    engine.add_argument("--speculative-config", dest="speculative_config", type=_speculative_config,
                        metavar="JSON", help=words("sim.speculative_config"))  # fmt: skip
    for flag in ("--chat-template", "--completions-api"):
        dest = flag[2:].replace("-", "_")
        engine.add_argument(flag, dest=dest, action=argparse.BooleanOptionalAction,
                            help=words(f"sim.{dest}"))  # fmt: skip
    engine.add_argument(
        "--interconnect", choices=["nvlink", "pcie"], help=words("sim.interconnect")
    )
    engine.add_argument("--x-accel-buffering-no", dest="x_accel_buffering_no",
                        action="store_const", const=True, help=words("sim.x_accel_buffering_no"))  # fmt: skip
    engine.add_argument("--metrics-generation", choices=["v1", "v0"],
                        help=words("sim.metrics_generation"))  # fmt: skip
    engine.add_argument("--disable-log-stats", dest="disable_log_stats", action="store_const",
                        const=True, help=words("sim.disable_log_stats"))  # fmt: skip
    engine.add_argument("--load-format", dest="load_format", help=words("sim.load_format"))
    parser.set_defaults(handler=run)


ENGINE_DESTS = (
    *(dest for _, dest, _ in VALUE_FLAGS),
    "enable_chunked_prefill", "enable_prefix_caching", "enforce_eager", "chat_template",
    "completions_api", "interconnect", "x_accel_buffering_no", "metrics_generation", "disable_log_stats", "model",
    "served_model_name", "load_format", "device", "speculative_config",
)  # fmt: skip


# Knobs of the simulation itself (hardware, framing, env vars): a real `vllm serve` has no such
# argument, so they stay out of the logged `non-default args`.
NOT_VLLM_ARGS = frozenset({"gpu_memory_gib", "nodes", "interconnect", "x_accel_buffering_no", "step_drift",
                           "metrics_generation", "log_stats_interval_s", "chat_template", "device",
                           "completions_api",
                           "cpu_kvcache_space_gib", "kv_bytes_per_token",
                           "num_attention_heads", "max_position_embeddings",
                           "die_after_requests",
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
    from wizard.errors import require_extra

    require_extra("sim", "latency-wizard sim")  # before the simulator's imports need it
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
        from wizard.cli.inputs import language
        from wizard.i18n.words import say

        print(say("note.sim_demo_key", language(), demo_key=DEMO_API_KEY), file=sys.stderr)
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

            raise UsageError.os_said(
                "error.cannot_write_host_evidence", exc, path=args.host_evidence
            ) from None
    streams: list[Any] = [] if args.quiet else [sys.stderr]
    log_file = None
    if args.log_file:
        try:
            # Stays open as long as the server runs; closed below.
            log_file = Path(args.log_file).open("a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            from wizard.errors import UsageError

            raise UsageError.os_said("error.cannot_open_log", exc, path=args.log_file) from None
        streams.append(log_file)
    try:
        return serve(
            config, host=args.host, port=args.port, api_key=api_key, non_default_args=non_default,
            log_streams=streams, on_listening=announce_listening, on_ready=announce_ready, http=args.http,
        )  # fmt: skip
    finally:
        if log_file is not None:
            log_file.close()
