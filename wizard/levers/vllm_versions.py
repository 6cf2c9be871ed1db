"""What changed between vLLM releases where a proposed change depends on it (facts/vllm.md).

The procedure was written from the docs of its day (P7.5); a change the wizard proposes must be
valid for the release the server actually runs. That release comes from the server's own
``/version``, else from its log (the banner or the engine config line).
"""

from __future__ import annotations

import re
from typing import Any

from wizard.playbook import conditions

Release = tuple[int, int, int]
RELEASE = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")

# Flags whose existence depends on the release: flag -> (first release with it, first release
# without it, the source). None is "no bound known": only what the fact sheet shows is claimed.
FLAG_RELEASES: dict[str, tuple[Release | None, Release | None, str]] = {
    "--swap-space": (None, (0, 18, 0), "it left EngineArgs in v0.18.0 (vLLM PR #36216)"),
    "--disable-log-requests": (None, (0, 34, 0), "it is gone by 0.34 (--enable-log-requests)"),
    "--speculative-config": ((0, 8, 0), None, "the JSON came with vLLM PR #14434 in v0.8.0"),
    # Removed by vLLM PR #15466 (merged 2025-03-31, after 0.8.2): gone at the latest by 0.9.0.
    "--speculative-model": (None, (0, 9, 0), "it left EngineArgs in vLLM PR #15466"),
    "--num-speculative-tokens": (None, (0, 9, 0), "it left EngineArgs in vLLM PR #15466"),
}
# Releases before this one take speculative decoding as separate flags (--speculative-model,
# --num-speculative-tokens, --ngram-prompt-lookup-max); from it on, as --speculative-config JSON.
SPECULATIVE_CONFIG_FROM: Release = (0, 8, 0)
# Since v0.21.0 vLLM estimates the CUDA graphs' memory while profiling, so the KV cache is sized
# with the graphs accounted for; before, graphs were captured after the KV cache was sized.
GRAPH_MEMORY_PROFILED_FROM: Release = (0, 21, 0)
# vLLM 0.34's CacheConfig: an unset --gpu-memory-utilization (cache_config_info reads "None")
# resolves to 1.0 with the extensible KV cache (the default on CUDA and ROCm), else to 0.92 (the
# old default was 0.9, a number the label shows as it is).
UNSET_GPU_MEMORY_UTILIZATION = {True: 1.0, False: 0.92}


def parse(text: Any) -> Release | None:
    """``"0.34.0"`` -> (0, 34, 0); ``"v0.9.2rc1"`` -> (0, 9, 2); anything else None."""
    match = RELEASE.match(str(text)) if text is not None else None
    if match is None:
        return None
    return int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)


def server_release(facts: dict[str, Any]) -> tuple[Release, str] | None:
    """The server's release and where it was read: its /version first, then its log."""
    for path in ("endpoints.version", "vllmlog.version"):
        found = conditions.lookup(facts, path)
        release = parse(found) if found is not conditions.MISSING else None
        if release is not None:
            return release, path
    return None


def _show(release: Release) -> str:
    return ".".join(map(str, release))


def missing_flags(apply: str, release: Release) -> list[str]:
    """Every flag in a change's ``apply`` text that ``release`` does not have, with why."""
    missing = []
    for flag in re.findall(r"--[a-z][a-z0-9-]*", apply):
        first, gone, source = FLAG_RELEASES.get(flag, (None, None, ""))
        if first is not None and release < first:
            missing.append(f"{flag} (from {_show(first)} on: {source})")
        elif gone is not None and release >= gone:
            missing.append(f"{flag} ({source})")
    return missing


def graph_memory_note(release: Release | None) -> str:
    """What turning CUDA graphs on costs in memory on this release."""
    if release is None:
        return "the graphs take some memory from the KV cache"
    if release >= GRAPH_MEMORY_PROFILED_FROM:
        return (f"vLLM {_show(release)} sizes the KV cache with the graphs' memory estimated, "
                "so the KV cache shrinks a little and the start cannot run out of memory capturing")  # fmt: skip
    return (f"vLLM {_show(release)} captures the graphs after sizing the KV cache: at a high "
            "--gpu-memory-utilization watch the start for an out-of-memory while capturing")  # fmt: skip


def speculation_apply(release: Release | None, kept: int | str) -> str:
    """How to start vLLM ``release`` with ``kept`` speculative tokens (0: speculation off; a
    text: what to read for the number).

    Unknown release: today's spelling (``--speculative-config``), which ``propose`` then checks
    against nothing; a known release before 0.8 gets the separate flags it takes.
    """
    if release is not None and release < SPECULATIVE_CONFIG_FROM:
        if kept == 0:
            return "start vLLM without --speculative-model and --num-speculative-tokens"
        return f"--num-speculative-tokens {kept} (--speculative-model as now)"
    if kept == 0:
        return "start vLLM without --speculative-config"
    return f'--speculative-config with "num_speculative_tokens": {kept} (method and model as now)'
