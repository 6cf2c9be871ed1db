"""``probe host`` and ``probe topology``: the GPU host's cores, GPUs and links."""

from __future__ import annotations

import argparse
from typing import Any

from wizard.cli.inputs import chosen_language, lang_argument

HOST_DESCRIPTION = """\
What the GPU host has: physical CPU cores against GPUs (vLLM wants at least 2 + N physical cores
for N GPUs), the GPUs and their memory (which sets vLLM's default token budget), whether they are
linked by NVLink (tensor parallelism over PCIe is slow), and CUDA_VISIBLE_DEVICES.

Without --host-evidence it looks at this machine (psutil; NVML through nvidia-ml-py, else nvidia-smi).
When the wizard runs elsewhere, collect the files on the GPU host and hand over the folder; each
file is recognised by its content, so any names do:

  lscpu > lscpu.txt
  nvidia-smi topo -m > topo.txt
  nvidia-smi --query-gpu=name,memory.total --format=csv > gpus.csv   (or nvidia-smi -L)
  env | grep CUDA_VISIBLE_DEVICES > env.txt                           (only this variable is read)
  cp /path/to/vllm.log .                                              (optional)

What cannot be known is reported as unknown with a hint, never as an error."""


def register(probes: Any) -> None:
    """Add ``host`` and ``topology`` to the ``probe`` sub-commands."""
    host = probes.add_parser(
        "host", help="GPU host: cores vs GPUs, NVLink, CUDA_VISIBLE_DEVICES",
        description=HOST_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    host.add_argument(
        "--host-evidence", metavar="DIR", help="folder of files collected on the GPU host"
    )
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    host.add_argument("--evidence", dest="host_evidence", help=argparse.SUPPRESS)
    host.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(host, "what was found as sentences")
    host.set_defaults(handler=run_host)
    topology = probes.add_parser(
        "topology", help="read `nvidia-smi topo -m` output: GPUs and NVLink pairs",
        description="Read saved `nvidia-smi topo -m` output (a file, or - for standard input, so a "
        "paste works) and say which GPU pairs are linked by NVLink (NV#) and which go over PCIe "
        "(PIX, PXB, PHB, NODE, SYS). --visible 0,1 restricts the verdict to the GPUs vLLM sees. "
        "Indented, quoted, wrapped or twice-pasted tables are read; repairs are listed as notes.",
    )  # fmt: skip
    topology.add_argument("file", nargs="?", default="-", help="the saved output, or - for stdin")
    topology.add_argument("--visible", metavar="IDS", help="CUDA_VISIBLE_DEVICES of the server")
    topology.add_argument("--json", action="store_true", help="print one JSON object")
    lang_argument(topology, "the GPUs and their links")
    topology.set_defaults(handler=run_topology)


def run_host(args: argparse.Namespace) -> int:
    """Print what is known about the GPU host."""
    import json

    from wizard.probes.host import gather
    from wizard.render_events import host_line

    facts = gather(args.host_evidence)
    if args.json:
        print(json.dumps(facts, indent=2))
        return 0
    lang = chosen_language(args)
    if lang != "en":  # the walk's own sentences; English keeps the lines scripts read
        print(host_line(facts, lang, every_note=True))
        return 0
    for key in ("source", "physical_cores", "logical_cpus", "gpus", "gpu_names", "gpu_memory_gib",
                "interconnect", "cuda_visible_devices", "batch_budget_default", "vllm_log"):  # fmt: skip
        value = facts[key]
        print(f"{key}: {'unknown' if value is None or value == [] else value}")
    for note in facts["notes"]:
        print(f"note: {note}")
    return 0


def run_topology(args: argparse.Namespace) -> int:
    """Parse ``nvidia-smi topo -m`` output; exit 1 when no GPU matrix is in it."""
    import json

    from wizard.cli.inputs import text_input
    from wizard.probes.topology import TOPOLOGY_ERRORS, interconnect, parse_topology
    from wizard.words import say, value_word

    with text_input(args.file) as handle:
        text = handle.read()
    topology = parse_topology(text)
    topology["interconnect"] = interconnect(topology, args.visible)
    lang = chosen_language(args)
    if args.json:
        print(json.dumps(topology, indent=2))
    elif topology.get("error"):
        error = topology["error"]
        if lang != "en":
            error = say(TOPOLOGY_ERRORS[error], lang)
        print(say("topology.error", lang, file=args.file, error=error))
    else:
        link = topology["interconnect"]
        print(say("topology.line", lang, gpus=topology["gpus"],
                  interconnect=link if lang == "en" else value_word("interconnect", link, lang)))  # fmt: skip
        for pair in topology["pairs"]:
            print(say("topology.pair", lang, a=pair["a"], b=pair["b"], link=pair["link"]))
        for note in topology["notes_texts"]:
            print(say("view.note", lang, note=note.get(lang, note["en"])))
    return 1 if topology.get("error") else 0
