"""A transcript is data, never authority (issue #27, item 1).

A forger edits a transcript to name their own host and rebuilds the hash chain (tests/forge.py):
``resume`` and ``replay --rerun`` must not send the API key there, nor anything at all without the
user confirming the URL. And transcripts are signed with this machine's key, so that such an edit
is reported, while an untouched transcript from here replays as signed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from tests.conftest import wizard_command
from tests.forge import read_records, write_rechained
from tests.recorder import Recorder
from wizard import playbook
from wizard.record import transcript
from wizard.record.transcript import Redactor, TranscriptWriter

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "transcripts" / "examples" / "1-kv-pressure-direct.ndjson"
KEY = "sk-forgery-canary-5b2e91"


def forged(tmp_path: Path, url: str) -> Path:
    """The example cut after its first measurement (so it resumes), every URL in it turned into
    ``url``, and re-chained: it verifies."""
    header, events = read_records(EXAMPLE)
    first = next(i for i, e in enumerate(events) if e["type"] == "measurement")
    text = json.dumps([header, events[: first + 1]]).replace(header["target"], url)
    header, events = json.loads(text)
    # Today's playbook, so that resume gets as far as the URLs whatever the example was walked on;
    # by this checkout's path (the example names the folder it was made in, which on another
    # machine is absent and on this one may hold another playbook).
    header["playbook_sha256"] = playbook.load().sha256
    header["playbook_path"] = str(ROOT / "wizard" / "playbook" / "vllm-latency.yaml")
    path = write_rechained(tmp_path / "forged.ndjson", header, events)
    transcript.load(path)  # the chain holds: it "verifies"
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120,
                          env={**os.environ, "VLLM_API_KEY": KEY}, stdin=subprocess.DEVNULL)  # fmt: skip


def keyed(server: Recorder) -> list[dict[str, str]]:
    return [h for h in server.seen if KEY in h.get("Authorization", "")]


@pytest.mark.parametrize("who", [("--auto",), ("--answers", "ANSWERS")])
def test_resume_of_a_forged_transcript_sends_nothing_and_says_how_to_confirm(
    recorder: Recorder, tmp_path: Path, who: tuple[str, ...]
) -> None:
    path = forged(tmp_path, recorder.url)
    answers = tmp_path / "answers.yaml"
    answers.write_text("{}\n")
    before = path.read_bytes()
    result = cli("resume", str(path), *(str(answers) if w == "ANSWERS" else w for w in who))
    assert keyed(recorder) == [] and recorder.seen == []
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard resume: error: {path} names {recorder.url}, which this command line did "
        "not: a transcript does not choose where requests and the API key go; pass --target "
        f"{recorder.url} to confirm"
    ]
    assert path.read_bytes() == before


def test_replay_rerun_of_a_forged_transcript_sends_nothing_without_a_terminal(
    recorder: Recorder, tmp_path: Path
) -> None:
    path = forged(tmp_path, recorder.url)
    result = cli("replay", str(path), "--rerun", "--lang", "zh")
    assert keyed(recorder) == [] and recorder.seen == []
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard replay：错误：{path} 记录了 {recorder.url}，而本次命令行没有给出：记录不能"
        f"决定请求和 API 密钥发往哪里；请传入 --target {recorder.url} 以确认"
    ]
    # What was shown before the refusal says the chain is no proof against this.
    assert "不能证明没有人故意改动并重建了哈希链" in result.stdout


def test_replay_rerun_sends_the_key_to_the_target_named_not_the_recorded_one(
    recorder: Recorder, tmp_path: Path
) -> None:
    """--target replaces the recorded target: the rounds (and the key) go where the user said."""
    path = forged(tmp_path, "http://127.0.0.1:9")  # discard port: never reached
    result = cli("replay", str(path), "--rerun", "--target", recorder.url)
    assert result.returncode == 0, result.stderr
    assert recorder.seen and len(keyed(recorder)) == len(recorder.seen)


def test_resume_with_the_target_named_again_goes_on(recorder: Recorder, tmp_path: Path) -> None:
    """Naming the transcript's own target confirms it (the key goes there: the user said so)."""
    path = forged(tmp_path, recorder.url)
    result = cli("resume", str(path), "--auto", "--target", recorder.url)
    assert keyed(recorder)  # /v1 requests carry it (/health, /metrics never do)
    assert "names" not in result.stderr


# Signatures: in-process, with this test's own config folder.


@pytest.fixture
def config_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    return home


def written(path: Path, events: int = 3) -> Path:
    writer = TranscriptWriter.create(path, {"target": "http://127.0.0.1:8000"}, Redactor([KEY]))
    for i in range(events):
        writer.append("note", None, {"text": f"event {i} Bearer {KEY}"})
    writer.close()
    return path


def test_a_transcript_written_here_is_signed_with_a_private_key(
    config_home: Path, tmp_path: Path
) -> None:
    path = written(tmp_path / "t.ndjson")
    key_file = config_home / "latency-wizard" / "transcript.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    secret = key_file.read_text().strip()
    assert secret not in path.read_text() and KEY not in path.read_text()
    assert transcript.load(path).signature == transcript.Signature("signed")
    header, events = read_records(path)
    from wizard.record import signing

    assert header["key_id"] == signing.local_key().id  # type: ignore[union-attr]
    assert all(isinstance(e["sig"], str) for e in events)


def test_a_rechained_edit_is_no_longer_signed(config_home: Path, tmp_path: Path) -> None:
    path = written(tmp_path / "t.ndjson")
    header, events = read_records(path)
    events[1]["data"]["text"] = "an edit"
    write_rechained(path, header, events)
    assert transcript.load(path).signature == transcript.Signature("mismatch", 3)
    write_rechained(path, {**header, "target": "http://127.0.0.1:1"}, events)
    assert transcript.load(path).signature == transcript.Signature("mismatch", 1)
    stripped = {k: v for k, v in header.items() if k not in ("key_id", "sig")}
    write_rechained(path, stripped, events)
    assert transcript.load(path).signature.status == "unsigned"


def test_another_machines_transcript_still_replays(
    config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = written(tmp_path / "t.ndjson")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "other-machine"))
    loaded = transcript.load(path)
    assert loaded.signature.status == "elsewhere" and len(loaded.events) == 3
    assert not (tmp_path / "other-machine").exists()  # reading makes no key
    replay = subprocess.run(wizard_command("replay", str(path)), capture_output=True, text=True,
                            timeout=60, env={**os.environ})  # fmt: skip
    assert replay.returncode == 0
    assert "not signed by this machine (signed with another key)" in replay.stdout


def test_replay_says_signed_and_what_the_chain_proves(config_home: Path, tmp_path: Path) -> None:
    path = written(tmp_path / "t.ndjson")
    old = subprocess.run(wizard_command("replay", str(EXAMPLE)), capture_output=True, text=True,
                         timeout=60, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
    assert old.returncode == 0  # an older transcript, without the fields, replays as before
    assert (
        "not signed: the hash chain proves only that nothing was damaged by accident" in old.stdout
    )
    for lang, said in (("en", "signed by this machine's key: unchanged since it was written here"),
                       ("zh", "由本机密钥签名：写下之后没有被改动")):  # fmt: skip
        replay = subprocess.run(wizard_command("replay", str(path), "--lang", lang), text=True,
                                capture_output=True, timeout=60, env={**os.environ, "COLUMNS": "300"})  # fmt: skip
        assert replay.returncode == 0 and said in replay.stdout


def test_a_resumed_transcript_stays_signed_only_when_all_of_it_was(
    config_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = written(tmp_path / "t.ndjson")
    writer = TranscriptWriter.resume(transcript.load(path), Redactor())
    writer.append("note", None, {"text": "after the resume"})
    writer.close()
    assert transcript.load(path).signature.status == "signed"
    header, events = read_records(path)
    write_rechained(path, header, [*events[:-1], {**events[-1], "data": {"text": "forged"}}])
    writer = TranscriptWriter.resume(transcript.load(path), Redactor())
    writer.append("note", None, {"text": "appended to a forgery"})  # not signed: it would bless it
    writer.close()
    assert transcript.load(path).signature == transcript.Signature("mismatch", 5)


@pytest.mark.parametrize("answer", ["y", "n"])
def test_at_a_terminal_the_transcripts_url_is_asked_and_never_gets_the_key(
    recorder: Recorder, tmp_path: Path, answer: str
) -> None:
    path = forged(tmp_path, recorder.url)
    env = {**os.environ, "VLLM_API_KEY": KEY, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm"}
    child = pexpect.spawn(sys.executable, ["-m", "wizard", "replay", str(path), "--rerun"],
                          env=env, encoding="utf-8", timeout=120, dimensions=(40, 200))  # fmt: skip
    child.expect(f"names {recorder.url} as the --target")
    child.expect(r"Send requests to .*, named only by the transcript\?")
    assert recorder.seen == []  # nothing before the answer
    child.send(answer + "\r")  # a whole word and Enter (prompts.py)
    if answer == "y":
        child.expect("the API key is not sent to")
    child.expect(pexpect.EOF)
    child.close()
    assert keyed(recorder) == []
    if answer == "y":
        assert child.exitstatus == 0 and recorder.seen  # reached, without the key
    else:
        assert child.exitstatus == 1 and recorder.seen == []
        assert f"stopped: nothing was sent to {recorder.url}" in child.before
