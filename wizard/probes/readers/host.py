"""The GPU host: physical cores against GPUs (P3.1), the GPU interconnect (P4.5) and
CUDA_VISIBLE_DEVICES (P4.9), from this machine or from files collected on the GPU host.

Sources, best first: files handed over with ``--host-evidence DIR`` (``lscpu``, ``nvidia-smi topo
-m``, ``nvidia-smi -L`` or ``--query-gpu=name,memory.total --format=csv``, ``env``, the vLLM log; each
file is recognised by its content, not its name); else this machine (psutil, then NVML through
nvidia-ml-py, then ``nvidia-smi``). Whatever cannot be known is ``None`` with a hint saying how to
collect it; nothing here raises for a missing tool or a machine without GPUs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from wizard.i18n.words import texts
from wizard.levers.vllm_defaults import default_batch_limits
from wizard.numbers import parse_int
from wizard.probes.readers.topology import interconnect, parse_topology

# Memory sizes: a match starts only where a digit run starts and takes at most 9 digits, so a
# long run of digits costs one pass instead of one backtracking attempt per digit (quadratic).
MIB = re.compile(r",\s*(\d{1,9})\s*MiB\s*$", re.MULTILINE)
GB = re.compile(r"(?<!\d)(\d{1,9})\s*GB\b")
SNIFF_BYTES = 64 * 1024
NVIDIA_SMI_TIMEOUT_S = 10  # a wedged driver makes nvidia-smi hang; say so instead of waiting
SMALL_FILE_BYTES = 1024 * 1024
COLLECT_COMMANDS = (
    "lscpu > lscpu.txt; nvidia-smi topo -m > topo.txt; "
    "nvidia-smi --query-gpu=name,memory.total --format=csv > gpus.csv; env | grep CUDA_VISIBLE_DEVICES > env.txt"
)
COLLECT_HINT = texts("host.collect", commands=COLLECT_COMMANDS)


@dataclass
class Host:
    """What is known about the GPU host; ``sources`` says where each fact came from."""

    physical_cores: int | None = None
    logical_cpus: int | None = None
    gpus: int | None = None
    gpu_names: list[str] = field(default_factory=list)
    gpu_memory_gib: float | None = None
    topology: dict[str, Any] | None = None
    cuda_visible_devices: str | None = None
    vllm_log: str | None = None
    sources: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    notes_texts: list[dict[str, str]] = field(default_factory=list)  # each note in every language

    def note(self, said: dict[str, str]) -> None:
        """A note in English (``notes``) and in every language it is worded in (``notes_texts``)."""
        self.notes.append(said["en"])
        self.notes_texts.append(said)

    def to_facts(self) -> dict[str, Any]:
        """The probe's facts, with the derived ones the playbook reads."""
        facts = asdict(self)
        visible = _visible_count(self.cuda_visible_devices)
        facts["visible_gpus"] = visible
        facts["interconnect"] = interconnect(self.topology, self.cuda_visible_devices)
        facts["batch_budget_default"] = (
            default_batch_limits(self.gpu_memory_gib, " ".join(self.gpu_names))[0]
            if self.gpu_memory_gib is not None
            else None
        )
        # Cores matter against the GPUs of the same host: a machine without GPUs (the wizard's
        # laptop) says nothing about the GPU host's cores.
        # ``gpus_total`` counts the host's GPUs whatever is visible: a layout larger than that
        # spans several such hosts.
        facts["gpu_host"] = (
            {"physical_cores": self.physical_cores, "gpus": visible or self.gpus,
             "gpus_total": self.gpus, "gpu_memory_gib": self.gpu_memory_gib}
            if self.gpus and self.physical_cores
            else None
        )  # fmt: skip
        return facts


# -- parsers: text in, facts out --------------------------------------------------------------


def parse_lscpu(text: str) -> dict[str, int]:
    """``lscpu``: physical cores = cores per socket x sockets; logical CPUs."""
    fields = dict(
        (key.strip(), value.strip())
        for key, _, value in (line.partition(":") for line in text.splitlines())
        if value
    )
    found: dict[str, int] = {}
    if (cpus := parse_int(fields.get("CPU(s)"))) is not None:
        found["logical_cpus"] = cpus
    cores, sockets = (
        parse_int(fields.get("Core(s) per socket")),
        parse_int(fields.get("Socket(s)", "1")),
    )
    if cores is not None and sockets is not None:
        found["physical_cores"] = cores * sockets
    return found


def parse_gpu_list(text: str) -> dict[str, Any]:
    """``nvidia-smi -L`` or ``--query-gpu=name,memory.total --format=csv``: names and memory."""
    names = re.findall(r"^GPU \d+: (.+?) \(UUID:", text, re.MULTILINE)
    memory = [float(m) / 1024 for m in MIB.findall(text)]
    if not names:
        names = [line.split(",")[0].strip() for line in text.splitlines() if MIB.search(line)]
    if not memory:
        memory = [float(m) for m in GB.findall(" ".join(names))]
    return {
        "gpu_names": names,
        "gpus": len(names) or None,
        "gpu_memory_gib": round(min(memory), 1) if memory else None,
    }


def parse_env(text: str) -> str | None:
    """``CUDA_VISIBLE_DEVICES`` from ``env`` output (or a shell line exporting it)."""
    match = re.search(r"^(?:export\s+)?CUDA_VISIBLE_DEVICES=\"?([^\"\n]*)\"?", text, re.MULTILINE)
    return match.group(1).strip() if match else None


# -- sources ------------------------------------------------------------------------------------


def from_evidence(folder: Path) -> Host:
    """Read every file of ``folder``, recognising each one by what it contains."""
    host = Host()
    files = sorted(p for p in folder.iterdir() if p.is_file())
    for path in files:
        try:
            with path.open("rb") as handle:
                head = handle.read(SNIFF_BYTES).decode("utf-8", "replace")
        except OSError as exc:
            host.note(texts("host.unreadable", name=path.name, why=exc.strerror))
            continue
        _read_evidence_file(host, path, head)
    if not files:
        host.note(texts("host.no_files", folder=folder, hint=COLLECT_HINT))
    _note_missing(host)
    return host


def _read_evidence_file(host: Host, path: Path, head: str) -> None:
    small = path.stat().st_size <= SMALL_FILE_BYTES
    text = path.read_text("utf-8", "replace") if small else head
    recognised = False
    if "GPU0" in head and ("Legend" in head or "CPU Affinity" in head):
        host.topology = parse_topology(text)
        host.sources["topology"] = path.name
        recognised = True
    if "Core(s) per socket" in head or re.search(r"^CPU\(s\):", head, re.MULTILINE):
        for key, value in parse_lscpu(text).items():
            setattr(host, key, value)
            host.sources[key] = path.name
        recognised = True
    if re.search(r"^GPU \d+: .+\(UUID:", head, re.MULTILINE) or "memory.total" in head:
        for key, value in parse_gpu_list(text).items():
            if value:
                setattr(host, key, value)
                host.sources[key] = path.name
        recognised = True
    if (visible := parse_env(text)) is not None:
        host.cuda_visible_devices = visible
        host.sources["cuda_visible_devices"] = path.name
        recognised = True
    if not recognised and _looks_like_vllm_log(head):
        host.vllm_log = str(path)
        host.sources["vllm_log"] = path.name
        recognised = True
    if not recognised:
        host.note(texts("host.unrecognised", name=path.name))


def _looks_like_vllm_log(head: str) -> bool:
    from wizard.probes.readers.vllm_log import read_lines

    return not read_lines(head.splitlines(keepends=True)).get("note")


def from_this_machine() -> Host:
    """psutil for cores; NVML, else nvidia-smi, for GPUs and links; the environment."""
    import psutil

    host = Host(
        physical_cores=psutil.cpu_count(logical=False),
        logical_cpus=psutil.cpu_count(logical=True),
        cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
    )
    host.sources.update(physical_cores="psutil", logical_cpus="psutil")
    if host.cuda_visible_devices is not None:
        host.sources["cuda_visible_devices"] = "environment"
    if not _from_nvml(host) and not _from_nvidia_smi(host):
        host.note(texts("host.no_driver", hint=COLLECT_HINT))
    _note_missing(host)
    return host


def _from_nvml(host: Host) -> bool:
    try:
        import pynvml
    except ImportError:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    try:
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        host.gpus = len(handles)
        host.gpu_names = [str(pynvml.nvmlDeviceGetName(h)) for h in handles]
        memory = [pynvml.nvmlDeviceGetMemoryInfo(h).total / 2**30 for h in handles]
        host.gpu_memory_gib = round(min(memory), 1) if memory else None
        pairs = []
        for (i, a), (j, b) in combinations(enumerate(handles), 2):
            status = pynvml.nvmlDeviceGetP2PStatus(a, b, pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
            link = "NV" if status == pynvml.NVML_P2P_STATUS_OK else "PCIe"
            pairs.append({"a": f"GPU{i}", "b": f"GPU{j}", "link": link})
        host.topology = {
            "gpus": len(handles),
            "nvlink_all_pairs": all(p["link"] == "NV" for p in pairs) if pairs else None,
            "pairs": pairs,
        }
        host.sources.update(gpus="nvml", topology="nvml")
    except pynvml.NVMLError as exc:
        host.note(texts("host.nvml_failed", why=exc))
    finally:
        pynvml.nvmlShutdown()
    return host.gpus is not None


def _from_nvidia_smi(host: Host) -> bool:
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return False
    try:
        listing = subprocess.run(
            [binary, "--query-gpu=name,memory.total", "--format=csv"],
            capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True,
        ).stdout  # fmt: skip
        topo = subprocess.run(
            [binary, "topo", "-m"], capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=True,
        ).stdout  # fmt: skip
    except subprocess.TimeoutExpired:
        host.note(texts("host.smi_silent", seconds=NVIDIA_SMI_TIMEOUT_S))
        return False
    except (OSError, subprocess.SubprocessError) as exc:
        host.note(texts("host.smi_failed", why=exc))
        return False
    for key, value in parse_gpu_list(listing).items():
        setattr(host, key, value)
    host.topology = parse_topology(topo)
    host.sources.update(gpus="nvidia-smi", topology="nvidia-smi topo -m")
    return True


def _note_missing(host: Host) -> None:
    if host.physical_cores is None:
        host.note(texts("host.no_cores", hint=COLLECT_HINT))
    if host.gpus and host.gpus > 1 and host.topology is None:
        host.note(texts("host.no_links"))


def _visible_count(visible: str | None) -> int | None:
    if visible is None:
        return None
    return len([v for v in visible.split(",") if v.strip()])


def gather(evidence: str | None) -> dict[str, Any]:
    """The probe's facts: from ``evidence`` (a folder) when given, else from this machine."""
    if evidence:
        folder = Path(evidence)
        if not folder.is_dir():
            from wizard.errors import UsageError

            raise UsageError.said("error.not_host_folder", path=evidence)
        host = from_evidence(folder)
        source = "evidence"
    else:
        host = from_this_machine()
        source = "this machine"
    return {"source": source, **host.to_facts()}


def is_this_machine(url: str) -> bool:
    """True when ``url``'s host is a loopback name or one of this machine's addresses."""
    import socket
    from urllib.parse import urlsplit

    import psutil

    host = (urlsplit(url).hostname or "").lower()
    if (
        host in ("localhost", socket.gethostname().lower())
        or host.startswith("127.")
        or host == "::1"
    ):
        return True
    addresses = {a.address.split("%")[0] for nic in psutil.net_if_addrs().values() for a in nic}
    return host in addresses


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: the host evidence the session was given, else this machine if vLLM runs here."""
    evidence = getattr(ctx, "host_evidence", None)
    facts = gather(evidence)
    if not evidence and not is_this_machine(ctx.target):
        # This machine's cores and GPUs say nothing about the server's host.
        facts["gpu_host"] = None
        facts["interconnect"] = "unknown"
        facts["batch_budget_default"] = None
        elsewhere = texts("host.elsewhere", target=ctx.target, hint=COLLECT_HINT)
        facts["notes"].insert(0, elsewhere["en"])
        facts["notes_texts"].insert(0, elsewhere)
    facts["gpus_if_cpu_only"] = None
    cpu_only_here = not evidence and not facts["gpus"] and is_this_machine(ctx.target)
    if cpu_only_here and facts["physical_cores"]:
        # vLLM's CPU backend on this very machine: its cores are the GPU host's, with no GPU.
        facts["gpus_if_cpu_only"] = 0
        facts["gpu_host"] = {"physical_cores": facts["physical_cores"], "gpus": 0}
        cpu_backend = texts("host.cpu_backend")
        facts["notes"].append(cpu_backend["en"])
        facts["notes_texts"].append(cpu_backend)
    return facts
