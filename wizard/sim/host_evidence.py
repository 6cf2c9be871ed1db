"""The simulated GPU host, as the files an engineer would collect on it (``sim --host-evidence``).

The texts follow the real tools' layouts (lscpu, ``nvidia-smi topo -m``, ``nvidia-smi
--query-gpu=name,memory.total --format=csv``, ``env``) so the wizard reads them exactly as it
reads files from a real host.
"""

from __future__ import annotations

from pathlib import Path

from wizard.sim.config import SimConfig

GPU_NAMES = {24.0: "NVIDIA L4", 48.0: "NVIDIA L40S", 80.0: "NVIDIA H100 80GB HBM3",
             141.0: "NVIDIA H200", 180.0: "NVIDIA B200"}  # fmt: skip
LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def topology_text(gpus: int, nvlink: bool) -> str:
    """``nvidia-smi topo -m`` for ``gpus`` GPUs, all linked by NVLink or all over PCIe."""
    header = (
        "\t"
        + "\t".join(f"GPU{i}" for i in range(gpus))
        + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID"
    )
    rows = []
    for i in range(gpus):
        links = [" X " if i == j else ("NV18" if nvlink else "PHB") for j in range(gpus)]
        rows.append(f"GPU{i}\t" + "\t".join(links) + f"\t0-{gpus * 8 - 1}\t0\t\tN/A")
    return "\n".join([header, *rows]) + "\n" + LEGEND


def write(
    folder: Path, config: SimConfig, physical_cores: int = 32, visible_devices: str | None = None
) -> list[Path]:
    """Write the simulated host's evidence files into ``folder``; return their paths.

    With several nodes the files are those of one of them (its own GPUs), as an engineer collects
    them on one host.
    """
    folder.mkdir(parents=True, exist_ok=True)
    gpus = config.gpus_per_node
    name = GPU_NAMES.get(config.gpu_memory_gib, f"NVIDIA GPU {config.gpu_memory_gib:.0f}GB")
    files = {
        "lscpu.txt": (
            "Architecture:            x86_64\n"
            f"CPU(s):                  {physical_cores * 2}\n"
            "Thread(s) per core:      2\n"
            f"Core(s) per socket:      {physical_cores}\n"
            "Socket(s):               1\n"
        ),
        "topo.txt": topology_text(gpus, config.interconnect == "nvlink"),
        "gpus.csv": "name, memory.total [MiB]\n"
        + "".join(f"{name}, {int(config.gpu_memory_gib * 1024)} MiB\n" for _ in range(gpus)),
        "env.txt": "CUDA_VISIBLE_DEVICES="
        + (visible_devices if visible_devices is not None else ",".join(map(str, range(gpus))))
        + "\n",
    }
    paths = []
    for filename, text in files.items():
        path = folder / filename
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
