"""Every single edit of the shipped example transcripts replays and exports (issue #15).

For the header and each event of ``transcripts/examples/*.ndjson``, each key path into its data (down to four
levels; deduplicated by event type, probe and path across the examples) is dropped, then given
each of a set of values of other types; the transcript is re-chained (it verifies), replayed
event by event and exported in every format and language. A crash is a key the renderers read
that ``wizard/record/event_shapes.py`` does not check. The long fuzz run finds these one per ~1,000
examples; this finds them all at once (about 12,000 cases, minutes). The test suite's compact
form drops every key of the first example.

    python benchmarks/transcript_edit_sweep.py [--examples GLOB]
"""

from __future__ import annotations

import argparse
import copy
import sys
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.forge import DROP, WRONG_VALUES, edit, read_records, single_edits  # noqa: E402
from tests.fuzzing import replay_and_export  # noqa: E402

EDITS = (DROP, *WRONG_VALUES)


def edited_transcripts(
    header: dict[str, Any], events: list[dict[str, Any]]
) -> Iterator[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """Each single edit of the header (checked on load: refused in one line, or read), then of
    the events: (what was edited, the header, the events)."""
    for _, _, path, value in single_edits([{"type": "header", "data": header}], EDITS):
        box = [{"data": copy.deepcopy(header)}]
        if edit(box, 0, path, value):
            yield f"header {path!r} = {value!r}", box[0]["data"], events
    for kind, index, path, value in single_edits(events, EDITS):
        changed = copy.deepcopy(events)
        if edit(changed, index, path, value):
            yield f"{kind} #{index} {path!r} = {value!r}", header, changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", default="*.ndjson", help="which examples (a glob)")
    args = parser.parse_args()
    started, cases, failures = time.monotonic(), 0, {}
    for example in sorted((ROOT / "transcripts" / "examples").glob(args.examples)):
        header, events = read_records(example)
        for kind, header_edited, changed in edited_transcripts(header, events):
            cases += 1
            try:
                replay_and_export(header_edited, changed)
            except Exception as exc:  # every failure is collected and listed
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                where = f"{type(exc).__name__}: {exc} at {Path(frame.filename).name}:{frame.lineno}"
                if where not in failures:
                    failures[where] = (example.name, kind)
                    print(f"FAIL {where} <- {failures[where]!r}", flush=True)
        print(
            f"{example.name}: {cases} cases so far, {len(failures)} distinct failures", flush=True
        )
    print(
        f"\n{cases} cases in {time.monotonic() - started:.0f} s; {len(failures)} distinct failures"
    )
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
