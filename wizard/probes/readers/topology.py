"""``nvidia-smi topo -m``: the GPUs and the link between every pair, from the output as pasted.

Pastes differ from the terminal: the table indented or quoted (``> ``, ``|`` pipes), its header or
rows wrapped onto the next line, the legend indented below it (or wrapped into it), a second copy
of the table. So only the devices the header names count, each once; rows end at the legend; a
row is read against its own ``X`` (its diagonal), so a cell lost or added by a paste does not shift
the rest; a wrapped row continues on the next line. What was realigned or skipped is in ``notes``
(English) and ``notes_texts`` (each note in every language).
"""

from __future__ import annotations

import re
from itertools import combinations
from typing import Any

from wizard.i18n.words import texts

# `nvidia-smi topo -m` of 16 GPUs and their NICs is a few KB; a paste around it is not much more.
MAX_TOPOLOGY_CHARS = 1024 * 1024
ANSI = re.compile(r"\x1b\[[0-9;]*m")
DEVICE = re.compile(r"^GPU\d+$")
COLUMN = re.compile(r"^(?:GPU|NIC)\d+$|^mlx\d+_\d+$")
# A matrix cell: self, NVLink, the PCIe/NUMA levels of every driver era, p2p words, unknown.
LINK = re.compile(r"^(?:X|NV\d+|SYS|NODE|PHB|PXB|PIX|SOC|NS|N/A|OK|CNS|GNS|TNS|U)$")
LEVEL = re.compile(r"^(?:NV\d+|SYS|NODE|PHB|PXB|PIX|SOC)$")  # what only topo -m prints
HEADER_WORDS = frozenset({"CPU", "NUMA", "GPU", "Affinity", "ID"})
DECORATION = str.maketrans({"|": " ", "│": " ", "`": " "})


def _clean(line: str) -> list[str]:
    """A line's words, without colour codes, quote markers and table pipes."""
    text = ANSI.sub("", line).translate(DECORATION).strip()
    while text.startswith(">"):
        text = text[1:].lstrip()
    return text.split()


def _header(lines: list[list[str]]) -> tuple[int, list[str]] | None:
    """Where the header is and its device columns (a wrapped header continues below it)."""
    for at, words in enumerate(lines):
        if words[:1] == ["GPU0"] and words[1:2] != ["X"]:
            columns = _columns(words)
            # The header wrapped: the next lines hold more device names (new ones) and no row.
            for more in lines[at + 1 :]:
                extra = _columns(more)
                if more and not extra and more[0] in HEADER_WORDS:
                    continue  # the wrapped end of "CPU Affinity  NUMA Affinity  GPU NUMA ID"
                rest = more[len(extra) :]
                if not extra or set(extra) & set(columns) or not set(rest) <= HEADER_WORDS:
                    break
                columns += extra
            return at, columns
    return None


def _columns(words: list[str]) -> list[str]:
    columns = []
    for word in words:
        if not COLUMN.match(word):
            break
        columns.append(word)
    return columns


# The two inputs that hold no link matrix (``error``; said in every language by ``TOPOLOGY_ERRORS``).
NO_MATRIX = "no GPU matrix found"
P2P_MATRIX = "a peer-access matrix (nvidia-smi topo -p2p), not the link matrix of topo -m"
TOPOLOGY_ERRORS = {NO_MATRIX: "topology.no_matrix", P2P_MATRIX: "topology.p2p"}


def parse_topology(text: str) -> dict[str, Any]:
    """The GPUs and the link between every pair (NV# = NVLink); ``notes`` on what was repaired."""
    lines = [_clean(line) for line in text.splitlines()]
    found = _header(lines)
    if found is None:
        return {"gpus": 0, "nvlink_all_pairs": None, "pairs": [], "error": NO_MATRIX,
                **_notes([])}  # fmt: skip
    at, columns = found
    rows: dict[str, list[str]] = {}
    notes: list[dict[str, str]] = []  # each in every language
    last: str | None = None
    for number, words in enumerate(lines[at + 1 :], at + 2):
        if words[:1] and words[0].rstrip(":") in ("Legend", "NIC"):
            break  # the legend, and everything after it, is no row
        if not words:
            continue
        name = words[0]
        if rows.get(name):
            notes.append(texts("topnote.twice", number=number, name=name))
            break
        if name in columns:
            rows[name], last = words[1:], name
        elif last is not None and all(LINK.match(w) or re.match(r"^[\d,\-]+$", w) for w in words):
            rows[last] += words  # the row wrapped onto this line
        elif COLUMN.match(name) or DEVICE.match(name):
            notes.append(texts("topnote.not_in_header", number=number, name=name))
    links: dict[tuple[str, str], str] = {}
    # Each once: a header that names a GPU again (a doubled paste) must not multiply the pairs.
    devices = list(dict.fromkeys(c for c in columns if DEVICE.match(c) and c in rows))
    for name in devices:
        cells = _aligned(name, rows[name], columns, notes)
        for column, cell in zip(columns, cells, strict=False):
            if DEVICE.match(column) and column != name and LINK.match(cell):
                links[(name, column)] = cell
    if links and not any(LEVEL.match(cell) for cell in links.values()):
        # All OK/NS: the peer-access matrix of `nvidia-smi topo -p2p`, which says nothing of links.
        return {"gpus": 0, "nvlink_all_pairs": None, "pairs": [], **_notes(notes),
                "error": P2P_MATRIX}  # fmt: skip
    pairs = [
        {"a": a, "b": b, "link": links.get((a, b)) or links.get((b, a)) or "?"}
        for a, b in combinations(devices, 2)
    ]
    all_nvlink = all(p["link"].startswith("NV") for p in pairs) if pairs else None
    return {"gpus": len(devices), "nvlink_all_pairs": all_nvlink, "pairs": pairs, **_notes(notes)}


def _notes(notes: list[dict[str, str]]) -> dict[str, Any]:
    """``notes`` in English (as scripts read them) and ``notes_texts``, each in every language."""
    return {"notes": [said["en"] for said in notes], "notes_texts": notes}


def _aligned(
    name: str, cells: list[str], columns: list[str], notes: list[dict[str, str]]
) -> list[str]:
    """``cells`` placed so that the row's own ``X`` sits in its own column."""
    own = columns.index(name)
    if own < len(cells) and cells[own] == "X":
        return cells
    if "X" not in cells[: len(columns) + 2]:
        links = len([c for c in cells[: len(columns)] if LINK.match(c)])
        if links == len(columns) - 1:  # its own cell was blank (a tab-separated paste lost it)
            notes.append(texts("topnote.x_missing", name=name))
            return [*cells[:own], "X", *cells[own:]]
        notes.append(texts("topnote.no_x", name=name))
        return cells
    shift = cells.index("X") - own
    notes.append(texts("topnote.shifted", name=name, shift=shift))
    return cells[shift:] if shift > 0 else ["?"] * -shift + cells


def interconnect(topology: dict[str, Any] | None, visible: str | None = None) -> str:
    """nvlink, pcie, mixed, single or unknown, among the GPUs vLLM can see."""
    if not topology or not topology.get("gpus"):
        return "unknown"
    names = visible_names(visible)
    pairs = [p for p in topology["pairs"] if names is None or (p["a"] in names and p["b"] in names)]
    if not pairs:
        return "single"
    nvlink = [p["link"].startswith("NV") for p in pairs]
    return "nvlink" if all(nvlink) else "pcie" if not any(nvlink) else "mixed"


def visible_names(visible: str | None) -> set[str] | None:
    """The matrix names of CUDA_VISIBLE_DEVICES (None when all, or when given as UUIDs)."""
    if visible is None or not visible.strip():
        return None
    ids = [v.strip() for v in visible.split(",") if v.strip()]
    if not all(v.isdigit() for v in ids):
        return None  # UUIDs or MIG ids: the topology matrix cannot be filtered by them
    return {f"GPU{v}" for v in ids}
