"""Transcripts as a forger writes them: any events, re-chained so that they verify.

The hash chain (wizard/record/transcript.py, design §7) proves a file was not damaged by accident; anyone
can rebuild it. These are written independently of the code under test, from the contract.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _canonical(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def rechained(header: dict[str, Any], events: list[dict[str, Any]]) -> str:
    """The NDJSON text of ``header`` and ``events`` with seq, prev and hash rebuilt."""
    lines = [_canonical(header)]
    for seq, event in enumerate(events, start=1):
        record = {k: v for k, v in event.items() if k != "hash"}
        record |= {"seq": seq, "prev": hashlib.sha256(lines[-1].encode()).hexdigest()}
        record["hash"] = hashlib.sha256(_canonical(record).encode()).hexdigest()
        lines.append(_canonical(record))
    return "\n".join(lines) + "\n"


def write_rechained(path: Path, header: dict[str, Any], events: list[dict[str, Any]]) -> Path:
    """``rechained`` written to ``path``."""
    path.write_text(rechained(header, events), encoding="utf-8")
    return path


def read_records(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A transcript's header and events as written (not verified)."""
    header, *events = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    return header, events


# What another version or a hand edit leaves where a value was expected, for the exhaustive sweep.
DROP = "drop"
WRONG_VALUES: tuple[Any, ...] = (None, "x", [], {}, 0, -1, [None], {"en": None}, True)


def key_paths(
    value: Any, depth: int = 4, prefix: tuple[Any, ...] = ()
) -> Iterator[tuple[Any, ...]]:
    """Every path into ``value`` (keys of mappings, the first item of lists) down to ``depth``."""
    if isinstance(value, dict):
        items: list[tuple[Any, Any]] = list(value.items())
    elif isinstance(value, list) and value:
        items = [(0, value[0])]
    else:
        return
    for key, inner in items:
        yield (*prefix, key)
        if len(prefix) + 1 < depth:
            yield from key_paths(inner, depth, (*prefix, key))


def single_edits(
    events: list[dict[str, Any]], values: tuple[Any, ...]
) -> Iterator[tuple[str, int, tuple[Any, ...], Any]]:
    """One edit per (event type, probe, key path) of ``events``, for each value (or DROP):
    (what it is, the event's index, the path into its data, the value)."""
    seen: set[tuple[str, tuple[Any, ...]]] = set()
    for index, event in enumerate(events):
        kind = event["type"]
        if kind == "probe_result":
            kind += f"/{event['data'].get('probe')}"
        for path in key_paths(event["data"]):
            shape = (kind, tuple(0 if isinstance(step, int) else step for step in path))
            if shape in seen:
                continue
            seen.add(shape)
            for value in values:
                yield kind, index, path, value


def edit(events: list[dict[str, Any]], index: int, path: tuple[Any, ...], value: Any) -> bool:
    """Apply one single edit in place; False when it cannot apply (a list item dropped)."""
    parent: Any = events[index]["data"]
    for step in path[:-1]:
        parent = parent[step]
    if isinstance(value, str) and value == DROP:
        if not isinstance(parent, dict):
            return False
        del parent[path[-1]]
    else:
        parent[path[-1]] = copy.deepcopy(value)
    return True
