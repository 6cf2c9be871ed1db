"""The transcript (design §7, a contract): append-only NDJSON with a hash chain.

Line 1 is a header ``{type: "header", schema_version, tool_version, playbook_id,
playbook_sha256, started_at, target}``. Every later line is an event ``{seq, t, type, node, data,
prev, hash}``: ``prev`` is the sha256 of the previous line's text and ``hash`` the sha256 of the
event's own canonical JSON without ``hash``, so a one-byte edit anywhere, a dropped or reordered
line, or a torn last line is found on load. Each event is flushed and fsynced; the file is 0600.
Secrets are masked before anything is written.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard import __version__, safejson
from wizard.auth import MASK, secret_pattern
from wizard.errors import WizardError

SCHEMA_VERSION = 1
# Bearer tokens and obvious key assignments are masked even when nobody told us the key.
# A token ends where a header value or a word ends: at whitespace, a quote, a backtick, an angle
# bracket or a backslash (a JSON escape follows), and sentence punctuation at its end is not part
# of it, so `Bearer abc123`, "Bearer abc123." and "(Bearer abc123)" keep their closing characters.
# A placeholder is no secret: `<key>` and `...` do not start a token, so the playbook's
# `Authorization: Bearer <key>` is shown as written.
_DELIMITERS = r"\s\"'`<>\\"
_PUNCTUATION = r".,;:!?)\]}"
_TOKEN = rf"[^{_DELIMITERS}{_PUNCTUATION}](?:[^{_DELIMITERS}]*[^{_DELIMITERS}{_PUNCTUATION}])?"
# A bare "bearer" (no Authorization before it) is prose as often as a header: "Bearer
# authentication" is a word, so there the token must be at least 8 characters of RFC 6750's token
# alphabet with one that is not a letter (a digit, - _ ~ + / =), as real tokens have.
_B64 = r"A-Za-z0-9._~+/=-"
_BARE_TOKEN = rf"(?=[{_B64}]*[0-9_~+/=-])[A-Za-z0-9_~+/=-][{_B64}]{{6,}}[A-Za-z0-9_~+/=-]"
DEFAULT_SECRET_PATTERNS = (
    r"(?i)(authorization['\"]?\s*[:=]\s*['\"]?bearer\s+)" + _TOKEN,
    r"(?i)(\bbearer\s+)" + _BARE_TOKEN,
    r"(?i)((?:api[_-]?key|VLLM_API_KEY|OPENAI_API_KEY)['\"]?\s*[:=]\s*['\"]?)" + _TOKEN,
)


class TranscriptError(WizardError):
    """A transcript that cannot be trusted or read; the message names the line."""


def now_iso() -> str:
    """The current UTC time, ISO-8601 with milliseconds."""
    return (
        datetime.datetime.now(datetime.UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


class Redactor:
    """Masks secrets (known values and configured patterns) in text before it is stored."""

    def __init__(
        self, secrets: Iterable[str | None] = (), patterns: Iterable[str] = DEFAULT_SECRET_PATTERNS
    ):
        self.secrets = [s for s in secrets if s]
        # Each key as it appears in the text we mask (canonical JSON): raw, and JSON-escaped when a
        # quote or backslash in it makes the two differ. Which occurrences count: auth.secret_pattern.
        forms = {
            form for s in self.secrets for form in (s, json.dumps(s, ensure_ascii=False)[1:-1])
        }
        self.secret_patterns = [
            secret_pattern(form) for form in sorted(forms, key=len, reverse=True)
        ]
        self.patterns = [re.compile(p) for p in patterns]

    def __call__(self, text: str) -> str:
        for secret in self.secret_patterns:
            text = secret.sub(lambda _: MASK, text)
        for pattern in self.patterns:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        return text


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _canonical(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


@dataclass
class Transcript:
    """A loaded, verified transcript."""

    path: Path
    header: dict[str, Any]
    events: list[dict[str, Any]]

    @property
    def complete(self) -> bool:
        """True when the session reached its ``end`` event."""
        return bool(self.events) and self.events[-1]["type"] == "end"


class TranscriptWriter:
    """Appends events; one instance per session (new or resumed)."""

    def __init__(self, path: Path, redactor: Redactor, last_line: str, next_seq: int) -> None:
        self.path = path
        self.redact = redactor
        self._last_line = last_line
        self._seq = next_seq
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    @classmethod
    def create(cls, path: Path, header: dict[str, Any], redactor: Redactor) -> TranscriptWriter:
        """Start a new transcript at ``path`` (never overwrites an existing file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"type": "header", "schema_version": SCHEMA_VERSION, "tool_version": __version__,
                  "started_at": now_iso(), **header}  # fmt: skip
        line = redactor(_canonical(record))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise TranscriptError(f"{path} already exists; choose another --transcript") from None
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cls(path, redactor, line, 1)

    @classmethod
    def resume(cls, transcript: Transcript, redactor: Redactor) -> TranscriptWriter:
        """Continue a verified transcript where it stopped."""
        lines = transcript.path.read_text(encoding="utf-8").splitlines()
        return cls(transcript.path, redactor, lines[-1], len(transcript.events) + 1)

    def append(self, kind: str, node: str | None, data: dict[str, Any]) -> dict[str, Any]:
        """Write one event (masked, chained, fsynced) and return it as written."""
        event = {"seq": self._seq, "t": now_iso(), "type": kind, "node": node, "data": data,
                 "prev": _sha256(self._last_line)}  # fmt: skip
        masked: dict[str, Any] = json.loads(self.redact(_canonical(event)))
        masked["hash"] = _sha256(_canonical(masked))
        line = _canonical(masked)
        os.write(self._fd, (line + "\n").encode("utf-8"))
        os.fsync(self._fd)
        self._last_line = line
        self._seq += 1
        return masked

    def close(self) -> None:
        """Release the file."""
        os.close(self._fd)


def load(path: Path | str) -> Transcript:
    """Read and verify a transcript; raise TranscriptError naming the first bad line."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc.strerror}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise TranscriptError(f"{path}: not UTF-8 text (is this a transcript?)") from None
    if not text:
        raise TranscriptError(f"{path}: empty file (is this a transcript?)")
    lines = text.split("\n")
    if lines[-1] != "":
        raise TranscriptError(
            f"{path}:{len(lines)}: last line is truncated (the session was cut mid-write)"
        )
    lines = lines[:-1]
    header = _parse_line(path, 1, lines[0])
    version = header.get("schema_version")
    if header.get("type") != "header" or not isinstance(version, int) or isinstance(version, bool):
        raise TranscriptError(f"{path}:1: not a latency-wizard transcript header")
    if version > SCHEMA_VERSION:
        raise TranscriptError(
            f"{path}:1: schema_version {header['schema_version']} is newer than this tool"
        )
    events = []
    for number, line in enumerate(lines[1:], start=2):
        event = _parse_line(path, number, line)
        recorded = event.pop("hash", None)
        if recorded != _sha256(_canonical(event)):
            raise TranscriptError(f"{path}:{number}: line was edited (its hash does not match)")
        event["hash"] = recorded
        if event.get("prev") != _sha256(lines[number - 2]):
            raise TranscriptError(
                f"{path}:{number}: chain broken (a line before it was edited, removed or reordered)"
            )
        if event.get("seq") != number - 1:
            raise TranscriptError(
                f"{path}:{number}: expected seq {number - 1}, found {event.get('seq')}"
            )
        _check_envelope(path, number, event)
        events.append(event)
    return Transcript(path, header, events)


# design §7: every event's envelope. A chain that verifies proves no accident, not the origin: a
# transcript edited and re-chained, or written by another tool, is checked before it is rendered.
_ENVELOPE = {"t": str, "type": str, "data": dict}


def _check_envelope(path: Path, number: int, event: dict[str, Any]) -> None:
    for key, kind in _ENVELOPE.items():
        if not isinstance(event.get(key), kind):
            raise TranscriptError(f"{path}:{number}: event field '{key}' is missing or malformed")
    if event.get("node") is not None and not isinstance(event["node"], str):
        raise TranscriptError(f"{path}:{number}: event field 'node' is malformed")


def _parse_line(path: Path, number: int, line: str) -> dict[str, Any]:
    try:
        value = safejson.loads(line)
    except ValueError:  # also nesting too deep and integers too long
        raise TranscriptError(f"{path}:{number}: not JSON (the file is damaged)") from None
    if not isinstance(value, dict):
        raise TranscriptError(f"{path}:{number}: not a transcript record")
    return value
