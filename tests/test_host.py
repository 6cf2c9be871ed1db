"""``probe host`` / ``probe topology`` and the host evidence folder: real files, real subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.conftest import wizard_command
from wizard.probes.readers.host import gather, parse_gpu_list, parse_lscpu
from wizard.probes.readers.topology import interconnect, parse_topology

FIXTURES = Path(__file__).parent / "fixtures" / "host"


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=60,
                          input=stdin)  # fmt: skip


@pytest.mark.parametrize(
    ("name", "gpus", "verdict"),
    [
        ("topo-nvswitch-8.txt", 8, "nvlink"),
        ("topo-l40s-4-pcie.txt", 4, "pcie"),
        ("topo-pasted-mixed.txt", 4, "mixed"),
        ("topo-single.txt", 1, "single"),
    ],
)
def test_topology_fixtures(name: str, gpus: int, verdict: str) -> None:
    topology = parse_topology((FIXTURES / name).read_text(encoding="utf-8"))
    assert topology["gpus"] == gpus
    assert len(topology["pairs"]) == gpus * (gpus - 1) // 2
    assert interconnect(topology) == verdict
    # NIC rows and columns never count as GPUs.
    assert all(p["a"].startswith("GPU") and p["b"].startswith("GPU") for p in topology["pairs"])


def test_the_verdict_is_about_the_gpus_vllm_sees() -> None:
    topology = parse_topology((FIXTURES / "topo-pasted-mixed.txt").read_text(encoding="utf-8"))
    assert interconnect(topology, "0,1") == "nvlink"
    assert interconnect(topology, "1,2") == "pcie"
    assert interconnect(topology, "3") == "single"
    # UUIDs cannot be matched to matrix rows: all GPUs are judged.
    assert interconnect(topology, "GPU-5b0c1f0e,GPU-77aa") == "mixed"


def test_a_header_naming_gpus_again_counts_each_once() -> None:
    # The long fuzz run (seed 3040): GPU0-GPU6 named 15 times in the header made 106 "GPUs" and
    # 5,565 pairs, 240 KB of JSON from a 1.7 KB paste.
    names = [f"GPU{i}" for i in range(8)]
    header = "  ".join(names[:7] * 15 + names[7:]) + "  NIC0  CPU Affinity  NUMA Affinity"
    rows = [
        "  ".join(
            [name, *("X" if other == name else "NV18" for other in names), "PXB", "0-55", "0"]
        )
        for name in names
    ]
    topology = parse_topology("\n".join([header, *rows]))
    assert topology["gpus"] == 8 and len(topology["pairs"]) == 28


def test_lscpu_and_gpu_lists() -> None:
    assert parse_lscpu((FIXTURES / "lscpu.txt").read_text()) == {
        "logical_cpus": 224, "physical_cores": 112,
    }  # fmt: skip
    listed = parse_gpu_list((FIXTURES / "gpus-L.txt").read_text())
    assert listed["gpus"] == 2 and listed["gpu_memory_gib"] == 80.0
    csv = parse_gpu_list(
        "name, memory.total [MiB]\nNVIDIA L40S, 46068 MiB\nNVIDIA L40S, 46068 MiB\n"
    )
    assert csv == {"gpu_names": ["NVIDIA L40S"] * 2, "gpus": 2, "gpu_memory_gib": 45.0}


def test_evidence_folder_is_read_by_content_not_by_name(tmp_path: Path) -> None:
    (tmp_path / "a").write_text((FIXTURES / "lscpu.txt").read_text())
    (tmp_path / "b").write_text((FIXTURES / "topo-l40s-4-pcie.txt").read_text())
    (tmp_path / "c").write_text("name, memory.total [MiB]\n" + "NVIDIA L40S, 46068 MiB\n" * 4)
    (tmp_path / "d").write_text("HOME=/root\nCUDA_VISIBLE_DEVICES=0,1\nPATH=/usr/bin\n")
    (tmp_path / "e").write_text(
        "(EngineCore pid=2) INFO 12-01 10:00:00 [kv_cache_utils.py:1169] GPU KV cache size: 1,000 tokens\n"
    )
    (tmp_path / "f").write_bytes(os.urandom(4096))
    facts = gather(str(tmp_path))
    assert facts["source"] == "evidence"
    assert (facts["physical_cores"], facts["gpus"], facts["visible_gpus"]) == (112, 4, 2)
    # Only GPU0 and GPU1 are visible, and they share a NUMA node over PCIe.
    assert facts["interconnect"] == "pcie"
    assert facts["batch_budget_default"] == 2048  # 45 GiB: the small-GPU class
    assert facts["vllm_log"] == str(tmp_path / "e")
    assert facts["sources"]["physical_cores"] == "a" and facts["sources"]["topology"] == "b"
    assert any(note.startswith("f: not recognised") for note in facts["notes"])
    assert facts["gpu_host"] == {"physical_cores": 112, "gpus": 2, "gpus_total": 4,
                                 "gpu_memory_gib": 45.0}  # fmt: skip


def test_a100_keeps_the_small_default_budget(tmp_path: Path) -> None:
    (tmp_path / "gpus.txt").write_text((FIXTURES / "gpus-L.txt").read_text())
    assert gather(str(tmp_path))["batch_budget_default"] == 2048


def test_this_machine_without_gpus_is_unknown_with_a_hint() -> None:
    result = cli("probe", "host", "--json")
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["source"] == "this machine"
    assert facts["physical_cores"] == psutil.cpu_count(logical=False)
    if facts["gpus"] is None:  # the CI machines have no GPU; a GPU machine reports its own
        assert facts["interconnect"] == "unknown" and facts["gpu_host"] is None
        assert any("--host-evidence" in note for note in facts["notes"])


def test_empty_folder_missing_folder_and_human_output(tmp_path: Path) -> None:
    result = cli("probe", "host", "--host-evidence", str(tmp_path))
    assert result.returncode == 0
    assert "physical_cores: unknown" in result.stdout and "holds no files" in result.stdout
    # The old spelling still works (scripts rely on it), out of --help (docs/cli.md).
    result = cli("probe", "host", "--evidence", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard probe host: error: {tmp_path / 'nope'}: not a folder of files collected on the GPU host"
    ]


def test_probe_topology_cli_contract_and_stdin() -> None:
    result = cli("probe", "topology", str(FIXTURES / "topo-nvswitch-8.txt"), "--json")
    facts = json.loads(result.stdout)
    assert {"gpus", "nvlink_all_pairs", "pairs"} <= set(facts)
    assert facts["gpus"] == 8 and facts["nvlink_all_pairs"] is True
    pasted = (FIXTURES / "topo-l40s-4-pcie.txt").read_text()
    result = cli("probe", "topology", "-", stdin=pasted)
    assert result.returncode == 0 and "interconnect: pcie" in result.stdout
    assert "GPU0 - GPU2: SYS" in result.stdout


@pytest.mark.parametrize("content", ["", "no matrix here\n", "\x00\xff garbage"])
def test_probe_topology_without_a_matrix_says_so_in_one_line(tmp_path: Path, content: str) -> None:
    path = tmp_path / "topo.txt"
    path.write_text(content, encoding="utf-8", errors="surrogateescape")
    result = cli("probe", "topology", str(path))
    assert result.returncode == 1
    assert result.stdout.strip().splitlines() == [
        f"{path}: no GPU matrix found (expected the output of `nvidia-smi topo -m`)"
    ]
    assert "Traceback" not in result.stderr


def test_nvidia_smi_is_run_when_there_is_no_nvml(tmp_path: Path) -> None:
    """A stand-in nvidia-smi on PATH prints what the real one prints on an L40S host."""
    topo = FIXTURES / "topo-l40s-4-pcie.txt"
    tool = tmp_path / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = topo ]; then cat ' + str(topo) + "; exit 0; fi\n"
        'printf "name, memory.total [MiB]\\n"\n'
        'for i in 0 1 2 3; do printf "NVIDIA L40S, 46068 MiB\\n"; done\n'
    )
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "CUDA_VISIBLE_DEVICES": "2,3"}
    result = subprocess.run(wizard_command("probe", "host", "--json"), capture_output=True,
                            text=True, timeout=60, env=env)  # fmt: skip
    facts = json.loads(result.stdout)
    assert facts["gpus"] == 4 and facts["gpu_names"] == ["NVIDIA L40S"] * 4
    assert facts["sources"]["topology"] == "nvidia-smi topo -m"
    assert facts["cuda_visible_devices"] == "2,3" and facts["interconnect"] == "pcie"
    assert facts["gpu_host"]["gpus"] == 2


def test_a_failing_nvidia_smi_is_a_note_not_an_error(tmp_path: Path) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text(
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2\nexit 9\n"
    )
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    result = subprocess.run(wizard_command("probe", "host", "--json"), capture_output=True,
                            text=True, timeout=60, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    facts = json.loads(result.stdout)
    assert facts["gpus"] is None
    assert any(note.startswith("nvidia-smi failed") for note in facts["notes"])


def test_an_env_dump_yields_only_cuda_visible_devices(tmp_path: Path) -> None:
    canary = "hf_canary_7e1d"
    (tmp_path / "env.txt").write_text(
        f"HF_TOKEN={canary}\nVLLM_API_KEY={canary}\nCUDA_VISIBLE_DEVICES=1\n"
    )
    result = subprocess.run(wizard_command("probe", "host", "--host-evidence", str(tmp_path), "--json"),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert json.loads(result.stdout)["cuda_visible_devices"] == "1"
    assert canary not in result.stdout + result.stderr


def test_a_hanging_nvidia_smi_is_given_up_on(tmp_path: Path) -> None:
    tool = tmp_path / "nvidia-smi"
    tool.write_text("#!/bin/sh\nexec sleep 600\n")
    tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"}
    result = subprocess.run(wizard_command("probe", "host", "--json"), capture_output=True,
                            text=True, timeout=120, env=env)  # fmt: skip
    assert result.returncode == 0, result.stderr
    notes = json.loads(result.stdout)["notes"]
    assert any("nvidia-smi did not answer within" in note for note in notes), notes


def test_this_machine_speaks_for_the_server_only_when_vllm_runs_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from wizard.probes.readers.host import probe as host_probe
    from wizard.probes.runner import ProbeContext

    tool = tmp_path / "nvidia-smi"  # this machine has 4 PCIe GPUs
    tool.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = topo ]; then cat {FIXTURES / "topo-l40s-4-pcie.txt"}; exit 0; fi\n'
        'printf "name, memory.total [MiB]\\nNVIDIA L40S, 46068 MiB\\nNVIDIA L40S, 46068 MiB\\n'
        'NVIDIA L40S, 46068 MiB\\nNVIDIA L40S, 46068 MiB\\n"\n'
    )
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    here = asyncio.run(host_probe(ProbeContext(target="http://127.0.0.1:8000"), {}))
    assert here["interconnect"] == "pcie" and here["gpu_host"]["gpus"] == 4
    remote = asyncio.run(host_probe(ProbeContext(target="http://10.255.1.2:8000"), {}))
    assert remote["gpu_host"] is None and remote["interconnect"] == "unknown"
    assert remote["notes"][0].startswith("vLLM runs on another machine (http://10.255.1.2:8000)")


def test_probe_topology_visible_restricts_the_verdict() -> None:
    path = str(FIXTURES / "topo-pasted-mixed.txt")
    pairs = json.loads(cli("probe", "topology", path, "--visible", "0,1", "--json").stdout)
    assert pairs["interconnect"] == "nvlink" and pairs["gpus"] == 4
    assert "interconnect: pcie" in cli("probe", "topology", path, "--visible", "1,2").stdout


def test_sim_host_evidence_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = cli("sim", "--port", "0", "--host-evidence", str(blocker / "host"))
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"cannot write host evidence to {blocker / 'host'}" in lines[0]


@pytest.mark.parametrize(
    ("name", "gpus", "verdict", "links", "note"),
    [
        ("topo-indented-legend-2.txt", 2, "nvlink", ["NV12"], None),
        # A legend wrapped into lines that start with "GPU0 GPU1": no phantom GPU, no shifted link.
        ("topo-wrapped-legend-2.txt", 2, "pcie", ["NODE"], None),
        ("topo-wrapped-rows-4.txt", 4, "mixed", ["NV6"] * 5 + ["NODE"], None),
        ("topo-wrapped-header-8.txt", 8, "nvlink", ["NV18"] * 28, None),
        ("topo-quoted-pipes-2.txt", 2, "pcie", ["PHB"], None),
        ("topo-shifted-cell-3.txt", 3, "mixed", ["NV4", "SYS", "NODE"], "GPU0: its own X is missing"),
        ("topo-extra-cell-3.txt", 3, "pcie", ["NS", "NODE", "NODE"], "GPU0: its row was shifted by 1"),
        ("topo-pasted-twice-2.txt", 2, "pcie", ["PIX"], "line 4: a second GPU0 row"),
    ],
)  # fmt: skip
def test_pasted_topologies(
    name: str, gpus: int, verdict: str, links: list[str], note: str | None
) -> None:
    topology = parse_topology((FIXTURES / name).read_text(encoding="utf-8"))
    assert (topology["gpus"], interconnect(topology)) == (gpus, verdict)
    assert [p["link"] for p in topology["pairs"]] == links
    assert all(p["a"] != p["b"] for p in topology["pairs"])
    if note is None:
        assert topology["notes"] == []
    else:
        assert any(n.startswith(note) for n in topology["notes"]), topology["notes"]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("topo_fp-p2p-read.txt", "a peer-access matrix (nvidia-smi topo -p2p)"),
        ("topo_fp-nvlink-status.txt", "no GPU matrix found"),
    ],
)
def test_other_nvidia_smi_outputs_are_no_topology(name: str, error: str) -> None:
    topology = parse_topology((FIXTURES / name).read_text(encoding="utf-8"))
    assert topology["gpus"] == 0 and topology["error"].startswith(error)
    assert interconnect(topology) == "unknown"


def test_probe_topology_cli_says_what_it_repaired() -> None:
    result = cli("probe", "topology", str(FIXTURES / "topo-pasted-twice-2.txt"))
    assert result.returncode == 0 and "GPUs: 2, interconnect: pcie" in result.stdout
    assert "note: line 4: a second GPU0 row (the table pasted twice?): ignored" in result.stdout
    refused = cli("probe", "topology", str(FIXTURES / "topo_fp-p2p-read.txt"))
    assert refused.returncode == 1 and "a peer-access matrix" in refused.stdout
