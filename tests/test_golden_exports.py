"""The shipped example walks read the same, byte for byte, as they did when these files were
written: the export in every format but HTML (its charts carry random element ids) and the
replay, in English at 100 columns.

A change that means to say something else regenerates them, and the diff is reviewed with it:

    for f in transcripts/examples/*.ndjson; do b=$(basename "$f" .ndjson)
      for fmt in md text json; do COLUMNS=100 latency-wizard export "$f" --format $fmt \
        > tests/fixtures/golden/$b.$fmt; done
      COLUMNS=100 latency-wizard replay "$f" > tests/fixtures/golden/$b.replay; done
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.conftest import wizard_command

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "fixtures" / "golden"
CASES = sorted(GOLDEN.iterdir())


def english_at_100_columns() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
    return {**env, "COLUMNS": "100", "LANG": "C.UTF-8"}


@pytest.mark.parametrize("golden", CASES, ids=[p.name for p in CASES])
def test_an_example_reads_as_it_did(golden: Path) -> None:
    example = ROOT / "transcripts" / "examples" / f"{golden.stem}.ndjson"
    command = (["replay", str(example.relative_to(ROOT))] if golden.suffix == ".replay"
               else ["export", str(example.relative_to(ROOT)), "--format", golden.suffix[1:]])  # fmt: skip
    done = subprocess.run(wizard_command(*command), capture_output=True, timeout=120, cwd=ROOT,
                          env=english_at_100_columns())  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert done.stdout == golden.read_bytes(), f"{golden.name} differs: regenerate it (see above)"


def test_every_example_has_its_goldens() -> None:
    examples = {p.stem for p in (ROOT / "transcripts" / "examples").glob("*.ndjson")}
    assert {p.stem for p in CASES} == examples
    assert len(CASES) == 4 * len(examples)
