"""The incident summary as Markdown, for a ticket (the same document as the HTML page)."""

from __future__ import annotations

from typing import Any

from wizard.report.doc import Charts, Code, Heading, Lines, Table, document

STRONG_TONES = ("fail", "bad")


def _inline(text: str) -> str:
    """Text that may come from a server or a pasted file, shown as written and inert: Markdown
    renders raw HTML (``<img onerror=...>``) and links or images (``![](http://...)``, fetched
    when the ticket is viewed). No tag or autolink starts without ``<`` (an entity here) and no
    link or image without ``[`` (escaped); ``->`` stays readable in the raw text."""
    for raw, shown in (("<", "&lt;"), ("[", "\\["), ("]", "\\]")):
        text = text.replace(raw, shown)
    return text.replace("\n", " ")


def _cell(text: str) -> str:
    """A table cell: a pipe or a line break would end the cell or the row."""
    return _inline(text).replace("|", "\\|")


def markdown(report: dict[str, Any]) -> str:
    """The summary as Markdown."""
    out: list[str] = []
    for block in document(report):
        if isinstance(block, Heading):
            out += ["#" * block.level + " " + _inline(block.text), ""]
        elif isinstance(block, Lines):
            out += [
                f"- **{_inline(label)}**: {_inline(text)}" if label else f"- {_inline(text)}"
                for label, text, _ in block.items
            ]
            out.append("")
        elif isinstance(block, Table):
            out += [
                "| " + " | ".join(map(_cell, block.headers)) + " |",
                "|" + "---|" * len(block.headers),
            ]
            for row in block.rows:
                cells = [
                    f"**{_cell(c.text)}**" if c.tone in STRONG_TONES and c.text else _cell(c.text)
                    for c in row
                ]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        elif isinstance(block, Code):
            out += ["    " + block.text.replace("\n", " "), ""]  # a code block: shown literally
        elif isinstance(block, Charts):
            continue  # pictures live in the HTML page
    return "\n".join(out)
