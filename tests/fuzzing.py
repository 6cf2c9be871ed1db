"""Mutations of the project's own fixtures, for the property-based fuzz suite (issue #15).

A reader's real input is almost right: a log pasted with a line cut, a config with one brace too
many, a metrics dump with a number past any limit. So each example starts from a fixture (or,
sometimes, from random text) and applies a few mutations: spans deleted, repeated or swapped,
hostile tokens (huge numbers, NaN, control characters, deep brackets, invalid UTF-8) and lines of
other fixtures spliced in; one mutation in ten is one of issue #27's hostile shapes (a line far past
the readers' bound, a YAML alias bomb, a piece repeated into a flood). Hypothesis shrinks a failure
to the fewest, smallest mutations.

``WIZARD_FUZZ_EXAMPLES`` sets the examples per reader (default: a short run for the test command);
``benchmarks/results/fuzz.md`` records the long run.
"""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FIXTURES = Path(__file__).parent / "fixtures"
EXAMPLES = int(os.environ.get("WIZARD_FUZZ_EXAMPLES", "25"))

# The short run replays the same examples every time (CI must not fail at random); a long run
# (WIZARD_FUZZ_EXAMPLES set) explores. No example database: the worktree stays clean.
# Per example, wall time. The long run (benchmarks/fuzz_long.py) sets 0, no deadline: on a shared
# machine at nice 19 an example's wall time is mostly the load's, so it bounds CPU time instead.
DEADLINE_S = float(os.environ.get("WIZARD_FUZZ_DEADLINE_S", "2"))

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=timedelta(seconds=DEADLINE_S) if DEADLINE_S else None,
    derandomize="WIZARD_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Every class of hostile value the issue lists, as text.
HOSTILE = (
    "9" * 5000,  # past int()'s 4,300-digit limit
    "7" * 60_000,  # a quadratic pattern over this takes minutes
    "99999999999999999999",  # past int64
    "1e999", "-1e999", "NaN", "nan", "+Inf", "-Inf", "inf", "-1", "-0", "0", "0.0", "1.2.3", "..",
    "²", "٣", "\x00", "\x1b[31m", "\x1b]0;title\x07", "\r", "\t", "\n", "\n\n", "\ufffd", "\u2028",
    "{" * 300, "[" * 300, "}" * 50, "]" * 50, "(" * 50, '"', "'", "\\", "${VAR}", "*", "?",
    "None", "null", "true", "[]", "{}", "x" * 3000,
)  # fmt: skip
HOSTILE_BYTES = (b"\xff", b"\xfe\xff", b"\xc3", b"\xe2\x82", b"\x80\x80", b"\xed\xa0\x80")
# Issue #27's shapes, one mutation in ten: a line far past the readers' bound (64 Ki characters)
# made of what a pattern may retry on, a YAML alias bomb, a piece repeated thousands of times
# (an event flood in an SSE stream, a line flood in a log).
LONG_RUNS = ("a", " ", "9", "a ", ": 1 ", "Avg time/tok ", "INFO ", ") INFO ", "x(a pid=1) ", "[",
             "(", "{", "\x00", "\t", "data: ", "&a ", "é", "KV cache ", "Free memory on device ")  # fmt: skip
MAX_FLOOD_CHARS = 300_000


def alias_bomb(depth: int, width: int, indent: str) -> str:
    """A "billion laughs" of ``depth`` levels of ``width`` aliases each, as YAML list items."""
    rows = [f"{indent}- &l0 [{', '.join(['lol'] * width)}]\n"]
    for level in range(1, depth):
        rows.append(f"{indent}- &l{level} [{', '.join([f'*l{level - 1}'] * width)}]\n")
    return "".join(rows)


@st.composite
def heavy(draw: st.DrawFn, text: str, at: int, end: int) -> str:
    """One of issue #27's hostile shapes, put into ``text`` at ``at``."""
    kind = draw(st.sampled_from(("longline", "bomb", "flood")))
    if kind == "longline":
        run = draw(st.sampled_from(LONG_RUNS))
        chars = draw(st.integers(1_000, 70_000))  # around the 64 Ki line bound
        return text[:at] + (run * (chars // len(run) + 1))[:chars] + text[at:]
    if kind == "bomb":
        depth, width = draw(st.integers(2, 9)), draw(st.integers(2, 10))
        bomb = alias_bomb(depth, width, draw(st.sampled_from(("", "  ", "    "))))
        return text[:at] + ("\n" if at else "") + bomb + text[at:]
    piece = text[at:end] or "\n"
    times = min(draw(st.integers(100, 20_000)), MAX_FLOOD_CHARS // len(piece))
    return text[:end] + piece * times + text[end:]


def fixture_texts(*patterns: str) -> list[str]:
    """The text of every fixture matching ``patterns`` (globs under tests/fixtures)."""
    paths = sorted({p for pattern in patterns for p in FIXTURES.glob(pattern) if p.is_file()})
    assert paths, patterns
    return [p.read_text(encoding="utf-8", errors="replace") for p in paths]


@st.composite
def mutated(draw: st.DrawFn, seeds: Sequence[str], tokens: Sequence[str] = ()) -> str:
    """A seed (or random text), then up to eight mutations."""
    if draw(st.integers(0, 9)) == 0:
        text = draw(st.text(max_size=200))
    else:
        text = draw(st.sampled_from(seeds))
    lines = [line for seed in seeds for line in seed.splitlines(keepends=True)]
    pieces = st.one_of(
        st.sampled_from(HOSTILE),
        st.sampled_from(tokens or HOSTILE),
        st.sampled_from(lines or [""]),
        st.text(max_size=40),
    )
    for _ in range(draw(st.integers(0, 8))):
        at = draw(st.integers(0, len(text)))
        end = draw(st.integers(at, min(len(text), at + 400)))
        kind = draw(st.sampled_from(("insert", "delete", "repeat", "replace", "cut", "swap")))
        if draw(st.integers(0, 9)) == 0:
            text = draw(heavy(text, at, end))
        elif kind == "insert":
            text = text[:at] + draw(pieces) + text[at:]
        elif kind == "delete":
            text = text[:at] + text[end:]
        elif kind == "repeat":
            text = text[:end] + text[at:end] * draw(st.integers(1, 50)) + text[end:]
        elif kind == "replace":
            text = text[:at] + draw(pieces) + text[end:]
        elif kind == "cut":
            text = text[:at]
        else:
            rows = text.splitlines(keepends=True)
            if len(rows) > 1:
                i, j = draw(st.integers(0, len(rows) - 1)), draw(st.integers(0, len(rows) - 1))
                rows[i], rows[j] = rows[j], rows[i]
                text = "".join(rows)
    return text


@st.composite
def mutated_bytes(draw: st.DrawFn, seeds: Sequence[str], tokens: Sequence[str] = ()) -> bytes:
    """``mutated`` as UTF-8, with invalid or torn UTF-8 sequences sometimes spliced in."""
    data = draw(mutated(seeds, tokens)).encode("utf-8", "surrogatepass")
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.sampled_from(HOSTILE_BYTES)) + data[at:]
    return data


def one_line(message: str) -> bool:
    """An operator's error: one non-empty line."""
    return bool(message.strip()) and "\n" not in message.strip()


def rendered(renderable: Any) -> str:
    """What the terminal would show (the CLI's own console, into a string)."""
    from wizard.ui.render import SafeConsole

    screen = SafeConsole(file=io.StringIO(), width=100, highlight=False)
    screen.print(renderable)
    return screen.file.getvalue()  # type: ignore[attr-defined]


def replay_and_export(
    header: dict[str, Any], events: list[dict[str, Any]], only: int | None = None, html: bool = True
) -> None:
    """Replay every event (or only the one at index ``only``) and export the summary in every
    format (HTML's charts cost most: ``html``) and language, as the CLI does for a transcript
    that verifies (re-chained here): anything raised is a defect."""
    import json
    import tempfile

    from tests.forge import write_rechained
    from wizard import report
    from wizard.record import transcript
    from wizard.report.html import html_page
    from wizard.report.md import markdown
    from wizard.report.text import text
    from wizard.ui.render_events import render_event

    with tempfile.TemporaryDirectory() as tmp:
        try:
            loaded = transcript.load(write_rechained(Path(tmp) / "t.ndjson", header, events))
        except transcript.TranscriptError as exc:  # a header that does not fit: one line, refused
            assert one_line(str(exc)) and "t.ndjson:1: " in str(exc), str(exc)
            return
    for event in loaded.events if only is None else [loaded.events[only]]:
        renderable = render_event(event, "en", replay=True)
        if renderable is not None:
            rendered(renderable)
    for lang in ("en", "zh"):
        model = report.build(loaded, lang)
        json.dumps(model, ensure_ascii=False)
        markdown(model)
        if html:
            html_page(model)
        text(model)
