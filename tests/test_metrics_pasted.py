"""`probe metrics` on saved and pasted /metrics texts: a shell prompt and curl's chatter around the
exposition, a truncated last line, histograms without gauges or without their # TYPE lines, and
the generation told from the series only one of them has."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import wizard_command
from wizard.errors import WizardError
from wizard.probes.readers.metrics import parse

FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
EXPECTED: dict[str, dict[str, Any]] = yaml.safe_load((FIXTURES / "expected.yaml").read_text())


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "_fp" not in n))
def test_saved_or_pasted_metrics_read_as_expected(name: str) -> None:
    want = dict(EXPECTED[name])
    skipped = want.pop("skipped")
    report = parse((FIXTURES / name).read_text(encoding="utf-8")).to_dict()
    assert {key: report[key] for key in want} == want
    skip_notes = [n for n in report["notes"] if n.startswith("skipped ")]
    prefix = f"skipped {skipped} line(s) that are no Prometheus exposition text ("
    assert len(skip_notes) == (1 if skipped else 0) and all(
        n.startswith(prefix) for n in skip_notes
    )


@pytest.mark.parametrize("name", sorted(n for n in EXPECTED if "_fp" in n))
def test_text_without_samples_is_refused_in_one_line(name: str) -> None:
    with pytest.raises(WizardError) as refused:
        parse((FIXTURES / name).read_text(encoding="utf-8"))
    assert str(refused.value).startswith(EXPECTED[name]["error"])


def test_every_fixture_has_its_expectation() -> None:
    files = {p.name for p in FIXTURES.iterdir() if p.name != "expected.yaml"}
    assert files == set(EXPECTED)
    assert any("_fp" in name for name in files)


def test_the_skipped_lines_are_quoted_and_a_paste_works_through_the_cli(tmp_path: Path) -> None:
    result = subprocess.run(
        wizard_command("probe", "metrics", "--file", str(FIXTURES / "pasted-shell-prompt.txt"), "--json"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kv_cache_usage"] == 0.87 and report["preemptions_total"] == 41.0
    note = report["notes"][0]
    assert "line 1: 'ubuntu@gpu-node-3:~$ curl -sv" in note and "and 5 more" in note


def test_a_generation_mark_beats_the_old_kv_name() -> None:
    # 0.9.2-0.11 exposed both KV names; the engine label and the new name say V1.
    assert parse((FIXTURES / "both-kv-names-0.10.txt").read_text()).generation == "v1"
    old = parse('vllm:gpu_cache_usage_perc{model_name="m"} 0.5\n')
    assert old.generation == "v0" and old.notes == []


def itl_text(counts: dict[str, int], name: str = "vllm:inter_token_latency_seconds") -> str:
    """An inter-token histogram as vLLM writes it (cumulative counts by bound)."""
    lines = [f"# TYPE {name} histogram"]
    lines += [f'{name}_bucket{{engine="0",le="{le}"}} {n}' for le, n in counts.items()]
    total = counts["+Inf"]
    lines += [f'{name}_count{{engine="0"}} {total}', f'{name}_sum{{engine="0"}} {total * 0.02}']
    return "\n".join(lines) + "\n"


def test_a_windows_median_gap_is_the_bucket_that_holds_it() -> None:
    """Between two scrapes the engine's median gap moved from (10, 25] ms to (25, 50] ms: the
    window's own counts say so, whatever the server's lifetime counts held before."""
    from wizard.probes.readers.metrics import MetricsSnapshot, delta

    before = parse(itl_text({"0.01": 5, "0.025": 900, "0.05": 910, "0.075": 910, "+Inf": 910}))
    after = parse(itl_text({"0.01": 5, "0.025": 950, "0.05": 1500, "0.075": 1510, "+Inf": 1510}))
    window = delta(before, after)
    assert (window["server_itl_p50_low_s"], window["server_itl_p50_high_s"],
            window["server_itl_p50_observations"]) == (0.025, 0.05, 600)  # fmt: skip
    # Lifetime, the median is still the old bucket: only the window says what the round did.
    lifetime = delta(MetricsSnapshot(), after)
    assert (lifetime["server_itl_p50_low_s"], lifetime["server_itl_p50_high_s"]) == (0.01, 0.025)
