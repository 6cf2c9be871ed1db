"""The one rendering layer (rich): live runs, replay and export all draw with these functions."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text


def console() -> Console:
    """The console every command prints to."""
    return Console(highlight=False)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def stream_table(report: dict[str, Any]) -> Group:
    """Percentiles of a stream-probe report, one row per segment, and the error count."""
    summary = report["summary"]
    heading = Text(
        f"{report.get('target', '')}: {summary['succeeded']}/{summary['requests']} requests succeeded"
    )
    table = Table()
    table.add_column("segment")
    for point in ("p50", "p90", "p99"):
        table.add_column(f"{point} (ms)", justify="right")
    for key, label in (
        ("ttft_ms", "TTFT"),
        ("tpot_ms", "TPOT"),
        ("itl_ms", "ITL"),
        ("e2e_ms", "E2E"),
    ):
        row = summary[key]
        table.add_row(label, *(_ms(row[p]) for p in ("p50", "p90", "p99")))
    errors = summary["errors"]
    if errors:
        table.caption = "errors: " + ", ".join(f"{kind} x{count}" for kind, count in errors.items())
    elif summary["output_tokens_estimated"]:
        table.caption = "output tokens estimated from events (the server sent no usage)"
    return Group(heading, table)
