"""vLLM start-up and runtime logs of every era, read line by line in bounded memory.

Matching ignores the line prefix, so bare messages, ``INFO mm-dd hh:mm:ss file.py:N]`` (2024),
``(APIServer pid=...)`` / ``(Worker_TP1 pid=...)`` / ``(VllmWorker rank=1 pid=...)``, Ray's nested
prefixes and custom formats all read the same. Lines glued together are split where a second log
prefix starts; markdown fences and anything unrecognised are skipped. Several runs in one file are
told apart by their start-up lines (a pasted command line or manifest starts one too); the last run
is reported, the first and last are listed under ``runs``. A command pasted after the last run's log
is read as that run's command. The engine generation comes from every era's marks (``vllm_engine``),
arguments also from pasted command lines, manifests and ``Namespace(...)`` dumps (``vllm_args``),
the stats lines of every era from ``vllm_stats``. What is skipped or cannot be read is a line in
``notes``.

Start-up is timed from the run's first timestamped line to its ready line (``Starting vLLM server
on``, older ``Starting vLLM API server 0 on`` / ``Uvicorn running on`` / ``Application startup
complete``); the timestamps carry no year, so a start across midnight or New Year is read as such.
Without timestamps, or without a ready line, the logged timings are summed instead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from typing import Any, TextIO

from wizard.i18n.words import LANGS, say, texts, value_word
from wizard.levers.vllm_defaults import configured_max_num_seqs
from wizard.numbers import MAX_DIGITS, parse_float, parse_int
from wizard.probes.readers import vllm_stats
from wizard.probes.readers.log_lines import BLOCK_CHARS, MAX_LINE_CHARS, line_blocks
from wizard.probes.readers.vllm_args import (
    MANIFEST_FIRST,
    ArgsCollector,
    ServerArgs,
    read_namespace,
)
from wizard.probes.readers.vllm_engine import (
    ENGINE_LINE,
    MARK,
    MARKS,
    VERSION,
    code_mark,
    version_mark,
    version_text,
)
from wizard.probes.readers.vllm_run import (
    FIELDS_FROM_ARGS,
    MAX_NOTES,
    Run,
    as_dict,
    only_args,
    seconds_between,
)

MAX_STATS_PER_RUN = 1000
GLUE = re.compile(
    r"(?<=\S)(?=(?:\([\w\-]+(?: rank=\d+)? pid=\d+\) )?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d)"
)
LEVEL_WORDS = ("INFO ", "WARNING ", "ERROR ", "DEBUG ", "CRITICAL ")
PID_PREFIX_BEFORE = re.compile(r"\([\w\-]+(?: rank=\d+)? pid=\d+\) ")
NUM = r"([\d,]+(?:\.\d+)?)"
# vLLM's own line format: "INFO mm-dd hh:mm:ss" (no year); looked for near the start of a line.
TIMESTAMP = re.compile(r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) (\d\d-\d\d \d\d:\d\d:\d\d)\b")
TIMESTAMP_WITHIN = 200
READY = re.compile(
    r"Starting vLLM (?:API )?server(?: \d+)? on |Uvicorn running on |Application startup complete"
)
WARMUP_BEGIN, WARMUP_END = "Warming up model for the compilation", "Warming up done."
ERRORS = (
    ("oom", re.compile(r"CUDA out of memory|OutOfMemoryError")),
    ("max_seq_len_exceeds_kv_cache", re.compile(
        r"larger than the maximum number of tokens that can be stored in KV cache"
        r"|To serve at least one request with the models?'s? max seq len")),
    ("no_kv_cache_memory", re.compile(r"No available memory for the cache blocks")),
    ("chat_template_missing", re.compile(r"default chat template is no longer allowed")),
    ("batched_tokens_below_max_model_len", re.compile(r"max_num_batched_tokens \(\d+\) is smaller than max_model_len")),
    # vLLM's SchedulerConfig check (config/scheduler.py, verify_max_model_len): both set by hand.
    ("batched_tokens_below_max_num_seqs", re.compile(
        r"max_num_batched_tokens \(\d+\) must be greater than or equal to max_num_seqs")),
    # ModelConfig (config/model.py): --max-model-len above what the model's config.json allows.
    # The refusal says how to allow it; with VLLM_ALLOW_LONG_MAX_MODEL_LEN set the same sentence
    # is a warning and the server starts.
    ("max_model_len_exceeds_model", re.compile(
        r"User-specified max_model_len \(\d+\) is greater than the derived max_model_len"
        r".*To allow overriding this maximum")),
    ("tp_heads_indivisible", re.compile(r"must be divisible by tensor parallel size")),
    ("engine_init_failed", re.compile(r"Engine core initialization failed|EngineCore failed to start")),
    # The engine core died while serving (0.32's core.py, exceptions.py and core_client.py; 2025's
    # "Engine core proc EngineCore_0 died unexpectedly, shutting down client.").
    ("engine_dead", re.compile(
        r"EngineCore encountered (?:a fatal error|an issue)|EngineDeadError"
        r"|engine core exited unexpectedly|Engine core proc \S+ died unexpectedly")),
)  # fmt: skip
# Start-up timings: (field, pattern); ranks log their own line and the slowest rank is kept.
TIMINGS = (
    ("weights_load_s", re.compile(r"Loading weights took ([\d.]+) s(?:ec|econds)?\b")),
    ("model_load_s", re.compile(r"Model loading took [\d.]+ ?Gi?B(?: memory)? and ([\d.]+) s")),
    ("torch_compile_s", re.compile(r"torch\.compile (?:took|takes) ([\d.]+) s in total")),
    ("graph_capture_s", re.compile(r"Graph capturing finished in ([\d.]+) secs?")),
    ("model_init_s", re.compile(r"Initializing model took ([\d.]+) s(?:ec|econds)?\b")),  # CPU
    (
        "init_engine_s",
        re.compile(r"init engine \(profile, create kv cache, warmup model\) took ([\d.]+) s"),
    ),
)
DEVICE_MEMORY = re.compile(
    r"Free memory on device[^(]*\([\d.]+/(?P<free_total>[\d.]+) GiB\)"
    r"|has a total capacity of (?P<capacity>[\d.]+) GiB"
)
SERVED_MODEL = re.compile(
    r"serving model ([^\s\"',}]+)|LLM engine(?: \(v[^)]*\))? with config: model='([^']+)'"
)
# A run's start lines, by kind: a second line of a kind already seen is the next run's start.
RUN_START = re.compile(
    r"(?P<args>non-default args: )|(?P<version>vLLM (?:API )?server version )|(?P<namespace>args: Namespace\()"
)
ENGINE_INIT = re.compile(
    # 2023 (vLLM 0.2) printed no version: "Initializing an LLM engine with config: ..."; 0.8-0.10
    # named the generation ("a V0 LLM engine", "a V1 LLM engine").
    r"Initializing an? (?:(?P<gen>V[01]) )?LLM engine(?: \(v[^)]*\))? with config: (?P<config>.*)"
)
# The engine config line's keys (V0 lines of 2024 wrote "chunked_prefill_enabled=").
CONFIG_KEYS = {"tensor_parallel_size": int, "pipeline_parallel_size": int, "max_seq_len": int,
               "max_model_len": int, "enforce_eager": bool, "enable_chunked_prefill": bool,
               "chunked_prefill_enabled": bool, "block_size": int, "max_num_seqs": int,
               "max_num_batched_tokens": int, "gpu_memory_utilization": float}  # fmt: skip
CONFIG_NAMES = {"max_seq_len": "max_model_len", "enable_chunked_prefill": "chunked_prefill",
                "chunked_prefill_enabled": "chunked_prefill"}  # fmt: skip
ARG_KEYS = ("model", "max_model_len", "max_num_batched_tokens", "max_num_seqs", "gpu_memory_utilization",
            "tensor_parallel_size", "pipeline_parallel_size", "enforce_eager", "enable_chunked_prefill",
            "num_gpu_blocks_override", "block_size", "api_server_count")  # fmt: skip
# "GPU KV cache size" (0.32 on CPU: "CPU ..."; "GPU + host ..." with a host tier).
KV_SIZE = re.compile(rf"(?:\b(?P<device>[A-Z][A-Z0-9]*)(?: \+ host)? )?KV cache size: {NUM} tokens")
# The KV cache's memory: 0.34 on GPU "Available KV cache memory: 12.5 GiB"; 0.32's CPU build
# "Explicitly set (1.0/7.59) GiB for KV cache on node 0." (the space given / the node's free memory).
KV_MEMORY = re.compile(
    r"Available KV cache memory: (-?[\d.]+) GiB|Explicitly set \(([\d.]+)/[\d.]+\) GiB for KV cache"
)
# The weights' memory (0.34 "Model loading took 15.0 GiB memory and 2.1 seconds"; older V1
# "Model loading took 15.0102 GiB and 2.1 seconds"; V0 "... took 14.99 GB").
MODEL_MEMORY = re.compile(r"Model loading took ([\d.]+) ?(Gi?B)")
GRAPH_MEMORY = re.compile(r"Graph capturing finished in [\d.]+ secs?, took ([\d.]+) GiB")
# CUDA-graph capture begins: V1's tqdm description ("Capturing CUDA graphs (mixed prefill-decode,
# PIECEWISE)"), V0's "Capturing cudagraphs for decoding" and "Capturing the model for CUDA graphs".
GRAPH_CAPTURE = re.compile(r"Capturing (?:CUDA graphs|cudagraphs|the model for CUDA graphs)")
BLOCKS_OVERRIDE = re.compile(r"Overriding num_gpu_blocks=\d+ with num_gpu_blocks_override=(\d+)")


def _number(text: str) -> float | None:
    return parse_float(text.replace(",", ""))


def _count(text: str) -> int | None:
    """A count such as ``1,234,567`` (tokens) or ``12.5`` read as 12; None when out of range."""
    number = _number(text)
    return int(number) if number is not None and number < 10**MAX_DIGITS else None


def _stamp(line: str) -> str | None:
    """The line's ``mm-dd hh:mm:ss``, when it has vLLM's prefix."""
    match = TIMESTAMP.search(line, 0, TIMESTAMP_WITHIN)
    return match.group(1) if match is not None else None


def _literal_dict(text: str) -> dict[str, Any] | None:
    """The Python dict at the start of ``text``; a wrapper (JSON quotes, braces) may follow it."""
    end = len(text)
    for _ in range(3):  # the dict ends at one of the last few closing braces
        end = text.rfind("}", 0, end)
        if end < 0:
            return None
        try:
            value = ast.literal_eval(text[: end + 1].strip())
        except (ValueError, SyntaxError):
            continue
        return value if isinstance(value, dict) else None
    return None


def _apply_args(run: Run, text: str, line_number: int) -> None:
    args = _literal_dict(text)
    if args is None:
        run.note(texts("lognote.args_unread", line=line_number))
        return
    run.logged_args = {}
    for key in ARG_KEYS:
        if key in args and _plausible(key, value := args[key]):
            name = {"enable_chunked_prefill": "chunked_prefill"}.get(key, key)
            setattr(run, name, value)
            run.logged_args[name] = value


def _plausible(key: str, value: Any) -> bool:
    """An argument of the type vLLM gives it (an edited log may say anything)."""
    if key == "model":
        return isinstance(value, str)
    if key in ("enforce_eager", "enable_chunked_prefill"):
        return isinstance(value, bool)
    if key == "gpu_memory_utilization":
        return isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 1
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 10**MAX_DIGITS


def _apply_config(run: Run, config: str) -> None:
    for key, kind in CONFIG_KEYS.items():
        match = re.search(rf"\b{key}=([\w.]+)", config)
        if match is None:
            continue
        raw = match.group(1)
        value: Any
        if kind is bool:
            value = {"True": True, "False": False}.get(raw)
        elif kind is float:
            value = parse_float(raw)
            value = value if value is not None and 0 < value <= 1 else None
        else:
            value = parse_int(raw)
        if value is None:
            continue
        name = CONFIG_NAMES.get(key, key)
        if getattr(run, name) is None:
            setattr(run, name, value)


ESTIMATED_LEN = re.compile(r"estimated maximum model length is (\d+)")
BUDGET_ERROR = re.compile(
    r"max_num_batched_tokens \((\d+)\) is smaller than max_model_len \((\d+)\)"
)
SEQS_ERROR = re.compile(
    r"max_num_batched_tokens \((\d+)\) must be greater than or equal to max_num_seqs \((\d+)\)"
)
MODEL_LEN_ERROR = re.compile(
    r"User-specified max_model_len \((\d+)\) is greater than the derived max_model_len "
    r"\(\w+=(\d+)(?:\.0)?\b"
)
HEADS_ERROR = re.compile(
    r"attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"
)
SEQ_LEN_ERROR = re.compile(r"max seq len \((\d+)\)")
KV_NEEDED = re.compile(r"\(([\d.]+) GiB KV cache is needed, which is larger than the available KV "
                       r"cache memory \((-?[\d.]+) GiB\)")  # fmt: skip
# PyTorch's CUDA OOM: what it tried to allocate, and what the device had free (GiB or MiB).
OOM_SIZES = re.compile(
    r"Tried to allocate ([\d.]+) (GiB|MiB)\b.*? of which ([\d.]+) (GiB|MiB) is free"
)


def _gib(number: str, unit: str) -> float | None:
    value = parse_float(number)
    return None if value is None else value / 1024 if unit == "MiB" else value


def _numbers_from_error(run: Run, line: str) -> None:
    # A server that fails its config checks logs no config lines; the message carries the numbers.
    if (match := BUDGET_ERROR.search(line)) is not None:
        run.max_num_batched_tokens = run.max_num_batched_tokens or parse_int(match.group(1))
        run.max_model_len = run.max_model_len or parse_int(match.group(2))
    elif (match := SEQS_ERROR.search(line)) is not None:
        run.max_num_batched_tokens = run.max_num_batched_tokens or parse_int(match.group(1))
        run.max_num_seqs = run.max_num_seqs or parse_int(match.group(2))
    elif (match := MODEL_LEN_ERROR.search(line)) is not None:
        run.max_model_len = parse_int(match.group(1))
        run.derived_max_model_len = parse_int(match.group(2))
    elif (match := HEADS_ERROR.search(line)) is not None:
        run.num_attention_heads = parse_int(match.group(1))
        run.tensor_parallel_size = parse_int(match.group(2))
    elif (match := SEQ_LEN_ERROR.search(line)) is not None:
        run.max_model_len = run.max_model_len or parse_int(match.group(1))
        if (estimated := ESTIMATED_LEN.search(line)) is not None:
            run.estimated_max_model_len = parse_int(estimated.group(1))
        if (kv := KV_NEEDED.search(line)) is not None:
            run.kv_needed_gib = parse_float(kv.group(1))
            run.kv_cache_memory_gib = parse_float(kv.group(2))
    elif (match := OOM_SIZES.search(line)) is not None:
        run.oom_requested_gib = _gib(match.group(1), match.group(2))
        run.oom_free_gib = _gib(match.group(3), match.group(4))


# Every pattern above needs one of these substrings; other lines (request logs, access logs,
# tracebacks' code lines) are skipped with one search instead of twenty.
NEEDLES = (
    "non-default args: ", "server version ", "LLM engine", "serving model", "Using max model len",
    "Chunked prefill is enabled", "KV cache size: ", "Maximum concurrency for", "blocks: ",
    "is preempted by", "took", "takes", "finished in", "Free memory on device", "total capacity of",
    "out of memory", "OutOfMemoryError", "KV cache", "max seq len", "chat template",
    "is smaller than max_model_len", "must be divisible by", "Engine core initialization failed",
    "EngineCore failed to start", "cache blocks", "EngineCore encountered", "num_gpu_blocks_override",
    "EngineDeadError", "exited unexpectedly", "died unexpectedly",
    "Warming up", "Starting vLLM", "Uvicorn running on", "Application startup complete",
    "must be greater than or equal to max_num_seqs", "User-specified max_model_len", "Capturing",
)  # fmt: skip
# Two rare start lines ("args: Namespace(", 0.32's banner "█ version") are looked for with
# substring tests instead: in the alternation they slowed every line by a fifth.
INTERESTING = re.compile("|".join(re.escape(needle) for needle in NEEDLES))
STATS_NEEDLE = vllm_stats.NEEDLE
# Characters of log text, the most frequent first (a generated 0.34 log and the real fixtures).
_COMMON = " er0t:1noips.ag2cludm/vP3OI,h-T_A\n=NS4F9y()7\"'k][856qRbKEfH^GWUwVC%MxzD`L"


def _from_rarest(needle: str) -> tuple[str, str]:
    """(the needle's rarest character, a regex for the needle that starts with it): the regex
    engine tries an alternation only where a branch's first character stands, so branches that
    start with rare characters make a scan cheap; a look-behind checks what comes before it."""

    def commonness(at: int) -> int:
        return _COMMON.find(needle[at]) if needle[at] in _COMMON else len(_COMMON)

    at = max(range(len(needle)), key=commonness)
    before = f"(?<={re.escape(needle[: at + 1])})" if at else ""
    return needle[at], before + re.escape(needle[at + 1 :])


def _scanner(needles: Iterable[str]) -> re.Pattern[str]:
    """One regex for: any of ``needles`` (each from its rarest character), a place where
    ``GLUE`` could split (a level word, or the "(name pid=N) " group before one, right after a
    non-space; a literal first, as a leading look-behind is tried at every position), and the
    start of a line ``ArgsCollector.wants`` (searched from the newline before it: a manifest's
    key starts its line after one of MANIFEST_FIRST)."""
    by_first: dict[str, list[str]] = {}
    for first, rest in sorted({_from_rarest(needle) for needle in needles}):
        by_first.setdefault(first, []).append(rest)
    stamp = r" \d\d-\d\d \d\d:\d\d:\d\d"
    levels = ("INFO", "WARNING", "ERROR", "DEBUG", "CRITICAL")
    return re.compile("|".join([
        *(f"{re.escape(first)}(?:{'|'.join(rests)})" for first, rests in by_first.items()),
        *(f"{level}(?<=\\S{level}){stamp}" for level in levels),
        rf"\((?<=\S\()[\w\-]+(?: rank=\d+)? pid=\d+\) (?:{'|'.join(levels)}){stamp}",
        rf"\n[{re.escape(MANIFEST_FIRST)}][^\n]*?(?:args:|command:|image:)",
    ]))  # fmt: skip


# What a line needs for ``_line`` to do anything once its run is steady (``LogReader.steady``):
# the needles, the two rare start lines, the stats line, "vllm" (``ArgsCollector.wants``), and
# while the run's engine is unknown the marks of its code. A block of a long log is scanned for
# them at C speed and only the lines they are on are read.
_STEADY_NEEDLES = (*NEEDLES, "Namespace(", "█", STATS_NEEDLE, "vllm")
SCAN = _scanner(_STEADY_NEEDLES)
SCAN_ENGINE_UNKNOWN = _scanner((*_STEADY_NEEDLES, *(mark[0] for mark in MARKS)))


def _may_be_glued(line: str) -> bool:
    """Whether ``GLUE`` could split ``line``: a level word whose prefix follows a non-space.

    ``GLUE.split`` on every line was 75 % of the parse time while splitting 1 line in 5,000; a
    few substring searches rule out nearly every line first.
    """
    for word in LEVEL_WORDS:
        at = line.find(word)
        while at >= 0:
            start = at
            if at > 1 and line[at - 2 : at] == ") ":
                # The level may follow its "(name pid=N) " group: the group is what would be
                # glued. The usual line starts with it (no search needed).
                opening = line.rfind("(", 0, at)
                if opening > 0 and PID_PREFIX_BEFORE.fullmatch(line, opening, at):
                    start = opening
                elif opening == 0:
                    start = 0
            if start and not line[start - 1].isspace():
                return True
            at = line.find(word, at + 1)
    return False


class LogReader:
    """Feed lines; read the runs.

    A log of many restarts keeps the first run, the last two (the last may stay empty) and a count
    of the rest: memory and output stay flat however often the server restarted.
    """

    def __init__(self) -> None:
        self.runs: list[Run] = [Run()]
        self.runs_total = 1
        self.line_number = 0
        self._last_stamp: str | None = None  # the current run's latest, while it starts
        self._warmup_began: str | None = None
        self._capturing = False  # between the run's CUDA-graph capture and its end
        self._args = ArgsCollector()

    @property
    def run(self) -> Run:
        return self.runs[-1]

    def feed(self, raw_line: str) -> None:
        """One physical line (possibly several log lines glued together); one longer than
        MAX_LINE_CHARS is skipped with a note."""
        line = raw_line.rstrip("\n")
        if len(line) > MAX_LINE_CHARS:
            self.skip_long_line()
            return
        self.line_number += 1
        if _may_be_glued(line):
            for part in GLUE.split(line):
                self._line(part)
        else:
            self._line(line)

    def skip_long_line(self) -> None:
        """A line longer than MAX_LINE_CHARS: counted and noted, never matched."""
        self.line_number += 1
        self.run.note(texts("lognote.long_line", line=self.line_number, most=f"{MAX_LINE_CHARS:,}"))

    def steady(self) -> bool:
        """Whether a line without any of ``NOT_A_NO_OP``'s needles changes nothing now: the run
        has started (no timestamps to keep), and no pasted command is being collected."""
        run = self.run
        return (run.server_ready or run.stats_total > 0) and not self._args.busy

    def feed_text(self, text: str) -> None:
        """Whole lines, each ended by a newline: as ``feed`` on each line, but while the run is
        steady only the lines ``SCAN`` finds are read (3-4x faster on a long log)."""
        pos, end = 0, len(text)
        if end:  # the first line has no newline before it for the manifest branch of SCAN
            newline = text.find("\n")
            self.feed(text[:newline])
            pos = newline + 1
        while pos < end:
            if not self.steady():
                newline = text.find("\n", pos)
                self.feed(text[pos:newline])
                pos = newline + 1
                continue
            scan = SCAN if self.run.engine_strength else SCAN_ENGINE_UNKNOWN
            found = scan.search(text, pos - 1)  # from the newline that ends the previous line
            if found is None:
                self.line_number += text.count("\n", pos)
                return
            start = text.rfind("\n", pos - 1, found.end() - 1) + 1
            newline = text.find("\n", found.end() - 1)
            self.line_number += text.count("\n", pos, start)
            # SCAN found the line's first place where GLUE could split, if it is the first thing
            # it found: a line with no dash after that has no timestamp there, so it is whole.
            if text.find("-", found.start(), newline) >= 0:
                self.feed(text[start:newline])
            else:
                self.line_number += 1
                self._line(text[start:newline])
            pos = newline + 1

    def _new_run_if_started(self, line: str, at_line: int | None = None) -> None:
        if not self.run.empty:
            stamp = _stamp(line)
            if len(self.runs) >= 3:
                del self.runs[1]  # a middle run: counted, not kept
            self.runs.append(
                Run(started_at_line=at_line or self.line_number, first_timestamp=stamp)
            )
            self.runs_total += 1
            self._last_stamp, self._warmup_began, self._capturing = stamp, None, False

    def _start(self, kind: str, line: str, at_line: int | None = None) -> Run:
        """A start line of ``kind``: the next run's when this run already started or had one."""
        if self.run.started or kind in self.run.starts:
            self._new_run_if_started(line, at_line)
        self.run.starts.add(kind)
        return self.run

    def _line(self, line: str) -> None:
        if STATS_NEEDLE in line:  # the bulk of a long log: nothing else can be on this line
            if (read := vllm_stats.read(line)) is not None:
                self._stats(self.run, *read, line)
            elif len(self.run.notes) < MAX_NOTES:
                self.run.note(texts("lognote.stats_unread", line=self.line_number))
            return
        run = self.run
        # Timestamps only while the run starts (no ready line, no stats yet): the rest of a long
        # log pays nothing for them.
        if not run.server_ready and not run.stats_total and (stamp := _stamp(line)) is not None:
            run.first_timestamp = run.first_timestamp or stamp
            self._last_stamp = stamp
        if not run.engine_strength and (mark := code_mark(line)) is not None:
            run.set_engine(mark[0], MARK, mark[1])
        if self._args.busy or ArgsCollector.wants(line):
            for args in self._args.feed(line, self.line_number):
                self._server_args(args, line)
        if INTERESTING.search(line) is None and "Namespace(" not in line and "█" not in line:
            return
        # A start line after an engine, a KV cache, an error or stats is the next start (a failed
        # start and its restart appended to the same file are two runs).
        if (start := RUN_START.search(line)) is not None and start.lastgroup != "namespace":
            self._start(str(start.lastgroup), line)
        run = self.run
        if run.engine_strength < VERSION and (version := version_mark(line)) is not None:
            run.set_engine(version[0], VERSION, version[1])
        if run.version is None:
            run.version = version_text(line)
        if (found := line.find("non-default args: ")) >= 0:
            _apply_args(run, line[found + len("non-default args: ") :], self.line_number)
        if "Namespace(" in line and (namespace := read_namespace(line, self.line_number)):
            self._server_args(namespace, line)
            run = self.run
        if (init := ENGINE_INIT.search(line)) is not None:
            if run.engine_strength == ENGINE_LINE:
                self._new_run_if_started(line)
                run = self.run
            generation = (init.group("gen") or "V0").lower()
            run.set_engine(generation, ENGINE_LINE, f"engine config line {self.line_number}")
            _apply_config(run, init.group("config"))
        if run.model is None and (match := SERVED_MODEL.search(line)) is not None:
            run.model = match.group(1) or match.group(2)
        if (match := re.search(r"Using max model len (\d+)", line)) is not None:
            run.max_model_len = parse_int(match.group(1))
        if (
            match := re.search(
                r"Chunked prefill is enabled with max_num_batched_tokens=(\d+)", line
            )
        ) is not None:
            run.chunked_prefill, run.max_num_batched_tokens = True, parse_int(match.group(1))
        if (match := KV_SIZE.search(line)) is not None:
            run.kv_cache_tokens = _count(match.group(2))
            run.kv_cache_device = match.group("device") or run.kv_cache_device
        if (match := KV_MEMORY.search(line)) is not None:
            run.kv_cache_memory_gib = parse_float(match.group(1) or match.group(2))
        if (match := MODEL_MEMORY.search(line)) is not None:
            memory = parse_float(match.group(1))
            # V0 printed GB (10**9 bytes); everything here is GiB.
            run.model_memory_gib = memory if memory is None or match.group(2) == "GiB" else (
                memory * 10**9 / 2**30)  # fmt: skip
        if GRAPH_CAPTURE.search(line) is not None and run.graph_capture_s is None:
            self._capturing = True
        if (match := GRAPH_MEMORY.search(line)) is not None:
            run.graph_memory_gib, self._capturing = parse_float(match.group(1)), False
        if (match := BLOCKS_OVERRIDE.search(line)) is not None:
            # The override replaces the profiled count: it is the number of blocks the engine gets.
            run.num_gpu_blocks_override = run.num_gpu_blocks = parse_int(match.group(1))
        if (
            match := re.search(rf"Maximum concurrency for {NUM} tokens per request: {NUM}x", line)
        ) is not None:
            run.max_concurrency_tokens_per_request = _count(match.group(1))
            run.max_concurrency = _number(match.group(2))
        if (match := re.search(r"# (?:GPU|cuda) blocks: (\d+)", line)) is not None:
            run.num_gpu_blocks = parse_int(match.group(1))
        if (
            match := re.search(
                r"is preempted by (PreemptionMode\.)?(?P<mode>RECOMPUTE|SWAP) mode", line
            )
        ) is not None:
            run.preemptions_seen, run.preemption_mode = True, match.group("mode")
        self._timings(run, line)
        if "Warming up" in line:
            self._warmup(run, line)
        if not run.server_ready and READY.search(line) is not None:
            run.server_ready, run.ready_at_line = True, self.line_number
            run.ready_timestamp = _stamp(line) or self._last_stamp  # uvicorn's lines have none
            if run.first_timestamp is not None and run.ready_timestamp is not None:
                run.startup_span_s = seconds_between(run.first_timestamp, run.ready_timestamp)
        for kind, pattern in ERRORS:
            if pattern.search(line):
                if kind == "oom" and self._capturing:  # the graphs' memory is what ran out
                    kind = "oom_graph_capture"
                run.errors.append({"kind": kind, "line": self.line_number})
                _numbers_from_error(run, line)
                break

    @staticmethod
    def _timings(run: Run, line: str) -> None:
        for name, pattern in TIMINGS:
            if (match := pattern.search(line)) is not None:
                if (seconds := parse_float(match.group(1))) is None:
                    continue
                setattr(run, name, max(seconds, getattr(run, name) or 0.0))
                if name == "weights_load_s":
                    run.weights_load_ranks += 1
        if (match := DEVICE_MEMORY.search(line)) is not None:
            run.device_memory_gib = parse_float(
                match.group("free_total") or match.group("capacity")
            )

    def _warmup(self, run: Run, line: str) -> None:
        # CPU: "Warming up model for the compilation..." ... "Warming up done." (no duration logged).
        if WARMUP_BEGIN in line:
            self._warmup_began = _stamp(line)
        elif WARMUP_END in line and self._warmup_began is not None:
            if (ended := _stamp(line)) is not None:
                run.warmup_s = seconds_between(self._warmup_began, ended)
            self._warmup_began = None

    def _server_args(self, args: ServerArgs, line: str) -> None:
        """A pasted command, manifest or Namespace dump: it starts a run; it fills what is unset."""
        kind = "namespace" if args.source == "Namespace dump" else "command"
        run = self._start(kind, line, args.line)
        for name, value in args.settings.items():
            if getattr(run, name) is None:
                setattr(run, name, value)
        run.server_args_from = run.server_args_from or f"{args.source} at line {args.line}"
        for note in args.notes:
            run.note(note)

    def _stats(self, run: Run, stats: dict[str, Any], before: str, line: str) -> None:
        if stats["preemptions"]:
            run.preemptions_seen = True
            run.preemption_mode = run.preemption_mode or "RECOMPUTE"  # V1 recomputes, always
        if run.engine_strength >= MARK:  # the hot path: known after the first lines
            pass
        elif "Engine 0" in line or "Engines Aggregated" in line or "Waiting:" in line:
            run.set_engine("v1", MARK, "the V1 stats line")
        elif "Pending:" in line:
            run.set_engine("v0", MARK, "the V0 stats line (Pending)")
        run.stats_total += 1
        if run.kv_cache_device is None:
            run.kv_cache_device = vllm_stats.device_word(before)
        run.stats.append(stats)
        if len(run.stats) > MAX_STATS_PER_RUN:
            del run.stats[0]

    def finish(self) -> None:
        """End of input: a command still being collected, and a command pasted after its log."""
        for args in self._args.flush():
            self._server_args(args, "")
        last = self.run
        if len(self.runs) > 1 and last.starts <= {"command"} and only_args(last):
            previous = self.runs[-2]
            if not only_args(previous):
                for name in FIELDS_FROM_ARGS:
                    if getattr(previous, name) is None:
                        setattr(previous, name, getattr(last, name))
                previous.server_args_from = previous.server_args_from or last.server_args_from
                for said in last.notes_texts:
                    previous.note(said)
                kind, _, line = (last.server_args_from or "").rpartition(" at line ")
                previous.note({lang: say("lognote.args_after", lang, line=line,
                                         kind=value_word("args_source", kind, lang))
                               for lang in LANGS})  # fmt: skip
                self.runs.pop()
                self.runs_total -= 1

    def result(self) -> dict[str, Any]:
        """The ``probe vllm-log --json`` object: the last run, and every run under ``runs``."""
        runs = [r for r in self.runs if not r.empty] or [self.run]
        total = self.runs_total - (len(self.runs) - len(runs))
        kept = runs if len(runs) <= 2 else [runs[0], runs[-1]]
        last = as_dict(runs[-1])
        last["runs"] = [as_dict(r) for r in kept]
        # Runs between the first and the last are counted only (a restart loop would grow both).
        last["runs_total"] = total
        last["runs_omitted"] = total - len(kept)
        last["lines"] = self.line_number
        notes = list(runs[-1].notes_texts)
        if total > 1:
            notes.insert(0, texts("lognote.runs", total=total, line=runs[-1].started_at_line))
        if runs[-1].empty:
            last["note"], last["note_texts"] = say("log.nothing", "en"), texts("log.nothing")
            notes.append(last["note_texts"])
        last["notes"] = [said["en"] for said in notes]
        last["notes_texts"] = notes
        return last


def read_lines(lines: Iterable[str]) -> dict[str, Any]:
    """Parse an iterable of lines (memory is bounded by the longest line the iterable makes: a
    stream is read with ``read_text``, whose lines are bounded)."""
    reader = LogReader()
    for line in lines:
        reader.feed(line)
    reader.finish()
    return reader.result()


def read_text(handle: TextIO, block_chars: int = BLOCK_CHARS) -> dict[str, Any]:
    """Parse a text stream block by block: the same reading as ``read_lines(handle)`` (whose lines
    end at each newline the stream gives), 3-4x faster on a long log; memory stays bounded."""
    reader = LogReader()
    for block in line_blocks(handle, block_chars):
        if block is None:
            reader.skip_long_line()
        else:
            reader.feed_text(block)
    reader.finish()
    return reader.result()


# Errors after which the server never came up: the walk explains them instead of measuring.
START_UP_FAILURES = frozenset({
    "max_seq_len_exceeds_kv_cache", "no_kv_cache_memory", "batched_tokens_below_max_model_len",
    "tp_heads_indivisible", "engine_init_failed", "oom", "oom_graph_capture",
})  # fmt: skip
# Refused by vLLM's argument checks, before any engine exists (no KV cache can have been sized).
ARGUMENT_REFUSALS = frozenset({
    "batched_tokens_below_max_model_len", "batched_tokens_below_max_num_seqs",
    "max_model_len_exceeds_model", "tp_heads_indivisible",
})  # fmt: skip


def walk_facts(report: dict[str, Any]) -> dict[str, Any]:
    """The report without its bulky lists, plus what the playbook's rules read."""
    facts = {k: v for k, v in report.items() if k not in ("runs", "stats", "replicas")}
    stats = report["stats"]
    kinds = [e["kind"] for e in report["errors"]]
    tp, pp = report["tensor_parallel_size"], report["pipeline_parallel_size"] or 1
    # The first line of each kind, so a finding can cite the line that is its cause.
    error_lines: dict[str, int] = {}
    for error in report["errors"]:
        error_lines.setdefault(error["kind"], error["line"])
    kv_lines = [
        error_lines[k]
        for k in ("max_seq_len_exceeds_kv_cache", "no_kv_cache_memory")
        if k in error_lines
    ]
    if kv_lines:
        error_lines["kv_cache_too_small"] = min(kv_lines)
    seqs, seqs_from = configured_max_num_seqs(report)
    facts.update(
        **_kv_per_token(report),
        max_num_seqs_effective=seqs,
        max_num_seqs_from=seqs_from,
        runs_count=report["runs_total"],
        error_kinds=kinds,
        error_lines=error_lines,
        startup_failed=_failed_to_start(kinds, report),
        gpus_used=tp * pp if tp else None,
        stats_waiting_max=max((s["waiting"] for s in stats), default=None),
        stats_preemptions=sum(s["preemptions"] for s in stats),
        stats_kv_usage_max_pct=max((s["gpu_kv_cache_usage_pct"] for s in stats), default=None),
    )  # fmt: skip
    return facts


def _kv_per_token(report: dict[str, Any]) -> dict[str, Any]:
    """GiB of KV cache a token takes on one rank, from the last run's refusal (the KV needed for
    max_model_len) or a start of the same layout whose cache was sized (its memory over its
    tokens): what one max_model_len request needs, for a start that had no memory at all."""
    last = report
    if last["kv_needed_gib"] and last["max_model_len"]:
        return {"kv_gib_per_token": last["kv_needed_gib"] / last["max_model_len"],
                "kv_gib_per_token_from": "the refusal's KV cache needed for max_model_len"}  # fmt: skip
    layout = (last["tensor_parallel_size"] or 1, last["pipeline_parallel_size"] or 1)
    for run in reversed(report["runs"]):
        memory, tokens = run["kv_cache_memory_gib"], run["kv_cache_tokens"]
        same = (run["tensor_parallel_size"] or 1, run["pipeline_parallel_size"] or 1) == layout
        if same and memory and tokens and memory > 0:
            return {"kv_gib_per_token": memory / tokens,
                    "kv_gib_per_token_from": f"the start at log line {run['started_at_line']}: "
                                             f"{memory} GiB for {tokens} tokens"}  # fmt: skip
    return {"kv_gib_per_token": None, "kv_gib_per_token_from": None}


def _failed_to_start(kinds: list[str], report: dict[str, Any]) -> bool:
    # The argument checks run before the engine exists, the graphs' capture right after the KV
    # cache is sized; the others count only before it was (an OOM at runtime is no failed start).
    if ARGUMENT_REFUSALS.intersection(kinds) or "oom_graph_capture" in kinds:
        return True  # refused before the KV cache, or while capturing graphs right after it
    return bool(START_UP_FAILURES.intersection(kinds)) and report["kv_cache_tokens"] is None


def layout_on_nodes(facts: dict[str, Any], gpus_per_node: Any) -> dict[str, Any]:
    """How many hosts the log's TP x PP needs when each has ``gpus_per_node`` GPUs (the GPU host's
    own count), and how many of them it uses on each: a layout larger than one host spans
    several (vLLM fills every node's GPUs), so CUDA_VISIBLE_DEVICES is judged per node."""
    used = facts.get("gpus_used")
    if not isinstance(used, int) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        return {"nodes_spanned": None, "gpus_used_per_node": used}
    nodes = -(-used // gpus_per_node)
    return {"nodes_spanned": nodes, "gpus_used_per_node": -(-used // nodes)}
