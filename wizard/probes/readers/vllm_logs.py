"""Several replicas' vLLM logs at once, told apart per replica.

Two shapes: a folder (one file per replica, named by the file), or ``kubectl logs --prefix`` of
several pods concatenated (``kubectl logs -l app=vllm --prefix``, ``--all-pods``), where kubectl
starts every line with ``[pod/NAME/CONTAINER] `` (``addPrefixIfNeeded`` in kubectl's logs.go; with
``--timestamps`` the time follows the prefix). Lines of pods followed in parallel interleave, so
each line goes to its own replica's reader by its prefix: runs, stats and errors are never mixed
across replicas. A file without any prefixed line is one replica, as before. Lines without a
prefix in a prefixed file (kubectl's own ``error: ...`` lines) belong to no replica and are noted.
Each reader is the single-log reader (``vllm_log.LogReader``), fed line by line: memory stays
bounded by the number of replicas, not the size of the logs.

The report of a single replica is exactly ``vllm_log``'s. With several, the top level is the
report of the replica the walk reads (the first whose log shows an error, else the first), with
``replica`` (its name), ``replica_count``, ``replicas`` (each one's report, under its name) and
``differing_args`` (server settings that differ between replicas: a replica started with other
flags than its peers is a classic cause of one slow replica).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, TextIO

from wizard.errors import WizardError
from wizard.i18n.words import texts
from wizard.probes.readers import vllm_log
from wizard.probes.readers.log_lines import (
    BLOCK_CHARS,
    MAX_LINE_CHARS,
    MAX_SKIPPED_LINE_CHARS,
    LineTooLongError,
    line_blocks,
)
from wizard.probes.readers.vllm_log import LogReader

POD_PREFIX = re.compile(r"^\[(?P<source>pod/[^/\]\s]+/[^\]\s]*)\] ")
ANY_POD_PREFIX = re.compile(POD_PREFIX.pattern, re.MULTILINE)
# What a replica was started with: a difference between replicas is worth naming.
COMPARED_ARGS = (
    "version", "engine", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
    "gpu_memory_utilization", "kv_cache_tokens", "tensor_parallel_size",
    "pipeline_parallel_size", "chunked_prefill", "enforce_eager", "block_size", "api_server_count",
)  # fmt: skip
# The replica's own report keys shown per replica in the walk's facts (the rest is in the CLI's).
WALK_KEYS = ("lines", "startup_s", "stats_total", "preemptions_seen", *COMPARED_ARGS)


class _Split:
    """A reader per replica, fed one line at a time from every source given."""

    def __init__(self) -> None:
        self.readers: dict[str, LogReader] = {}
        self.unattributed = 0
        self.long_lines = 0  # skipped once lines go to their pods: no pod's reader saw them

    def skip_long_line(self) -> None:
        self.long_lines += 1

    def feed(self, handle: TextIO, name: str, block_chars: int = BLOCK_CHARS) -> None:
        """One source: its prefixed lines to their pods' readers; without any, it is replica ``name``.

        Blocks without a prefixed line go to the plain reader whole (its fast path, the same
        reading as line by line); from the first prefixed line on, every line is routed alone."""
        plain = LogReader()
        prefixed = False
        for block in line_blocks(handle, block_chars):
            if block is None:  # a line too long to read, whoever it belongs to
                (plain if not prefixed else self).skip_long_line()
                continue
            if not prefixed and ANY_POD_PREFIX.search(block) is None:
                plain.feed_text(block)
                continue
            prefixed = True
            for line in block[:-1].split("\n"):
                match = POD_PREFIX.match(line)
                if match is None:
                    plain.feed(line)
                else:
                    self.readers.setdefault(match["source"], LogReader()).feed(line[match.end() :])
        if prefixed:
            self.unattributed += plain.line_number
        else:
            self.readers[name] = plain


def log_files(folder: Path) -> list[Path]:
    """The replicas' logs in a folder: its files (not hidden ones), by name."""
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))
    if not files:
        raise WizardError(f"{folder}: no log file in this folder (one file per replica)")
    return files


def read_path(path: str | Path) -> dict[str, Any]:
    """Every replica's log in a folder or a (kubectl --prefix) file; one-line WizardError when
    it cannot be read."""
    source = Path(path)
    split = _Split()
    for file in log_files(source) if source.is_dir() else [source]:
        try:
            with file.open(encoding="utf-8", errors="replace") as handle:
                split.feed(handle, file.name)
        except OSError as exc:
            raise WizardError.cannot_read(file, exc) from None
        except LineTooLongError:
            raise _no_log(file) from None
    return combine(split)


def _no_log(name: object) -> WizardError:
    return WizardError.said(
        "error.log_line_too_long", path=name, most=f"{MAX_SKIPPED_LINE_CHARS:,}"
    )


def read_stream(handle: TextIO, name: str = "-", block_chars: int = BLOCK_CHARS) -> dict[str, Any]:
    """One input (standard input, a paste) that may hold several pods' prefixed lines."""
    split = _Split()
    try:
        split.feed(handle, name, block_chars)
    except LineTooLongError:
        raise _no_log(name) from None
    return combine(split)


def combine(split: _Split) -> dict[str, Any]:
    """The single-log report, or the chosen replica's with every replica's beside it."""
    reports = {}
    for name, reader in split.readers.items():
        reader.finish()
        reports[name] = reader.result()
    if len(reports) == 1 and not split.unattributed and not split.long_lines:
        return next(iter(reports.values()))
    chosen = next((n for n, r in reports.items() if r["errors"]), next(iter(reports)))
    report = dict(reports[chosen])
    report["notes"], report["notes_texts"] = list(report["notes"]), list(report["notes_texts"])
    for key, count in (("lognote.unattributed", split.unattributed),
                       ("lognote.long_lines", split.long_lines)):  # fmt: skip
        if count:
            said = texts(key, lines=count, most=f"{MAX_LINE_CHARS:,}")
            report["notes"].append(said["en"])
            report["notes_texts"].append(said)
    report.update(
        replica=chosen,
        replica_count=len(reports),
        replicas=[{"replica": name, **r} for name, r in reports.items()],
        differing_args=differing_args(reports),
    )
    return report


def differing_args(reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each server setting that differs between the replicas whose logs show it: {key: {replica:
    value}}. A setting a log does not show is not a difference."""
    found = {}
    for key in COMPARED_ARGS:
        shown = {name: r.get(key) for name, r in reports.items() if r.get(key) is not None}
        if len({repr(v) for v in shown.values()}) > 1:
            found[key] = shown
    return found


def log_facts(report: dict[str, Any], file: str) -> dict[str, Any]:
    """A reader's report as the walk records it: the last run, and the replicas when several."""
    facts = vllm_log.walk_facts(report)
    if "replicas" in report:
        facts.update(walk_facts(report))
    return {"available": True, "file": file, **facts}


def walk_facts(report: dict[str, Any]) -> dict[str, Any]:
    """Each replica's log in brief, and the settings that differ, for the walk's facts (the full
    reports stay in the CLI's)."""
    differing = report["differing_args"]
    return {
        "replicas": [
            {"replica": r["replica"], "error_kinds": [e["kind"] for e in r["errors"]],
             **{k: r.get(k) for k in WALK_KEYS}}
            for r in report["replicas"]
        ],
        "differing_count": len(differing),
        "differing_text": "; ".join(
            f"{key}: " + ", ".join(f"{name}={value}" for name, value in shown.items())
            for key, shown in differing.items()
        ),
    }  # fmt: skip


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: the log given with --vllm-log (a file, a folder of replicas' logs, or several
    pods' ``kubectl logs --prefix``), else one found among the host evidence."""
    import asyncio

    path = getattr(ctx, "vllm_log", None) or params.get("path")
    if not path:
        return {"available": False}
    report = await asyncio.to_thread(read_path, str(path))
    facts = log_facts(report, str(path))
    return {**facts, **vllm_log.layout_on_nodes(facts, params.get("gpus_per_node"))}
