"""What in a request body changes from one request to the next, and where it sits in the prompt.

vLLM's prefix cache hashes a prompt's full blocks from its start, each with the hash of the block
before it (``wizard/sim/prefix_cache.py``): two prompts share cached blocks exactly as far as
their tokens agree from the first one. A part that differs per request (a timestamp or a request
id in the system prompt) therefore ends the shared prefix where it stands: at the start, nothing
is shared however long the rest is. The incident's body (``run --request-body``) is one request,
so what varies is read from its text: a date, a time, a UUID, an epoch number or a labelled id.

Pure: no clock but the fresh value's, no I/O.
"""

from __future__ import annotations

import copy
import re
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

# What a service writes per request into a prompt, most specific first.
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("timestamp", re.compile(
        r"\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2}| ?UTC)?")),
    ("uuid", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                        r"[0-9a-fA-F]{12}\b")),
    ("request id", re.compile(r"\b(?:request|req|trace|session)[ _-]?id\s*[:=]\s*[\w-]+", re.I)),
    ("epoch time", re.compile(r"\b1[5-9]\d{8}(?:\d{3})?\b")),
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("time", re.compile(r"\b\d{1,2}:\d{2}:\d{2}\b")),
)  # fmt: skip


@dataclass(frozen=True)
class VaryingPart:
    """The first per-request value in a prompt: its kind, its text, and how far in it stands."""

    kind: str
    text: str
    word_index: int  # words of the prompt before it (all messages' text, in order)
    words: int  # words of the whole prompt

    def to_facts(self) -> dict[str, Any]:
        return {
            "varying_kind": self.kind,
            "varying_text": self.text,
            "varying_word": self.word_index,
            "prompt_words": self.words,
            # Of the prompt, the share after the varying part: what the cache cannot serve.
            "varying_share_after": round(1 - self.word_index / self.words, 3)
            if self.words
            else None,
        }


def texts(body: dict[str, Any]) -> list[str]:
    """The prompt's texts in the order the model reads them (a prompt, or each message's text)."""
    if isinstance(body.get("prompt"), str):
        return [body["prompt"]]
    found = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found += [str(p["text"]) for p in content
                      if isinstance(p, dict) and isinstance(p.get("text"), str)]  # fmt: skip
    return found


def find_varying(body: dict[str, Any]) -> VaryingPart | None:
    """The varying part that stands first in the prompt (the one that ends its shared prefix)."""
    whole = "\n".join(texts(body))
    best: tuple[int, str, str] | None = None
    for kind, pattern in PATTERNS:
        match = pattern.search(whole)
        if match is not None and (best is None or match.start() < best[0]):
            best = (match.start(), kind, match.group(0))
    if best is None:
        return None
    start, kind, text = best
    return VaryingPart(kind, text, len(whole[:start].split()), len(whole.split()))


def fresh_value(kind: str) -> str:
    """A value of the kind as the next request would carry it (now, or a new id)."""
    if kind in ("timestamp", "date", "time", "epoch time"):
        now = datetime.now(UTC)
        stamp = {"timestamp": now.isoformat(timespec="microseconds"),
                 "date": now.date().isoformat(), "time": now.strftime("%H:%M:%S"),
                 "epoch time": str(int(now.timestamp() * 1000))}[kind]  # fmt: skip
        return f"{stamp} {secrets.token_hex(3)}"  # two requests in one second still differ
    return secrets.token_hex(8)


def with_fresh_part(body: dict[str, Any], part: VaryingPart, at_end: bool) -> dict[str, Any]:
    """A copy of ``body`` as the next request: its varying part a fresh value, where it stands
    (``at_end`` False) or taken out and put after the whole prompt (True)."""
    out = copy.deepcopy(body)
    value = fresh_value(part.kind)
    slots = _text_slots(out)
    for holder, key in slots:
        if part.text in holder[key]:
            holder[key] = holder[key].replace(part.text, "" if at_end else value, 1)
            break
    if at_end and slots:
        holder, key = slots[-1]
        holder[key] = f"{holder[key]}\n{value}"
    return out


def _text_slots(body: dict[str, Any]) -> list[tuple[dict[str, Any], str]]:
    """Where the prompt's texts live in the body, in reading order: (the dict, its key)."""
    if isinstance(body.get("prompt"), str):
        return [(body, "prompt")]
    slots: list[tuple[dict[str, Any], str]] = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            slots.append((message, "content"))
        elif isinstance(content, list):
            slots += [(p, "text") for p in content
                      if isinstance(p, dict) and isinstance(p.get("text"), str)]  # fmt: skip
    return slots
