"""A baseline its own A/A repeat contradicts is measured again, then judges nothing it could flip.

The simulator's ``--step-drift`` makes a server that slows as it runs (a GPU throttling as it
heats): each round is slower than the one before, so the baseline and its repeat disagree beyond
their own intervals however often they are measured. A rule whose outcome depends on which of the
two rounds is believed must come out "inconclusive: the baseline is not stable", never a cause.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import SimProcess, playbook_with_probes_only
from wizard.record import transcript
from wizard.walk import stability

# Fires when the baseline is faster than its repeat: on a drifting server it holds for the first
# round and cannot hold for the repeat against itself, so it depends on the round believed.
FLIPS = {"fact": "direct.steady.tpot_p50", "lt": {"fact": "direct_aa.steady.tpot_p50"}}
SimFactory = Callable[..., SimProcess]
NEVER = {"fact": "direct.steady.tpot_p50", "gt": 1e9}  # false on either round: it stands


def test_the_pair_disagreement_and_the_rules_it_can_flip() -> None:
    rng = random.Random(5)
    first = {"tpot_ms": [10 * rng.lognormvariate(0, 0.03) for _ in range(16)]}
    slower = {"tpot_ms": [17.7 * rng.lognormvariate(0, 0.03) for _ in range(16)]}
    same = {"tpot_ms": [10 * rng.lognormvariate(0, 0.03) for _ in range(16)]}
    moved = stability.disagreement(first, slower, ("tpot_ms",))
    assert 0.6 < moved["tpot_ms"] < 0.9 and stability.moved_text(moved).startswith("TPOT +")
    assert stability.disagreement(first, same, ("tpot_ms",)) == {}
    facts = {"direct": {"steady": {"tpot_p50": 10.0}}, "direct_aa": {"steady": {"tpot_p50": 17.7}}}
    unstable = {"direct": {"repeat": "direct_aa", "moved": moved}}
    assert stability.flipping_rounds(FLIPS, facts, {}, unstable) == ["direct"]
    assert stability.flipping_rounds(NEVER, facts, {}, unstable) == []
    assert stability.flipping_rounds(FLIPS, facts, {}, {}) == []


def test_a_drifting_baseline_is_measured_again_and_a_rule_it_flips_is_inconclusive(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim = sim_factory("--step-drift", "3")
    book_path = playbook_with_probes_only(
        tmp_path,
        ("measure",),
        {"requests": 8, "concurrency": 2, "input_tokens": 16, "max_tokens": 32},
    )
    book = yaml.safe_load(book_path.read_text(encoding="utf-8"))
    for node in book["nodes"].values():  # the baseline and its A/A repeat alone
        node["probes"] = [
            p for p in node.get("probes", []) if p.get("as") in ("direct", "direct_aa")
        ]
    book["nodes"]["baseline.direct"]["rules"] = [
        {"finding": "LAT042", "when": FLIPS}, {"finding": "LAT013", "when": NEVER}
    ]  # fmt: skip
    book_path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    answers = tmp_path / "answers.yaml"
    answers.write_text(json.dumps({"run_loadgen": False}))
    path = tmp_path / "walk.ndjson"
    result = subprocess.run(
        [sys.executable, "-m", "wizard", "run", "--target", sim.url, "--playbook", str(book_path),
         "--answers", str(answers), "--transcript", str(path)],
        capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode in (0, 3), result.stderr
    events = transcript.load(path).events
    rounds = [e["data"]["round"] for e in events if e["type"] == "measurement"]
    assert rounds == ["direct", "direct_aa", "direct_aa#2"], rounds  # measured again once
    noise = [e["data"] for e in events if e["type"] == "noise"]
    assert len(noise) == 2 and all(n.get("unstable", {}).get("tpot_ms", 0) > 0 for n in noise)
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any("measuring the repeat again (direct_aa#2)" in n for n in notes), notes
    assert any(n.startswith("direct is not stable") for n in notes), notes
    inconclusive: dict[str, Any] = {
        e["data"]["code"]: e["data"] for e in events if e["type"] == "inconclusive"
    }
    reason = inconclusive["LAT042"]["reason"]
    assert reason.startswith("the baseline is not stable (direct, A vs A: ") and "TPOT +" in reason
    assert inconclusive["LAT042"]["rounds"] == ["direct"]
    findings = [e["data"]["code"] for e in events if e["type"] == "finding"]
    assert "LAT042" not in findings and "LAT013" not in findings and "LAT013" not in inconclusive
    said = subprocess.run([sys.executable, "-m", "wizard", "export", str(path), "--format", "text"],
                          capture_output=True, text=True, timeout=60, check=True).stdout  # fmt: skip
    assert "LAT042" in said and "no cause found" not in said.replace("no cause found,", "")
