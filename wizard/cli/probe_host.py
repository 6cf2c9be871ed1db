"""``probe host`` and ``probe topology``: the GPU host's cores, GPUs and links."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from wizard.cli.inputs import chosen_language, lang_argument

if TYPE_CHECKING:
    from wizard.i18n.words_cli import Words


def register(probes: Any, words: Words) -> None:
    """Add ``host`` and ``topology`` to the ``probe`` sub-commands."""
    host = probes.add_parser(
        "host", help=words("probe.host.help"), description=words("probe.host.description"),
        raw_description=True,
    )  # fmt: skip
    host.add_argument("--host-evidence", metavar="DIR", help=words("probe.host.host_evidence"))
    # The old spelling, kept for the scripts that use it (docs/cli.md), out of --help.
    host.add_argument("--evidence", dest="host_evidence", help=argparse.SUPPRESS)
    host.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(host, words, "probe.host.shown")
    host.set_defaults(handler=run_host)
    topology = probes.add_parser(
        "topology",
        help=words("probe.topology.help"),
        description=words("probe.topology.description"),
    )
    topology.add_argument("file", nargs="?", default="-", help=words("probe.topology.file"))
    topology.add_argument("--visible", metavar="IDS", help=words("probe.topology.visible"))
    topology.add_argument("--json", action="store_true", help=words("json"))
    lang_argument(topology, words, "probe.topology.shown")
    topology.set_defaults(handler=run_topology)


def run_host(args: argparse.Namespace) -> int:
    """Print what is known about the GPU host."""
    import json

    from wizard.probes.readers.host import gather
    from wizard.ui.render_events import host_line

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
    from wizard.files import read_handle
    from wizard.i18n.words import say, value_word
    from wizard.probes.readers.topology import (
        MAX_TOPOLOGY_CHARS,
        TOPOLOGY_ERRORS,
        interconnect,
        parse_topology,
    )

    with text_input(args.file) as handle:
        text = read_handle(handle, MAX_TOPOLOGY_CHARS, args.file)
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
