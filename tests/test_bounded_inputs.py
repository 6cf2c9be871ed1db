"""Hostile inputs of the reliability kind (issue #27, item 2): each ends within the issue's bounds
(10 s of CPU, under 300 MB resident) with one clear line, whatever it holds.

Each case runs the real CLI in a subprocess under ``resource.setrlimit`` (CPU time and address
space), so a regression fails fast (killed, or a MemoryError traceback) instead of hanging or
swapping the machine; no wall-clock time is asserted.
"""

from __future__ import annotations

import io
import json
import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import wizard_command
from tests.faultserver import fault_server
from wizard.cli.probe import NOTHING_MEASURED
from wizard.levers.nginx_runner import free_port

REAL_LOG = Path(__file__).parent / "fixtures" / "vllm-log" / "real-0.32-healthy.log"
CPU_LIMIT_S = 10  # the bound for every hostile input
ADDRESS_SPACE = 2 << 30  # virtual: the interpreter, its threads' stacks and arenas, with room
MAX_RSS_MIB = 300  # the bound, measured on the process itself (wait4)
SAFETY_WAIT_S = 300  # only a process that waits without using CPU could get here: killed


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str
    rss_mib: float

    def one_line(self) -> str:
        """The single stderr line of a refused input (and no traceback)."""
        lines = self.stderr.strip().splitlines()
        assert len(lines) == 1, self.stderr[-3000:]
        return lines[0]


def _limits() -> None:
    # SIGXCPU at the bound (a SIGKILL a little later if it were caught).
    resource.setrlimit(resource.RLIMIT_CPU, (CPU_LIMIT_S, CPU_LIMIT_S + 5))
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def bounded(tmp_path: Path, *args: str) -> Finished:
    """Run the CLI under the limits; its exit code, output and peak RSS (its own, from wait4)."""
    out, err = tmp_path / "stdout", tmp_path / "stderr"
    with out.open("w") as stdout, err.open("w") as stderr:
        process = subprocess.Popen(wizard_command(*args), stdout=stdout, stderr=stderr,
                                   stdin=subprocess.DEVNULL, preexec_fn=_limits)  # fmt: skip
        waited = 0.0
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if waited > SAFETY_WAIT_S:
                process.kill()
            time.sleep(0.05)
            waited += 0.05
    process.returncode = 0  # reaped here: Popen must not wait for it again
    code = os.waitstatus_to_exitcode(status)
    killed = code in (-signal.SIGXCPU, -signal.SIGKILL)
    assert not killed, f"over {CPU_LIMIT_S} s of CPU (or hung): {err.read_text()[-2000:]}"
    return Finished(code, out.read_text(), err.read_text(), usage.ru_maxrss / 1024)


# -- long lines and endless input to the vLLM log reader -------------------------------------------


def test_a_long_stats_line_is_read_in_linear_time(tmp_path: Path) -> None:
    # 12 s of CPU at 40 kB before (each letter retried the key pattern to the end of the run).
    log = tmp_path / "vllm.log"
    long_line = "INFO 01-01 00:00:00 Avg prompt throughput: Avg time/tok " + "a" * 60_000 + "\n"
    log.write_text(REAL_LOG.read_text(encoding="utf-8") + long_line)
    result = bounded(tmp_path, "probe", "vllm-log", str(log), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (
        report["notes"][-1] == f"line {report['lines']}: a stats line that does not read: skipped"
    )
    assert result.rss_mib < MAX_RSS_MIB


def test_dev_zero_ends_in_one_line(tmp_path: Path) -> None:
    # Before: the reader kept the line without a newline whole, for ever (a MemoryError here).
    result = bounded(tmp_path, "probe", "vllm-log", "/dev/zero")
    assert result.returncode == 2
    assert result.one_line().endswith(
        "/dev/zero: more than 16,777,216 characters without a newline: not a text log "
        "(stopped reading)"
    )
    assert result.rss_mib < MAX_RSS_MIB


def test_a_huge_sparse_file_ends_in_one_line_in_every_language(tmp_path: Path) -> None:
    sparse = tmp_path / "sparse.log"
    with sparse.open("wb") as handle:
        handle.truncate(2 << 30)  # 2 GiB of holes: no disk used, zeros when read
    result = bounded(tmp_path, "probe", "vllm-log", str(sparse), "--lang", "zh")
    assert result.returncode == 2
    assert result.one_line().endswith(
        f"{sparse}：超过 16,777,216 个字符没有换行：不是文本日志（已停止读取）"
    )
    assert result.rss_mib < MAX_RSS_MIB


# Every other input file is read whole, within a bound for its kind (``wizard/files.py``).
WHOLE_FILES = {
    "metrics": (["probe", "metrics", "--file", "/dev/zero"], 2, "more than 8 MiB"),
    "topology": (["probe", "topology", "/dev/zero"], 2, "more than 1 Mi characters"),
    "nginx": (["probe", "nginx-config", "/dev/zero"], 1, "more than 64 MiB"),
    "playbook": (["playbook", "check", "/dev/zero"], 2, "more than 16 MiB"),
    "transcript": (["replay", "/dev/zero"], 1, "more than 64 MiB"),
    "answers": (["run", "--answers", "/dev/zero"], 2, "more than 1 MiB"),
}


@pytest.mark.parametrize("kind", WHOLE_FILES)
def test_dev_zero_as_any_other_input_ends_in_one_line(tmp_path: Path, kind: str) -> None:
    # Before: each read it whole, for ever (a MemoryError traceback here).
    args, code, said = WHOLE_FILES[kind]
    if args[0] == "run":
        args = [*args, "--target", f"http://127.0.0.1:{free_port()}",
                "--transcript", str(tmp_path / "walk.ndjson")]  # fmt: skip
    result = bounded(tmp_path, *args)
    assert result.returncode == code
    assert result.one_line().endswith(
        f"/dev/zero: {said}: too large for this input (is it the right file?)"
    )
    assert result.rss_mib < MAX_RSS_MIB
    assert not (tmp_path / "walk.ndjson").exists()


def test_a_line_over_the_limit_is_skipped_with_a_note() -> None:
    from wizard.probes.readers import vllm_log
    from wizard.probes.readers.log_lines import MAX_LINE_CHARS

    lines = REAL_LOG.read_text(encoding="utf-8").splitlines(keepends=True)
    long_line = "INFO 01-01 00:00:00 Received request cmpl-1: prompt: '" + "w " * MAX_LINE_CHARS
    with_long = [*lines, long_line + "'\n", lines[-1]]
    expected = vllm_log.read_text(io.StringIO("".join([*lines, "\n", lines[-1]])))
    at = len(lines) + 1
    for block_chars in (vllm_log.BLOCK_CHARS, 1000):
        report = vllm_log.read_text(io.StringIO("".join(with_long)), block_chars)
        assert report["notes"] == [
            *expected["notes"],
            f"line {at}: longer than 65,536 characters: skipped",
        ]
        assert report["notes_texts"][-1]["zh"] == f"第 {at} 行：超过 65,536 个字符，已跳过"
        # Nothing else changed: the lines after it are read as before, numbered as before.
        assert {k: v for k, v in report.items() if k not in ("notes", "notes_texts", "runs")} == {
            k: v for k, v in expected.items() if k not in ("notes", "notes_texts", "runs")
        }
    assert vllm_log.read_lines(with_long) == report  # line by line: the same


# -- YAML alias bombs: the playbook and --answers -----------------------------------------------------


def laughs(indent: str = "") -> str:
    """A "billion laughs": nine levels of nine aliases each, 10^9 values from ~300 bytes."""
    rows = [f"{indent}- &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"]
    for name, inner in zip("bcdefghi", "abcdefgh", strict=True):
        rows.append(f"{indent}- &{name} [{', '.join([f'*{inner}'] * 9)}]\n")
    return "".join(rows)


# Each: the playbook's text, the line and the message of its one-line refusal (exit 1).
BAD_PLAYBOOKS = {
    # 79 s and 1.8 GB, then a traceback, before.
    "bomb": ("id: bomb\nstages:\n" + laughs("  "), 7, "YAML aliases that stand for more than "
             "10,000 values (an alias bomb?): write the values out"),
    # A RecursionError traceback before (the line reader followed the loop).
    "loop": ("id: loop\nstages: &s [x, *s]\n", 2,
             "a YAML alias inside the value it names (a loop): write the value out"),
    # Found by the long fuzz run: a RecursionError traceback (PyYAML composes recursively).
    "deep": ("id: deep\nstages: " + "[" * 70_000 + "\n", 2,
             "YAML nested deeper than 100 levels: write it flatter"),
    # Found by the long fuzz run (tracebacks): a value PyYAML recognises but cannot build, a tag
    # the safe loader does not know.
    "bigint": ("id: " + "9" * 5000 + "\n", 1, "invalid YAML: a value that cannot be read (a "
               "number too long, a date that does not exist)"),
    "tag": ("id: !!python/object:os.system x\n", 1, "invalid YAML: could not determine a "
            "constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"),
    # Found by the new fuzz property: PyYAML's reader error said where on a second line.
    "control": ("id: x\x1f\n", 1, "invalid YAML: unacceptable character #x001f: special "
                "characters are not allowed"),
}  # fmt: skip


@pytest.mark.parametrize("kind", BAD_PLAYBOOKS)
def test_a_hostile_playbook_is_refused_in_one_line(tmp_path: Path, kind: str) -> None:
    text, line, said = BAD_PLAYBOOKS[kind]
    book = tmp_path / "book.yaml"
    book.write_text(text)
    result = bounded(tmp_path, "playbook", "check", str(book))
    assert result.returncode == 1
    assert result.one_line().endswith(f"{book}:{line}: {said}")
    assert result.rss_mib < MAX_RSS_MIB


def test_the_shipped_playbook_aliases_stay_within_the_bound() -> None:
    from wizard import playbook
    from wizard.playbook.yamlines import MAX_ALIAS_VALUES, BoundedLoader

    loader = BoundedLoader(Path(playbook.DEFAULT_PLAYBOOK).read_text(encoding="utf-8"))
    loader.get_single_node()
    assert 0 < loader._alias_values < MAX_ALIAS_VALUES / 10


def test_a_deep_answers_file_is_refused_in_one_line(tmp_path: Path) -> None:
    # Found by the long fuzz run: a RecursionError traceback.
    answers = tmp_path / "answers.yaml"
    answers.write_text("[" * 70_000)
    result = bounded(tmp_path, "run", "--target", f"http://127.0.0.1:{free_port()}",
                     "--answers", str(answers), "--transcript", str(tmp_path / "walk.ndjson"))  # fmt: skip
    assert result.returncode == 2
    assert result.one_line().endswith(
        f"{answers}:1: YAML nested deeper than 100 levels: write it flatter"
    )


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_alias_bomb_answers_file_is_refused_before_any_contact(
    tmp_path: Path, lang: str
) -> None:
    # A MemoryError traceback before: the confirm question's check turned the list into text.
    answers = tmp_path / "answers.yaml"
    answers.write_text("restarted:\n" + laughs("  "))
    transcript = tmp_path / "walk.ndjson"
    result = bounded(tmp_path, "run", "--target", f"http://127.0.0.1:{free_port()}",
                     "--answers", str(answers), "--transcript", str(transcript), "--lang", lang)  # fmt: skip
    assert result.returncode == 2
    said = {
        "en": "YAML aliases that stand for more than 10,000 values (an alias bomb?): write the "
        "values out",
        "zh": "YAML 别名展开后超过 10,000 个值（别名炸弹？）：请直接写出这些值",
    }
    assert result.one_line().endswith(f"{answers}:6: {said[lang]}")
    assert not transcript.exists()
    assert result.rss_mib < MAX_RSS_MIB


# -- SSE floods -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faults() -> Iterator[str]:
    with fault_server() as url:
        yield url


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("flood", "sent more than 48 events for max_tokens 16: stopped"),
        ("keepaliveflood", "sent more than 1,016 frames without data (comments, blank events): "
         "stopped"),
    ],
)  # fmt: skip
def test_an_event_flood_stops_the_request(
    tmp_path: Path, faults: str, mode: str, said: str
) -> None:
    # Before: 5.9 M tiny events in 25 s grew one request to 877 MB (here: killed at 10 s of CPU).
    result = bounded(tmp_path, "probe", "stream", "--target", f"{faults}/{mode}", "--model", "m",
                     "--max-tokens", "16", "--repeat", "2", "--timeout", "2", "--json")  # fmt: skip
    assert result.returncode == NOTHING_MEASURED
    report = json.loads(result.stdout)
    assert report["summary"]["errors"] == {"oversized_stream": 2}
    assert report["samples"][0]["error"] == f"{faults}/{mode}/v1/completions {said}"
    assert result.rss_mib < MAX_RSS_MIB


def test_a_flood_on_sixteen_streams_stays_bounded(tmp_path: Path, faults: str) -> None:
    # Before: 1.33 GB at 16 streams.
    result = bounded(tmp_path, "probe", "load", "--target", f"{faults}/flood", "--model", "m",
                     "--concurrency", "16", "--requests", "16", "--warmup", "0",
                     "--max-tokens", "64", "--timeout", "5", "--json")  # fmt: skip
    assert result.returncode == NOTHING_MEASURED
    report = json.loads(result.stdout)
    assert report["steady"]["summary"]["errors"] == {"oversized_stream": 16}
    assert report["cold"]["summary"]["errors"] == {"oversized_stream": 16}
    assert result.rss_mib < MAX_RSS_MIB
