"""Several replicas' vLLM logs at once: a folder, or ``kubectl logs --prefix`` of several pods.

The logs are real vLLM 0.32 logs (the real tier's captures) and a real engine-death excerpt.
kubectl's prefix is ``[pod/NAME/CONTAINER] `` (kubectl's logs.go, ``addPrefixIfNeeded``); pods
followed in parallel interleave line by line, which the tests reproduce.
"""

from __future__ import annotations

import io
import itertools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, assert_walk_exit, playbook_with_probes_only, wizard_command
from wizard.probes.readers import vllm_logs
from wizard.probes.readers.vllm_log import read_lines

LOGS = Path(__file__).parent / "fixtures" / "vllm-log"
PODS = {
    "pod/vllm-0/vllm": LOGS / "real-0.32-healthy.log",
    "pod/vllm-1/vllm": LOGS / "real-0.32-override17.log",  # a 17-block KV cache
    "pod/vllm-2/vllm": LOGS / "errors" / "engine_dead.log",
}


def interleaved(pods: dict[str, Path], timestamps: bool = False) -> str:
    """What `kubectl logs -l app=vllm --prefix -f` prints: every line prefixed, pods interleaved
    (with --timestamps, kubectl's RFC 3339 time after the prefix)."""

    def stamp(i: int) -> str:
        return f"2026-12-04T10:{i // 60 % 60:02d}:{i % 60:02d}.123456789Z " if timestamps else ""

    streams = [[f"[{name}] {stamp(i)}{line}"
                for i, line in enumerate(path.read_text().splitlines(keepends=True))]
               for name, path in pods.items()]  # fmt: skip
    return "".join(
        line for group in itertools.zip_longest(*streams) for line in group if line is not None
    )


def alone(path: Path) -> dict[str, Any]:
    with path.open() as handle:
        return read_lines(handle)


def by_replica(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        r["replica"]: {k: v for k, v in r.items() if k != "replica"} for r in report["replicas"]
    }


@pytest.mark.parametrize("timestamps", [False, True])
def test_kubectl_prefixed_pods_are_each_read_as_their_own_log(
    tmp_path: Path, timestamps: bool
) -> None:
    path = tmp_path / "pods.log"
    path.write_text(
        interleaved(PODS, timestamps) + "error: container vllm in pod vllm-3 is waiting\n"
    )
    report = vllm_logs.read_path(path)
    assert report["replica_count"] == 3
    # Each replica's report is exactly what its own log alone gives: no run, stats line or
    # error of one pod is mixed into another's.
    assert by_replica(report) == {name: alone(log) for name, log in PODS.items()}
    # The walk reads the replica whose log shows an error.
    assert report["replica"] == "pod/vllm-2/vllm"
    # Every engine-dead line of that pod's log (vLLM's own sentences of every era), none other.
    assert [e["kind"] for e in report["errors"]] == ["engine_dead"] * 5
    assert report["differing_args"]["kv_cache_tokens"] == {
        "pod/vllm-0/vllm": 1048576, "pod/vllm-1/vllm": 2176,
    }  # fmt: skip
    # kubectl's own unprefixed line belongs to no replica, and says so.
    assert any("1 lines without a [pod/NAME/CONTAINER] prefix" in n for n in report["notes"])


@pytest.mark.parametrize("block_chars", [7, 64, 4096])
def test_blocks_of_any_size_route_the_same_lines(block_chars: int) -> None:
    """A paste whose first lines carry no prefix (a shell prompt, kubectl's own error) and whose
    prefixed lines begin in a later block: the unprefixed blocks take the reader's fast path, and
    from the first prefixed line on each line is routed; block edges change nothing."""
    text = "$ kubectl logs -l app=vllm --prefix\n" + interleaved(PODS)
    whole = vllm_logs.read_stream(io.StringIO(text))
    assert vllm_logs.read_stream(io.StringIO(text), block_chars=block_chars) == whole
    assert by_replica(whole) == {name: alone(log) for name, log in PODS.items()}


def test_a_folder_is_one_replica_per_file(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, log in PODS.items():
        (folder / f"{name.split('/')[1]}.log").write_text(log.read_text())
    (folder / ".hidden").write_text("not a log\n")
    report = vllm_logs.read_path(folder)
    assert by_replica(report) == {
        f"{name.split('/')[1]}.log": alone(log) for name, log in PODS.items()
    }
    assert report["replica"] == "vllm-2.log"


def test_one_log_reads_as_before(tmp_path: Path) -> None:
    report = vllm_logs.read_path(PODS["pod/vllm-0/vllm"])
    assert report == alone(PODS["pod/vllm-0/vllm"])
    assert "replicas" not in report


def test_probe_vllm_log_tells_the_replicas_apart(tmp_path: Path) -> None:
    path = tmp_path / "pods.log"
    path.write_text(interleaved(PODS))
    result = subprocess.run(wizard_command("probe", "vllm-log", str(path), "--json"),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [r["replica"] for r in report["replicas"]] == list(PODS)
    text = subprocess.run(wizard_command("probe", "vllm-log", str(path)),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    lines = [line for line in text.stdout.splitlines() if line.startswith("replica pod/")]
    assert len(lines) == 3
    assert "KV cache 2176 tokens" in lines[1] and "errors: engine_dead" in lines[2]


def test_the_walk_names_the_replicas_and_what_differs(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    from wizard.record import transcript

    path = tmp_path / "pods.log"
    path.write_text(interleaved({k: v for k, v in PODS.items() if k != "pod/vllm-2/vllm"}))
    walk = tmp_path / "walk.ndjson"
    book = playbook_with_probes_only(tmp_path, ("endpoints", "vllm-log"))
    result = subprocess.run(
        wizard_command("run", "--auto", "--playbook", str(book), "--target", healthy_sim.url,
                       "--vllm-log", str(path), "--transcript", str(walk)),
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    end = assert_walk_exit(result, walk)
    events = transcript.load(walk).events
    facts = next(e["data"]["facts"] for e in events
                 if e["type"] == "probe_result" and e["data"]["probe"] == "vllm-log")  # fmt: skip
    assert [r["replica"] for r in facts["replicas"]] == ["pod/vllm-0/vllm", "pod/vllm-1/vllm"]
    assert facts["replicas"][1]["kv_cache_tokens"] == 2176
    findings = {e["data"]["code"]: e["data"] for e in events if e["type"] == "finding"}
    assert set(findings) == {"LAT079"}
    assert (
        "kv_cache_tokens: pod/vllm-0/vllm=1048576, pod/vllm-1/vllm=2176"
        in (findings["LAT079"]["evidence"])
    )
    assert "pod/vllm-1/vllm" in result.stdout  # the live walk shows each replica
    assert end["outcome"] == "no_cause"  # LAT079 is info: a difference, not yet a cause


def test_an_empty_folder_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    result = subprocess.run(wizard_command("probe", "vllm-log", str(folder)),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2
    assert "no log file in this folder" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
