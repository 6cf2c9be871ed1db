"""JSON from outside (a server's events and bodies, a transcript from another machine), decoded
within bounds.

``json.loads`` recurses once per nesting level (deep input raises ``RecursionError``, or worse when
the stack is already deep) and converts an integer of any length (past 4,300 digits it raises a
plain ``ValueError``; below that it spends quadratic time). Here both are refused up front with a
``ValueError``, which callers already treat as "not JSON".
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64  # the deepest thing the wizard reads (a transcript event) nests about 8 levels
MAX_INT_DIGITS = 40
# Strings are skipped before brackets are counted; possessive so an unclosed quote costs one pass.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')
_BRACKETS = re.compile(r"[\[\]{}]")


def loads(text: str | bytes) -> Any:
    """Decode JSON; raise ValueError for invalid, too deep or too long-numbered input."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # UnicodeDecodeError is a ValueError
    # Few brackets cannot nest deeply: the common case never pays for the scan.
    if text.count("[") + text.count("{") > MAX_DEPTH and _depth(text) > MAX_DEPTH:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels")
    if text.startswith("\ufeff"):  # what json.loads says before it decodes
        raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    return _DECODER.decode(text)


def _depth(text: str) -> int:
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub("", text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _int(digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer longer than {MAX_INT_DIGITS} digits")
    return int(digits)


# json.loads(text, parse_int=_int) built a decoder on every call: a third of its time on a
# server's event, which the client decodes once per token.
_DECODER = json.JSONDecoder(parse_int=_int)
