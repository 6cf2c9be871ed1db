"""A transcript cut mid-write (issue #13, #15): without --salvage one line that names the remedy;
with it, the verified prefix is kept and what was lost is said. A full disk ends a walk in one
line and leaves a transcript that verifies."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import SimProcess, assert_walk_exit, wizard_command
from tests.text_checks import english_sentences
from wizard.record import transcript

EXAMPLE = (
    Path(__file__).resolve().parent.parent
    / "transcripts"
    / "examples"
    / "1-kv-pressure-direct.ndjson"
)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120)


def torn_copy(tmp_path: Path) -> tuple[Path, int, int]:
    """The example cut in the middle of a multi-byte character (a line with Chinese text), as a
    session killed mid-write leaves it: the path, the torn line's number, its bytes left."""
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    wide = "是".encode()
    index = max(i for i, line in enumerate(lines) if wide in line)
    cut = lines[index].index(wide) + 1
    path = tmp_path / "torn.ndjson"
    path.write_bytes(b"".join(lines[:index]) + lines[index][:cut])
    return path, index + 1, cut


def test_a_torn_last_line_names_salvage_and_salvage_keeps_the_rest(tmp_path: Path) -> None:
    path, torn_line, torn_bytes = torn_copy(tmp_path)
    kept = torn_line - 2  # the header and the torn line are no events
    for command in ("replay", "export"):
        refused = cli(command, str(path))
        assert refused.returncode == 1
        assert refused.stderr.strip().splitlines() == [
            f"latency-wizard {command}: error: {path}:{torn_line}: last line is truncated (the "
            f"session was cut mid-write); --salvage keeps the {kept} verified events before it"
        ]
    salvaged = f"salvaged {path}: kept {kept} verified events; line {torn_line} ({torn_bytes} bytes) not kept"
    replayed = cli("replay", str(path), "--salvage")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr.strip().splitlines() == [
        f"latency-wizard replay: {salvaged}: last line is truncated (the session was cut mid-write)"
    ]
    assert f"verified, {kept} events" in replayed.stdout
    exported = cli("export", str(path), "--salvage", "--format", "json")
    assert exported.returncode == 0, exported.stderr
    assert salvaged in exported.stderr
    assert json.loads(exported.stdout)["session"]["complete"] is False
    assert len(path.read_bytes().splitlines()) == torn_line  # replay and export change nothing


def test_a_torn_transcript_is_said_in_chinese(tmp_path: Path) -> None:
    """Issue #13 item 5: the refusal, the salvage line, replay's heading and the export's note
    of what was lost are Chinese under zh (they were English: the reasons came from the loader)."""
    path, torn_line, torn_bytes = torn_copy(tmp_path)
    kept = torn_line - 2
    zh = {**os.environ, "LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
    refused = subprocess.run(wizard_command("replay", str(path)), capture_output=True, text=True,
                             timeout=120, env=zh)  # fmt: skip
    assert refused.returncode == 1
    assert refused.stderr.strip().splitlines() == [
        f"latency-wizard replay：错误：{path}:{torn_line}：最后一行不完整（会话在写入中途被打断）；"
        f"--salvage 可保留它之前已验证的 {kept} 个事件"
    ]
    replayed = cli("replay", str(path), "--salvage", "--lang", "zh")
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stderr.strip().splitlines() == [
        f"latency-wizard replay：已抢救 {path}：保留了 {kept} 个已验证的事件；第 {torn_line} 行"
        f"（{torn_bytes} 字节）未保留：最后一行不完整（会话在写入中途被打断）"
    ]
    # The terminal's width wraps the heading where it may (a long temporary path): read unwrapped.
    unwrapped = "".join(replayed.stdout.split())
    assert f"{path}：哈希链已验证，{kept}个事件，目标http://" in unwrapped, replayed.stdout
    assert "（未完成：用'latency-wizardresume'继续）" in unwrapped, replayed.stdout
    text = cli("export", str(path), "--salvage", "--format", "text", "--lang", "zh").stdout
    assert f"（已抢救：第 {torn_line} 行（{torn_bytes} 字节）未保留：最后一行不完整" in text, text
    assert english_sentences(replayed.stdout) == [] and english_sentences(text) == []
    session = json.loads(cli("export", str(path), "--salvage", "--format", "json").stdout)[
        "session"
    ]
    assert session["salvaged_texts"]["en"] == session["salvaged"]  # the English as before


def test_a_torn_line_glued_to_later_writes_is_dropped_with_everything_after(tmp_path: Path) -> None:
    lines = EXAMPLE.read_bytes().splitlines(keepends=True)
    path = tmp_path / "glued.ndjson"
    # A full disk took line 6 half-written; when space came back the next writes went on after it.
    path.write_bytes(b"".join(lines[:5]) + lines[5][:30] + b"".join(lines[6:]))
    refused = cli("replay", str(path))
    assert refused.returncode == 1
    assert (
        f"{path}:6: not JSON (the file is damaged); --salvage keeps the 4 verified"
        in refused.stderr
    )
    loaded = transcript.load(path, salvage=True)
    assert len(loaded.events) == 4 and loaded.lost is not None
    assert (loaded.lost.from_line, loaded.lost.lines) == (6, len(lines) - 6)
    assert loaded.lost.describe().startswith(f"lines 6-{len(lines) - 1} (")


def test_an_edited_line_is_reported_not_offered_salvage(tmp_path: Path) -> None:
    lines = EXAMPLE.read_text().splitlines(keepends=True)
    lines[5] = lines[5].replace('"type":"', '"type":"x', 1)
    path = tmp_path / "edited.ndjson"
    path.write_text("".join(lines))
    refused = cli("replay", str(path))
    assert refused.stderr.strip() == (
        f"latency-wizard replay: error: {path}:6: line was edited (its hash does not match)"
    )


def kill_after(command: list[str], path: Path, lines: int, **popen: object) -> None:
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **popen
    )  # type: ignore[call-overload]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if path.exists() and len(path.read_bytes().splitlines()) >= lines:
            break
        time.sleep(0.01)
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_resume_salvage_sets_the_torn_tail_aside_and_completes(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    path = tmp_path / "walk.ndjson"
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    kill_after(wizard_command("run", "--target", healthy_sim.url, "--answers", str(answers),
                              "--transcript", str(path)), path, 6)  # fmt: skip
    torn = b'{"data":{"as":"direct","duration_s":4.35,"err'
    with path.open("ab") as handle:
        handle.write(torn)
    kept = len(transcript.load(path, salvage=True).events)
    refused = cli("resume", str(path), "--answers", str(answers), "--target", healthy_sim.url)
    assert refused.returncode == 1 and "--salvage keeps the" in refused.stderr
    resumed = cli(
        "resume", str(path), "--answers", str(answers), "--salvage", "--target", healthy_sim.url
    )
    assert_walk_exit(resumed, path)
    aside = path.with_name(path.name + ".torn")
    assert aside.read_bytes() == torn
    loaded = transcript.load(path)  # whole again: the session went on after the verified part
    note = loaded.events[kept]
    assert note["type"] == "note" and note["data"]["text"].startswith(
        f"salvaged: line {kept + 2} ("
    )
    assert str(aside) in note["data"]["text"]


def test_a_full_disk_ends_the_walk_in_one_line_and_the_transcript_verifies(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    path = tmp_path / "walk.ndjson"
    limit = 12_000  # the header and a few events fit; the baseline's results do not

    def small_disk() -> None:  # writes past the limit fail with EFBIG, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    result = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--auto", "--transcript", str(path)),
        capture_output=True, text=True, timeout=300, preexec_fn=small_disk,
    )  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    loaded = transcript.load(path)
    assert lines[0] == (
        f"latency-wizard run: error: cannot write to the transcript {path}: File too large; it is "
        f"kept up to event {len(loaded.events)}: free the space, then 'latency-wizard resume {path}'"
    )
    assert 0 < path.stat().st_size <= limit
