"""The transcript (design §7, a contract): append-only NDJSON with a hash chain.

Line 1 is a header ``{type: "header", schema_version, tool_version, playbook_id,
playbook_sha256, started_at, target}``. Every later line is an event ``{seq, t, type, node, data,
prev, hash}``: ``prev`` is the sha256 of the previous line's text and ``hash`` the sha256 of the
event's own canonical JSON without ``hash``, so a one-byte edit anywhere, a dropped or reordered
line, or a torn last line is found on load. Each event is flushed and fsynced; the file is 0600.
Secrets are masked before anything is written.

The chain has no key, so it finds accidental damage only: an edit made on purpose can rebuild it.
So every line is also signed with this machine's key (signing.py): the header carries ``key_id``
and ``sig``, each event ``sig`` (inside what ``hash`` covers, so the chain reads as before). On
load, ``signature`` says whether this machine signed the file as it is now. Transcripts without
these fields (older ones, another tool's) load as before, reported unsigned.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard import __version__
from wizard.auth import MASK, USERINFO, secret_pattern
from wizard.errors import WizardError
from wizard.files import read_bytes
from wizard.i18n.words import texts
from wizard.record import event_shapes, safejson, signing

SCHEMA_VERSION = 1
# A whole walk is ~400 KB (transcripts/examples); a transcript 160 times that is none of ours.
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024
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
    USERINFO,
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
    lost: Lost | None = None  # what a salvaging load left out
    signature: Signature = field(default_factory=lambda: Signature("unsigned"))

    @property
    def complete(self) -> bool:
        """True when the session reached its ``end`` event."""
        return bool(self.events) and self.events[-1]["type"] == "end"


class TranscriptWriter:
    """Appends events; one instance per session (new or resumed)."""

    def __init__(
        self,
        path: Path,
        redactor: Redactor,
        last_line: str,
        next_seq: int,
        key: signing.Key | None = None,
    ) -> None:
        self.path = path
        self.redact = redactor
        self._last_line = last_line
        self._seq = next_seq
        self._key = key  # None: the events are written unsigned
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)

    @classmethod
    def create(cls, path: Path, header: dict[str, Any], redactor: Redactor) -> TranscriptWriter:
        """Start a new transcript at ``path`` (never overwrites an existing file)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        record = {"type": "header", "schema_version": SCHEMA_VERSION, "tool_version": __version__,
                  "started_at": now_iso(), **header}  # fmt: skip
        key = signing.local_key(create=True)
        masked: dict[str, Any] = json.loads(redactor(_canonical(record)))
        if key is not None:  # signed as written: masked first, so the signature is of the file
            masked["key_id"] = key.id
            masked["sig"] = key.sign(_canonical(masked))
        line = _canonical(masked)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise TranscriptError.said("transcript.exists", path=path) from None
        try:
            os.write(fd, (line + "\n").encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        return cls(path, redactor, line, 1, key)

    @classmethod
    def resume(cls, transcript: Transcript, redactor: Redactor) -> TranscriptWriter:
        """Continue a verified transcript where it stopped. Signed on only when this machine
        signed all of it: a new event's signature covers everything before it (the chain)."""
        lines = transcript.path.read_text(encoding="utf-8").splitlines()
        key = signing.local_key() if transcript.signature.status == SIGNED else None
        return cls(transcript.path, redactor, lines[-1], len(transcript.events) + 1, key)

    def append(self, kind: str, node: str | None, data: dict[str, Any]) -> dict[str, Any]:
        """Write one event (masked, chained, fsynced) and return it as written."""
        event = {"seq": self._seq, "t": now_iso(), "type": kind, "node": node, "data": data,
                 "prev": _sha256(self._last_line)}  # fmt: skip
        masked: dict[str, Any] = json.loads(self.redact(_canonical(event)))
        if self._key is not None:
            masked["sig"] = self._key.sign(_canonical(masked))
        masked["hash"] = _sha256(_canonical(masked))
        line = _canonical(masked)
        size = os.fstat(self._fd).st_size
        try:
            _write_all(self._fd, (line + "\n").encode("utf-8"))
            os.fsync(self._fd)
        except OSError as exc:
            # A full disk can take part of a line: cut it off, so the file still verifies.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, size)
            raise TranscriptError.os_said(
                "transcript.cannot_write", exc, path=self.path, seq=self._seq - 1
            ) from None
        self._last_line = line
        self._seq += 1
        return masked

    def close(self) -> None:
        """Release the file."""
        os.close(self._fd)


def _write_all(fd: int, data: bytes) -> None:
    # os.write may write less than asked (a disk filling up); the rest follows or raises.
    while data:
        data = data[os.write(fd, data) :]


def set_aside_lost(transcript: Transcript) -> Path:
    """Move a salvaged transcript's lost tail to ``FILE.torn`` (kept, never overwritten) and cut
    the file back to its verified prefix, so that a resumed session appends where it verifies."""
    lost = transcript.lost
    if lost is None:
        raise ValueError(f"{transcript.path} was loaded whole: nothing to set aside")
    aside = transcript.path.with_name(transcript.path.name + ".torn")
    with transcript.path.open("rb+") as handle:
        handle.seek(lost.kept_bytes)
        tail = handle.read()
        try:
            fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            raise TranscriptError.said("transcript.aside_exists", aside=aside) from None
        try:
            _write_all(fd, tail)
            os.fsync(fd)
        finally:
            os.close(fd)
        handle.truncate(lost.kept_bytes)
    return aside


def load(path: Path | str, salvage: bool = False) -> Transcript:
    """Read and verify a transcript; raise TranscriptError naming the first bad line.

    With ``salvage`` a damaged tail (a last line cut mid-write, a torn line after a full disk,
    anything after the first line that does not verify) is left out instead: the result keeps the
    verified prefix and says in ``lost`` what was dropped. A bad header cannot be salvaged.
    """
    path = Path(path)
    try:
        raw = read_bytes(path, MAX_TRANSCRIPT_BYTES, TranscriptError)
    except OSError as exc:
        raise TranscriptError.cannot_read(path, exc) from None
    if not raw:
        raise TranscriptError.said("transcript.empty", path=path)
    pieces = raw.split(b"\n")
    torn = pieces.pop()  # what follows the last newline: empty unless a write was cut short
    if not pieces:
        raise _Damage("transcript.torn").at(path, 1)
    try:
        first = _decode(pieces[0])
        header = _parse(first)
    except _Damage as exc:
        # A first line that is no JSON is another kind of file more often than a damaged one.
        first_line = _Damage("transcript.not_header") if exc.key == "transcript.not_json" else exc
        raise first_line.at(path, 1) from None
    version = header.get("schema_version")
    if header.get("type") != "header" or not isinstance(version, int) or isinstance(version, bool):
        raise _Damage("transcript.not_header").at(path, 1)
    if version > SCHEMA_VERSION:
        raise _Damage("transcript.newer", version=header["schema_version"]).at(path, 1)
    if (why := event_shapes.header_problem(header)) is not None:
        raise _Damage("transcript.header_shape", why=why).at(path, 1)
    events: list[dict[str, Any]] = []
    previous, kept_bytes, damage = first, len(pieces[0]) + 1, None
    for number, piece in enumerate(pieces[1:], start=2):
        try:
            line = _decode(piece)
            events.append(_verified_event(_parse(line), number, previous))
        except _Damage as exc:
            damage = Lost(number, len(pieces) - number + 1 + bool(torn), len(raw) - kept_bytes,
                          kept_bytes, exc)  # fmt: skip
            break
        previous, kept_bytes = line, kept_bytes + len(piece) + 1
    if damage is None and torn:
        damage = Lost(len(pieces) + 1, 1, len(torn), kept_bytes, _Damage("transcript.torn"))
    if damage is not None and not salvage:
        # What a cut write leaves is pointed to the remedy; an edit is only reported.
        hint = (texts("transcript.salvage_hint", n=len(events))
                if damage.why.key in CUT_WRITES else "")  # fmt: skip
        raise damage.why.at(path, damage.from_line, hint)
    return Transcript(path, header, events, damage, _signature(header, events))


SIGNED, UNSIGNED, ELSEWHERE, MISMATCH = "signed", "unsigned", "elsewhere", "mismatch"


@dataclass(frozen=True)
class Signature:
    """Whether this machine's key signed a transcript as it is: ``status`` is SIGNED, UNSIGNED
    (no signature: an older transcript, another tool's, or one whose signature was removed),
    ELSEWHERE (signed with a key this machine does not have) or MISMATCH (``line`` is the first
    line whose signature does not match: edited, or appended elsewhere, after it was signed)."""

    status: str
    line: int | None = None

    def said(self) -> dict[str, str]:
        """One line for the operator, in every language: what the signature and the chain prove."""
        return texts(f"transcript.signature.{self.status}", line=self.line)


def _signature(header: dict[str, Any], events: list[dict[str, Any]]) -> Signature:
    if "key_id" not in header:
        return Signature(UNSIGNED)
    key = signing.local_key()
    if key is None or header["key_id"] != key.id:
        return Signature(ELSEWHERE)
    for number, record in enumerate([header, *events], start=1):
        body = {k: v for k, v in record.items() if k not in ("hash", "sig")}
        if not key.verifies(_canonical(body), record.get("sig")):
            return Signature(MISMATCH, number)
    return Signature(SIGNED)


# A line cut mid-write ends the file, or (after a full disk freed up) is glued to the next write.
CUT_WRITES = ("transcript.torn", "transcript.not_utf8", "transcript.not_json")


class _Damage(Exception):
    """Why one line cannot be trusted, in every language (load adds the file and line)."""

    def __init__(self, key: str, **values: Any) -> None:
        self.key, self.texts = key, texts(key, **values)
        super().__init__(self.texts["en"])

    def at(self, path: Path, line: int, hint: dict[str, str] | str = "") -> TranscriptError:
        """The one-line error for this damage at ``path:line``."""
        return TranscriptError.said("transcript.line", path=path, line=line, reason=self.texts,
                                    hint=hint)  # fmt: skip


@dataclass(frozen=True)
class Lost:
    """What ``load(..., salvage=True)`` left out: every line from the first that failed."""

    from_line: int
    lines: int
    bytes: int
    kept_bytes: int  # the verified prefix's length: where a resumed session continues
    why: _Damage  # why the first line left out was refused

    def said(self) -> dict[str, str]:
        """One line for the operator, in every language."""
        last = self.from_line + self.lines - 1
        span = (texts("transcript.line_span", n=self.from_line) if last == self.from_line
                else texts("transcript.lines_span", first=self.from_line, last=last))  # fmt: skip
        return texts("transcript.lost", span=span, bytes=self.bytes, reason=self.why.texts)

    def describe(self) -> str:
        """The line in English."""
        return self.said()["en"]


def _verified_event(event: dict[str, Any], number: int, previous: str) -> dict[str, Any]:
    recorded = event.pop("hash", None)
    if recorded != _sha256(_canonical(event)):
        raise _Damage("transcript.edited")
    event["hash"] = recorded
    if event.get("prev") != _sha256(previous):
        raise _Damage("transcript.chain")
    if event.get("seq") != number - 1:
        raise _Damage("transcript.seq", expected=number - 1, found=str(event.get("seq"))[:40])
    _check_envelope(event)
    return event


# design §7: every event's envelope. A chain that verifies proves no accident, not the origin: a
# transcript edited and re-chained, or written by another tool, is checked before it is rendered.
_ENVELOPE = {"t": str, "type": str, "data": dict}


def _check_envelope(event: dict[str, Any]) -> None:
    for key, kind in _ENVELOPE.items():
        if not isinstance(event.get(key), kind):
            raise _Damage("transcript.field", field=key)
    if event.get("node") is not None and not isinstance(event["node"], str):
        raise _Damage("transcript.node")


def _decode(piece: bytes) -> str:
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        raise _Damage("transcript.not_utf8") from None


def _parse(line: str) -> dict[str, Any]:
    try:
        value = safejson.loads(line)
    except ValueError:  # also nesting too deep and integers too long
        raise _Damage("transcript.not_json") from None
    if not isinstance(value, dict):
        raise _Damage("transcript.not_record")
    return value
