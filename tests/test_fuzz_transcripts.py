"""Transcripts that verify but are not what this tool wrote (issue #15), fuzzed through every renderer.

A transcript edited and re-chained, or written by another version or tool, passes the hash
chain. Its events may lack keys or carry wrong types: replay (render_event) and every export
(report.build, md, html, text, json) must still finish, with a note for what they cannot show.
"""

from __future__ import annotations

import copy
import json
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.forge import DROP, edit, read_records, single_edits, write_rechained
from tests.fuzzing import FUZZ, rendered, replay_and_export

pytestmark = pytest.mark.timeout(600)

EXAMPLES = sorted((Path(__file__).parent.parent / "transcripts" / "examples").glob("*.ndjson"))
SEEDS = [read_records(path) for path in EXAMPLES]
EVENT_TYPES = sorted({event["type"] for _, events in SEEDS for event in events})
# What another version or a hand edit leaves where a value was expected.
WRONG = st.sampled_from(
    [None, 0, -1, 1.5, 10**30, 1e308, True, "", "x", "<b>", [], [None], [1, "a"], {}, {"en": None},
     {"x": 1}]
)  # fmt: skip


# One edit: which event (an index, wrapped), what to do, the path down into its data (each step an
# index into the keys there, wrapped; the last step is the entry edited) and the value put there.
# Small on purpose: hypothesis prints the edits of a failing example, never a 200 KB transcript.
EDIT = st.tuples(
    st.integers(0, 10_000),
    st.sampled_from(("drop", "wrong", "empty", "retype", "header")),
    st.lists(st.integers(0, 1_000), min_size=1, max_size=5),
    WRONG,
    st.sampled_from(EVENT_TYPES),
)


def edited(
    seed: int, edits: list[tuple[int, str, list[int], Any, str]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An example transcript with its events edited: a key dropped, a value of the wrong type, an
    event's data emptied, or its type changed (another event's data under its name)."""
    header, events = copy.deepcopy(SEEDS[seed % len(SEEDS)])
    for which, kind, path, value, retype in edits:
        event = events[which % len(events)]
        if kind == "empty":
            event["data"] = {}
        elif kind == "retype":
            event["type"] = retype
        elif kind == "header":
            keys = sorted(set(header) - {"type", "schema_version"})
            header[keys[path[0] % len(keys)]] = copy.deepcopy(value)
        else:
            parent: Any = event["data"]
            for depth, step in enumerate(path):
                keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
                if not keys:
                    break
                key = keys[step % len(keys)]
                child = parent[key]
                if depth + 1 < len(path) and isinstance(child, dict | list) and child:
                    parent = child
                    continue
                if kind == "drop" and isinstance(parent, dict):
                    del parent[key]
                else:  # a copy: the value drawn is shared, and a later edit may reach into it
                    parent[key] = copy.deepcopy(value)
                break
    return header, events


# Each example renders and exports a whole 200 KB transcript twice (~0.3 s): a wider deadline
# than the readers' keeps a busy CI machine from calling it slow.
@settings(FUZZ, deadline=FUZZ.deadline and timedelta(seconds=10))  # none in the long run
@given(st.integers(0, len(SEEDS) - 1), st.lists(EDIT, min_size=1, max_size=6))
def test_replay_and_export_of_an_edited_transcript(
    seed: int, edits: list[tuple[int, str, list[int], Any, str]]
) -> None:
    replay_and_export(*edited(seed, edits))


# Every (event type, probe, key path) of the first example dropped: the long run found one such
# crash in ~1,000 examples (seeds 7012 and 9012: a measurement without e2e_p50, a change without
# its finding's code, measure facts without their path). Values of other types at every path, and
# the HTML's charts, are the exhaustive sweep's (benchmarks/transcript_edit_sweep.py, minutes).
def test_every_key_of_an_example_dropped_replays_and_exports() -> None:
    header, events = SEEDS[0]
    failures = {}
    for kind, index, path, value in single_edits(events, (DROP,)):
        changed = copy.deepcopy(events)
        if not edit(changed, index, path, value):
            continue
        try:
            replay_and_export(header, changed, only=index, html=False)
        except Exception as exc:
            failures.setdefault(f"{type(exc).__name__}: {exc}", (kind, path))
    assert not failures, failures


def _forged(tmp_path: Path) -> Path:
    """The shipped KV-pressure example with one event of each type broken in its own way."""
    header, events = copy.deepcopy(SEEDS[0])
    broken: set[str] = set()
    for event in events:
        kind, data = event["type"], event["data"]
        if kind in broken or not data:
            continue
        broken.add(kind)
        first = sorted(data)[0]
        if len(broken) % 2:
            del data[first]  # a key another version did not write
        else:
            data[first] = [None]  # a value of another type
    return write_rechained(tmp_path / "forged.ndjson", header, events)


def test_replay_and_export_of_a_forged_transcript_say_what_they_cannot_show(
    tmp_path: Path,
) -> None:
    # Before wizard/record/event_shapes.py: replay ended in KeyError 'covers' (render_events), export too.
    from tests.conftest import wizard_command

    path = _forged(tmp_path)
    runs = {"replay": ["replay", str(path)]} | {
        fmt: ["export", str(path), "--format", fmt] for fmt in ("md", "html", "json", "text")
    }
    outputs = {}
    for name, args in runs.items():
        result = subprocess.run(wizard_command(*args), capture_output=True, text=True,
                                timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
        assert result.returncode == 0, (name, result.stderr[-2000:])
        assert "Traceback" not in result.stderr, name
        outputs[name] = result.stdout
        if name != "text":  # the text summary is 15 lines: the notes are not among them
            assert "not shown: data." in result.stdout, name
    unreadable = json.loads(outputs["json"])["unreadable_events"]
    assert unreadable and all(line.startswith("event ") and "\n" not in line for line in unreadable)


@pytest.mark.parametrize(
    ("event", "note"),
    [
        # Found by the fuzz: TypeError in str.join (render_events, the end line).
        ({"type": "end", "data": {"findings": [None], "changes": 0}}, "data.findings[0] is null"),
        ({"type": "node_enter", "data": {"title": "t", "stage": "s", "explain": "e"}},
         "data.covers is missing"),
        ({"type": "probe_result", "data": {"probe": "measure", "as": "direct", "error": None,
                                           "facts": {"path": "direct", "url": "u",
                                                     "steady": {"ttft_p50": "fast"}}}},
         "data.facts.steady.ttft_p50 is a str"),
        # Found by the long fuzz run: KeyError 'severity.' in the summary's words.
        ({"type": "finding", "data": {"code": "LAT001", "cause": "proxy_buffering", "severity": "",
                                      "title": "t", "evidence": "e", "advice": "a",
                                      "change": None, "docs": []}},
         "data.severity is '', not one of info, warn, fail"),
        # Found by the long fuzz run (seed 5012): AttributeError in the walk's probe line, and
        # in the Markdown and HTML summaries (an audit detail that is a number).
        ({"type": "probe_result", "data": {"probe": "endpoints", "as": "endpoints", "error": None,
                                           "facts": None}},
         "data.facts is null for a probe that succeeded"),
        ({"type": "probe_result", "data": {"probe": "audit", "as": "audit", "error": None,
                                           "facts": {"cold_steady_mixed_detail": -1}}},
         "data.facts.cold_steady_mixed_detail is a int"),
    ],
)  # fmt: skip
def test_an_event_that_does_not_fit_is_one_line(event: dict[str, Any], note: str) -> None:
    from wizard.ui.render_events import render_event

    shown = rendered(render_event({"seq": 9, "t": "x", "node": None, **event}, replay=True))
    assert shown.strip() == f"event 9 ({event['type']}) not shown: {note}"


def test_a_header_that_does_not_fit_is_refused_in_one_line(tmp_path: Path) -> None:
    # The long fuzz run (seed 12001): a header whose workload was -1 ended export in
    # AttributeError ('int' object has no attribute 'get'); the header is checked on load.
    header, events = copy.deepcopy(SEEDS[0])
    from tests.conftest import wizard_command

    header["workload"] = -1
    path = write_rechained(tmp_path / "edited.ndjson", header, events)
    result = subprocess.run(wizard_command("export", str(path), "--format", "md"),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode != 0 and result.stdout == ""
    assert result.stderr.strip().endswith(f"{path}:1: header.workload is a int")


def test_a_finding_of_no_known_severity_is_left_out_of_the_summary(tmp_path: Path) -> None:
    # The long fuzz run (seed 3012): an edited finding's severity "" ended export in KeyError.
    from wizard import report
    from wizard.record import transcript

    header, events = copy.deepcopy(SEEDS[0])
    finding = next(e for e in events if e["type"] == "finding")
    finding["data"]["severity"] = ""
    loaded = transcript.load(write_rechained(tmp_path / "edited.ndjson", header, events))
    built = report.build(loaded, "en")
    assert any("not one of info, warn, fail" in line for line in built["unreadable_events"])


# Found by the sweep on example 3 once a walk first measured after a change (the summary's "after
# the fix"): a wrong-typed round count sliced the changes, a round name that was a list was a key.
@pytest.mark.parametrize(
    ("kind", "key", "value"),
    [("measurement", "changes_before", "x"), ("comparison", "after", []),
     ("comparison", "before", {})],
)  # fmt: skip
def test_wrong_typed_round_references_replay_and_export(kind: str, key: str, value: Any) -> None:
    header, events = read_records(EXAMPLES[2])
    assert EXAMPLES[2].name.startswith("3-did-not-start")
    index = next(i for i, e in enumerate(events) if e["type"] == kind and key in e["data"])
    assert edit(events, index, (key,), value)
    replay_and_export(header, events)
