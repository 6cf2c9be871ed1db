"""`probe vllm-log` on what engineers paste: logs of every era without a version line, command
lines, manifests, Namespace dumps, early-2024 stats lines, several runs in one paste.

Each artefact is a file of ``tests/fixtures/vllm-log/pasted/`` with its expected reading in
``expected.yaml``; an ``_fp`` file must not be read as its class.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import wizard_command
from wizard.probes.readers.vllm_log import read_lines

PASTED = Path(__file__).parent / "fixtures" / "vllm-log" / "pasted"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((PASTED / "expected.yaml").read_text())
CLASSES = ("engine", "args", "stats", "runs")


def read(name: str) -> dict[str, Any]:
    with (PASTED / name).open(encoding="utf-8") as handle:
        return read_lines(handle)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_pasted_artefact_reads_as_expected(name: str) -> None:
    report = read(name)
    assert {key: report[key] for key in EXPECTED[name]} == EXPECTED[name], report["notes"]


def test_every_class_has_variants_and_false_positives() -> None:
    files = {p.name for p in PASTED.iterdir() if p.name != "expected.yaml"}
    assert files == set(EXPECTED), files ^ set(EXPECTED)
    for kind in CLASSES:
        variants = [n for n in files if n.startswith(f"{kind}-")]
        assert len(variants) >= 3, kind
    for kind in ("engine", "args", "stats"):
        assert [n for n in files if n.startswith(f"{kind}_fp-")], kind


def test_engine_from_says_which_mark_decided() -> None:
    assert read("engine-v1-apiserver-tail.log")["engine_from"] == "the (APIServer pid=N) prefix"
    assert read("engine-v0-explicit-0.8.log")["engine_from"] == "engine config line 2"
    # A stronger source overrides a weaker one: the version beats the worker prefix before it.
    mixed = read_lines(["(APIServer pid=1) INFO 07-08 07:16:55 [api_server.py:1] x\n",
                        "INFO 07-08 07:16:55 api_server.py:206] vLLM API server version 0.5.1\n"])  # fmt: skip
    assert (mixed["engine"], mixed["engine_from"]) == ("v0", "version 0.5")


def test_values_the_paste_does_not_hold_are_notes_not_silent_nulls() -> None:
    report = read("args-api-server-module.txt")
    notes = " | ".join(report["notes"])
    assert "--max-num-seqs $MAX_SEQS is a variable: its value is not in the paste" in notes
    assert "read the default 16384 ($MAX_BATCH may set another)" in notes
    auto = read_lines(["vllm serve m --max-model-len auto --max-num-seqs lots\n"])
    assert auto["max_model_len"] is None and auto["max_num_seqs"] is None
    assert any("fits it to the memory at start" in n for n in auto["notes"])
    assert any("'lots' is not a value vLLM takes" in n for n in auto["notes"])
    garbled = read("stats_fp-garbled.log")
    assert garbled["notes"][:2] == [
        "line 1: a stats line that does not read: skipped",
        "line 2: a stats line that does not read: skipped",
    ]


def test_unclosed_quote_reads_up_to_it_and_says_so() -> None:
    report = read_lines(["vllm serve m --max-num-seqs 8 --chat-template 'oops\n"])
    assert report["max_num_seqs"] == 8
    assert any("quoting does not close" in n for n in report["notes"])


def test_early_2024_stats_segments() -> None:
    first, second = read("stats-early-2024-iteration.log")["stats"]
    assert first == {"running": 14, "waiting": 9, "swapped": 2, "gpu_kv_cache_usage_pct": 98.7,
                     "prompt_throughput": 1203.4, "generation_throughput": 88.0, "preemptions": 0,
                     "max_iteration_time_ms": 142.3, "avg_time_per_token_ms": 61.9}  # fmt: skip
    # Segments in another order and times in seconds.
    assert (second["running"], second["waiting"], second["max_iteration_time_ms"]) == (16, 7, 90.0)
    assert second["avg_time_per_token_ms"] == 50.0 and second["gpu_kv_cache_usage_pct"] == 99.1


def test_several_runs_report_the_last_and_say_so() -> None:
    report = read("runs-command-then-log-twice.txt")
    assert [r["max_num_seqs"] for r in report["runs"]] == [256, 64]
    assert report["runs"][0]["preemptions_seen"] is True  # the first run's, not the last's
    assert report["notes"][0].startswith("2 runs in this input: the last (from line 5)")
    folded = read("runs-log-then-its-command.txt")
    assert any("follows this run's log: read as its command" in n for n in folded["notes"])


def test_a_long_continuation_is_bounded() -> None:
    from wizard.probes.readers.vllm_args import MAX_COMMAND_CHARS

    lines = ["vllm serve m \\\n"] + ["  --foo bar \\\n"] * (MAX_COMMAND_CHARS // 10)
    report = read_lines([*lines, "  --max-num-seqs 4\n"])
    assert any("longer than" in n for n in report["notes"])
    assert len(report["notes"]) <= 21


def test_a_manifest_pasted_on_stdin_through_the_cli() -> None:
    text = (PASTED / "args-k8s-lists.yaml").read_text() + (
        PASTED / "engine-v1-2025-no-prefix.log"
    ).read_text()
    result = subprocess.run(wizard_command("probe", "vllm-log", "-", "--json"), input=text,
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["tensor_parallel_size"], report["kv_cache_tokens"], report["engine"]) == (
        2,
        1036096,
        "v1",
    )
    assert report["runs_total"] == 1 and report["server_args_from"] == "manifest at line 10"


def test_engine_config_line_keys_of_every_era() -> None:
    report = read_lines([
        "INFO 02-01 10:00:00 llm_engine.py:79] Initializing an LLM engine with config: model='m', "
        "max_seq_len=4096, tensor_parallel_size=2, gpu_memory_utilization=0.85, max_num_seqs=64, "
        "chunked_prefill_enabled=True, enforce_eager=None, seed=0)\n"
    ])  # fmt: skip
    assert (
        report["gpu_memory_utilization"],
        report["max_num_seqs"],
        report["chunked_prefill"],
    ) == (0.85, 64, True)
    # "None" is no False (it was read as one): an unset value stays unknown.
    assert report["enforce_eager"] is None
