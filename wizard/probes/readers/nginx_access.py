"""nginx's access log, as far as a first token's hops show in it: ``$upstream_header_time``,
``$upstream_response_time``, ``$upstream_connect_time`` and ``$request_time`` per request.

The stock ``combined`` format carries none of them, so the log must use a format that writes
them as ``name=value`` pairs; both the variables' own names and the short names of the usual
timing format are read (``rt=``, ``uct=``, ``uht=``, ``urt=``; docs/cli.md shows one). A value
is seconds with millisecond resolution, ``-`` when nginx had none (no upstream), or a list when
nginx tried several upstreams (``0.002, 0.004``: each attempt's own time, so the request's is
their sum) or an internal redirect (``... : ...``). Only completion requests answered 200 count
when the line has a request line; the log's last lines are read (bounded memory).

Read by ``triage --nginx-access-log`` whole, and by the walk (``run --nginx-access-log``, the
demo's own nginx) around its round through the proxy (walk probe ``nginx-access``).
"""

from __future__ import annotations

import io
import re
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wizard.numbers import parse_float

FIELDS = {
    "request_time": ("request_time", "rt"),
    "upstream_connect_time": ("upstream_connect_time", "uct"),
    "upstream_header_time": ("upstream_header_time", "uht"),
    "upstream_response_time": ("upstream_response_time", "urt"),
}
PAIR = re.compile(r'(?<![\w$])(\w+)=("[^"]*"|\S+)')
REQUEST = re.compile(r'"[A-Z]+ (?P<path>\S+) HTTP/[\d.]+" (?P<status>\d{3})\b')
COMPLETIONS = ("/v1/completions", "/v1/chat/completions")
TAIL_LINES = 2000


@dataclass(frozen=True)
class Timings:
    """One request's times in seconds (None where the line had none)."""

    request_time: float | None
    upstream_connect_time: float | None
    upstream_header_time: float | None
    upstream_response_time: float | None


def seconds(value: str) -> float | None:
    """``0.123``, ``"0.002, 0.004"`` (attempts: summed), ``0.1 : 0.2`` (redirects: summed)."""
    parts = [p.strip() for p in re.split(r"[,:]", value.strip('"'))]
    numbers = [parse_float(p) for p in parts if p and p != "-"]
    if not numbers or any(n is None or n < 0 for n in numbers):
        return None
    return sum(n for n in numbers if n is not None)


def read_line(line: str) -> Timings | None:
    """The timings of one line, or None when it has none or is not an answered completion."""
    request = REQUEST.search(line)
    if request and (
        not request["path"].split("?")[0].endswith(COMPLETIONS) or request["status"] != "200"
    ):
        return None
    pairs = {name: value for name, value in PAIR.findall(line)}
    values = {
        field: next((seconds(pairs[n]) for n in names if n in pairs), None)
        for field, names in FIELDS.items()
    }
    if all(v is None for v in values.values()):
        return None
    return Timings(**values)


def read_path(path: str | Path) -> dict[str, Any]:
    """Each timing's mean over the completion requests in the log's last lines (ms)."""
    return _read(Path(path), 0)


def _read(path: Path, offset: int, last: int | None = None) -> dict[str, Any]:
    """The means over the completion requests in the lines from byte ``offset`` on (the last
    TAIL_LINES of them; of those, the ``last`` completions when given)."""
    with path.open("rb") as raw:
        raw.seek(offset)  # a byte offset: the text layer on top starts decoding there
        handle = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")
        lines = deque(handle, maxlen=TAIL_LINES)
        handle.detach()  # the file is closed once, by its own ``with``
    found = [t for t in (read_line(line) for line in lines) if t is not None]
    logged = len(found)
    if last is not None:
        found = found[-last:] if last > 0 else []
    summary: dict[str, Any] = {"file": str(path), "lines_read": len(lines), "logged": logged,
                               "requests": len(found)}  # fmt: skip
    for field in FIELDS:
        values = [getattr(t, field) for t in found if getattr(t, field) is not None]
        summary[f"{field}_ms"] = sum(values) / len(values) * 1000 if values else None
        summary[f"{field}_count"] = len(values)
    return summary


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe ``nginx-access`` (``run --nginx-access-log``): with ``mark``, where the log
    ends now; else the means over the lines nginx added since ``since`` (the mark's ``offset``),
    so a round through the proxy between the two is read alone. ``steady`` and ``cold``: the
    requests the round the walk kept sent; its last completions are that round's (a round its
    client could not time is measured again, and only the last attempt's facts are kept).
    Live traffic through the same nginx meanwhile is in them too, as it is in the engine's
    /metrics over the round (``logged`` says how many completions the log had since the mark,
    ``requests`` how many were read)."""
    if not ctx.nginx_access_log:
        return {"available": False, "why": "not_given"}
    path = Path(ctx.nginx_access_log)
    try:
        size = path.stat().st_size
    except OSError as exc:
        return {"available": False, "why": "unreadable", "file": str(path), "error": str(exc)}
    if params.get("mark"):
        return {"available": True, "file": str(path), "offset": size}
    since = params.get("since")
    # No mark (it failed), or a log rotated or cut since: its lines cannot be told apart.
    if not isinstance(since, int) or isinstance(since, bool) or since > size:
        return {"available": False, "why": "no_mark", "file": str(path)}
    counts = [n for n in (params.get("steady"), params.get("cold"))
              if isinstance(n, int) and not isinstance(n, bool)]  # fmt: skip
    kept = sum(counts) if len(counts) == 2 else None  # the round's facts, when it has them
    try:
        found = _read(path, since, kept)
    except OSError as exc:
        return {"available": False, "why": "unreadable", "file": str(path), "error": str(exc)}
    return {"available": True, "since": since, **found}
