"""What one server start said (a run of a vLLM log), and how long it took to start.

The log's timestamps carry no year, so a start across midnight or New Year is read as such.
"""

from __future__ import annotations

import datetime
from dataclasses import asdict, dataclass, field
from typing import Any

from wizard.i18n.words import texts
from wizard.probes.readers.vllm_args import FIELDS as ARG_FIELDS
from wizard.probes.readers.vllm_engine import ENGINE_LINE

MAX_NOTES = 20


def seconds_between(began: str, ended: str) -> float | None:
    """Seconds from one ``mm-dd hh:mm:ss`` to a later one; None when the order is implausible.

    The stamps have no year: an end before the start means the year turned (12-31 -> 01-01). A
    clock that went backwards, or a span of more than a month, is not a start-up: None.
    """
    try:
        start = datetime.datetime.strptime(f"2000-{began}", "%Y-%m-%d %H:%M:%S")  # a leap year
        end = datetime.datetime.strptime(f"2000-{ended}", "%Y-%m-%d %H:%M:%S")
        if end < start:
            end = end.replace(year=2001)
    except ValueError:
        return None
    seconds = (end - start).total_seconds()
    return seconds if seconds <= 31 * 86400 else None


@dataclass
class Run:
    """What one server start said."""

    model: str | None = None
    engine: str | None = None
    engine_from: str | None = None  # what told the generation: its config line, version, a mark
    version: str | None = None  # the release its banner or engine config line names
    server_args_from: str | None = None  # a pasted command line, manifest or Namespace dump
    kv_cache_tokens: int | None = None
    max_concurrency: float | None = None
    max_concurrency_tokens_per_request: int | None = None
    num_gpu_blocks: int | None = None
    num_gpu_blocks_override: int | None = None
    block_size: int | None = None
    kv_cache_device: str | None = None
    kv_cache_memory_gib: float | None = None
    estimated_max_model_len: int | None = None
    # What a refusal's own message says (each None without that refusal): the model's limit
    # (its config.json), its attention heads, the KV cache a max_model_len request needs against
    # what the engine had, and the allocation PyTorch could not make (with what was free).
    derived_max_model_len: int | None = None
    num_attention_heads: int | None = None
    kv_needed_gib: float | None = None
    oom_requested_gib: float | None = None
    oom_free_gib: float | None = None
    # The weights' memory ("Model loading took X GiB") and the CUDA graphs' ("Graph capturing
    # finished in N secs, took X GiB"), per rank.
    model_memory_gib: float | None = None
    graph_memory_gib: float | None = None
    tensor_parallel_size: int | None = None
    pipeline_parallel_size: int | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    gpu_memory_utilization: float | None = None
    chunked_prefill: bool | None = None
    enforce_eager: bool | None = None
    api_server_count: int | None = None  # only when given (vLLM's default: data_parallel_size)
    # What the run's own `non-default args` line gave (these fields' names), None without one: the
    # configuration as typed, which a refused start logs before vLLM checks it.
    logged_args: dict[str, Any] | None = field(default=None, compare=False)
    preemptions_seen: bool = False
    preemption_mode: str | None = None
    stats: list[dict[str, Any]] = field(default_factory=list)
    stats_total: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    weights_load_s: float | None = None
    weights_load_ranks: int = 0
    model_load_s: float | None = None
    torch_compile_s: float | None = None
    graph_capture_s: float | None = None
    init_engine_s: float | None = None
    model_init_s: float | None = None
    warmup_s: float | None = None
    device_memory_gib: float | None = None
    started_at_line: int = 1
    # Generic lines (uvicorn's, timestamps) alone do not make a run: not compared by ``empty``.
    server_ready: bool = field(default=False, compare=False)
    ready_at_line: int | None = field(default=None, compare=False)
    first_timestamp: str | None = field(default=None, compare=False)
    ready_timestamp: str | None = field(default=None, compare=False)
    startup_span_s: float | None = field(default=None, compare=False)
    engine_strength: int = field(default=0, compare=False)
    starts: set[str] = field(default_factory=set, compare=False)  # the start-line kinds seen
    notes: list[str] = field(default_factory=list, compare=False)
    # The same notes in every language (``notes`` keeps the English).
    notes_texts: list[dict[str, str]] = field(default_factory=list, compare=False)

    def note(self, said: dict[str, str]) -> None:
        """Add a note; past MAX_NOTES only the count grows (a hostile log cannot grow it)."""
        if len(self.notes) == MAX_NOTES:
            said = texts("lognote.more")
        elif len(self.notes) > MAX_NOTES:
            return
        self.notes.append(said["en"])
        self.notes_texts.append(said)

    def set_engine(self, generation: str, strength: int, source: str) -> None:
        """Take ``generation`` unless a stronger source already said."""
        if strength > self.engine_strength:
            self.engine, self.engine_from, self.engine_strength = generation, source, strength

    @property
    def started(self) -> bool:
        """Whether this run holds more than start lines: its next start line is another run."""
        return (self.engine_strength == ENGINE_LINE or self.kv_cache_tokens is not None
                or bool(self.errors) or self.stats_total > 0)  # fmt: skip

    @property
    def startup_timings_s(self) -> float | None:
        """Loading plus engine initialisation (profile, KV cache, compile, graphs), when logged."""
        loading = self.model_load_s or self.weights_load_s or self.model_init_s
        init = self.init_engine_s or (
            ((self.torch_compile_s or 0.0) + (self.graph_capture_s or 0.0) + (self.warmup_s or 0.0))
            or None
        )
        if loading is None and init is None:
            return None
        return round((loading or 0.0) + (init or 0.0), 2)

    @property
    def startup_s(self) -> float | None:
        """First timestamped line to the ready line, else the sum of the logged timings.

        Both undercount the true start (imports come before the first line), so the longer wins
        when both are known: a log whose ready line comes before its loading lines still counts.
        """
        timings = self.startup_timings_s
        if self.startup_span_s is None:
            return timings
        return round(max(self.startup_span_s, timings or 0.0), 2)

    @property
    def startup_from(self) -> str | None:
        """Where ``startup_s`` came from: ``timestamps`` or ``timings``."""
        if self.startup_span_s is not None and self.startup_span_s >= (
            self.startup_timings_s or 0.0
        ):
            return "timestamps"
        return "timings" if self.startup_timings_s is not None else None

    @property
    def empty(self) -> bool:
        """True when nothing of this run was recognised."""
        return self == Run(started_at_line=self.started_at_line)


# What a pasted command can say (the Run field names vllm_args fills).
FIELDS_FROM_ARGS = tuple(ARG_FIELDS)


def only_args(run: Run) -> bool:
    """Whether all ``run`` holds is what a pasted command said (no line of a log)."""
    return run == Run(started_at_line=run.started_at_line, server_args_from=run.server_args_from,
                      **{name: getattr(run, name) for name in FIELDS_FROM_ARGS})  # fmt: skip


def as_dict(run: Run) -> dict[str, Any]:
    data = asdict(run)
    for internal in ("engine_strength", "starts"):
        del data[internal]
    return {**data, "startup_s": run.startup_s, "startup_from": run.startup_from,
            "startup_timings_s": run.startup_timings_s}  # fmt: skip
