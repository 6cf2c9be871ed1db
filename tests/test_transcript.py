"""The transcript contract: hash chain, fsync'd appends, 0600, masking at capture, tamper detection."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from wizard.record import transcript
from wizard.record.transcript import Redactor, TranscriptError, TranscriptWriter


def make(tmp_path: Path, events: int = 3, secrets: tuple[str, ...] = ()) -> Path:
    path = tmp_path / "t.ndjson"
    writer = TranscriptWriter.create(
        path, {"target": "http://x", "playbook_id": "p"}, Redactor(secrets)
    )
    for i in range(events):
        writer.append("note", "n", {"text": f"event {i}"})
    writer.close()
    return path


def test_round_trip_and_file_mode(tmp_path: Path) -> None:
    path = make(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    loaded = transcript.load(path)
    assert loaded.header["type"] == "header" and loaded.header["schema_version"] == 1
    assert loaded.header["target"] == "http://x" and "started_at" in loaded.header
    assert [e["seq"] for e in loaded.events] == [1, 2, 3]
    assert {"seq", "t", "type", "node", "data", "prev", "hash"} <= set(loaded.events[0])
    assert not loaded.complete


def test_never_overwrites(tmp_path: Path) -> None:
    path = make(tmp_path)
    with pytest.raises(TranscriptError, match="already exists"):
        TranscriptWriter.create(path, {}, Redactor())


def test_one_byte_edit_is_found_with_its_line(tmp_path: Path) -> None:
    path = make(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace("event 1", "event 7")
    path.write_text("".join(lines))
    with pytest.raises(TranscriptError, match=r":3: line was edited"):
        transcript.load(path)


def test_header_edit_breaks_the_chain(tmp_path: Path) -> None:
    path = make(tmp_path)
    text = path.read_text().replace("http://x", "http://y", 1)
    path.write_text(text)
    with pytest.raises(TranscriptError, match=r":2: chain broken"):
        transcript.load(path)


def test_removed_and_reordered_lines(tmp_path: Path) -> None:
    path = make(tmp_path, events=4)
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2] + lines[3:]))
    with pytest.raises(TranscriptError, match=r":3: chain broken"):
        transcript.load(path)
    path.write_text("".join([lines[0], lines[2], lines[1], *lines[3:]]))
    with pytest.raises(TranscriptError, match=r":2: chain broken"):
        transcript.load(path)


def test_truncated_last_line(tmp_path: Path) -> None:
    path = make(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:-20])
    with pytest.raises(TranscriptError, match=r":4: last line is truncated"):
        transcript.load(path)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "empty file"),
        (b"\x89PNG\r\n\x1a\n\x00\xff", "not UTF-8"),
        (b"hello\n", ":1: not a latency-wizard transcript header"),  # another file, not "damaged"
        (b'{"type": "event"}\n', "not a latency-wizard transcript header"),
        (b'{"type": "header", "schema_version": 99}\n', "newer than this tool"),
        (b"[1, 2]\n", "not a transcript record"),
    ],
)
def test_garbage_files(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "x.ndjson"
    path.write_bytes(content)
    with pytest.raises(TranscriptError, match=message):
        transcript.load(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="cannot read"):
        transcript.load(tmp_path / "nope.ndjson")


def test_secrets_are_masked_before_writing(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    writer = TranscriptWriter.create(path, {"target": "http://x"}, Redactor(["canary-secret-42"]))
    writer.append("note", None, {"text": "key canary-secret-42 leaked?", "headers": {"Authorization": "Bearer sk-abcdefgh12345"},
                                 "env": "OPENAI_API_KEY=sk-zzzzzzzzzz", "api_key": "plain-key-value"})  # fmt: skip
    writer.close()
    raw = path.read_text()
    for secret in ("canary-secret-42", "sk-abcdefgh12345", "sk-zzzzzzzzzz", "plain-key-value"):
        assert secret not in raw
    event = transcript.load(path).events[0]  # masking happens before hashing: still verifies
    assert event["data"]["text"] == "key *** leaked?"
    assert json.dumps(event).count("***") == 4


def test_resume_continues_the_chain(tmp_path: Path) -> None:
    path = make(tmp_path, events=2)
    writer = TranscriptWriter.resume(transcript.load(path), Redactor())
    writer.append("end", None, {})
    writer.close()
    loaded = transcript.load(path)
    assert [e["seq"] for e in loaded.events] == [1, 2, 3] and loaded.complete


def test_playbook_text_and_punctuation_after_a_token_survive(tmp_path: Path) -> None:
    from wizard import playbook

    explain = playbook.load().nodes["entry.api"].explain["en"]
    assert "`Authorization: Bearer <key>` on /v1 paths" in explain
    path = tmp_path / "t.ndjson"
    writer = TranscriptWriter.create(path, {"target": "http://x"}, Redactor(["wrong"]))
    writer.append(
        "node_enter", "entry.api", {"explain": explain, "facts": {"wrong_base_path": False}}
    )
    writer.append("note", None, {"text": "sent `Authorization: Bearer sk-abc123` (Bearer zz-9876543.) then "
                                         "`VLLM_API_KEY=sk-1`; Bearer authentication; export VLLM_API_KEY=..."})  # fmt: skip
    writer.append("note", None, {"headers": {"Authorization": "Bearer wrong"}, "repr": "{'Authorization': 'Bearer wrong'}",
                                 "text": "key wrong\nwrong"})  # fmt: skip
    writer.close()
    placeholder, sent, dump = (e["data"] for e in transcript.load(path).events)
    assert placeholder == {"explain": explain, "facts": {"wrong_base_path": False}}
    assert sent["text"] == ("sent `Authorization: Bearer ***` (Bearer ***.) then `VLLM_API_KEY=***`; "
                            "Bearer authentication; export VLLM_API_KEY=...")  # fmt: skip
    assert dump == {"headers": {"Authorization": "Bearer ***"}, "repr": "{'Authorization': 'Bearer ***'}",
                    "text": "key ***\n***"}  # fmt: skip


def test_a_key_with_a_quote_is_masked_in_the_json_text(tmp_path: Path) -> None:
    path = tmp_path / "t.ndjson"
    key = 'k"ey\\1'
    writer = TranscriptWriter.create(path, {"target": "http://x"}, Redactor([key]))
    writer.append("note", None, {"text": f"the key is {key}."})
    writer.close()
    assert transcript.load(path).events[0]["data"]["text"] == "the key is ***."
