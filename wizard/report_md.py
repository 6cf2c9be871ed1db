"""The incident summary as Markdown, for a ticket (the same document as the HTML page)."""

from __future__ import annotations

from typing import Any

from wizard.report_doc import Charts, Code, Heading, Lines, Table, document

STRONG_TONES = ("fail", "bad")


def _cell(text: str) -> str:
    """A table cell: a pipe or a line break would end the cell or the row."""
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(report: dict[str, Any]) -> str:
    """The summary as Markdown."""
    out: list[str] = []
    for block in document(report):
        if isinstance(block, Heading):
            out += ["#" * block.level + " " + block.text, ""]
        elif isinstance(block, Lines):
            out += [
                f"- **{label}**: {text}" if label else f"- {text}" for label, text, _ in block.items
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
            out += [f"    {block.text}", ""]
        elif isinstance(block, Charts):
            continue  # pictures live in the HTML page
    return "\n".join(out)
