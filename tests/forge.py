"""Transcripts as a forger writes them: any events, re-chained so that they verify.

The hash chain (wizard/transcript.py, design §7) proves a file was not damaged by accident; anyone
can rebuild it. These are written independently of the code under test, from the contract.
"""

from __future__ import annotations

import hashlib
import json
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
