"""The proxy's verdict in words (``probe proxy``), in every language, English included, from the
fields the comparison of the two paths records: one sentence per verdict. The comparison records
its English as ``verdict`` (as scripts read it); a view says it in the reader's language."""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import say


def proxy_verdict(report: dict[str, Any], lang: str) -> str:
    """What the proxy does to the stream, from the comparison's fields."""
    if report["truncated"]:
        return say("view.proxy_cuts", lang)
    if report["whole_stream_held"]:
        return say("view.proxy_gzip", lang)
    if report["buffering_suspected"]:
        inflation = report["ttft_inflation_ms"]
        return say("view.proxy_buffers", lang, via=report["max_events_per_read_via"],
                   direct=report["direct"]["summary"]["burst"]["max_events_per_read"],
                   ttft="" if inflation is None else say("view.proxy_ttft", lang, ms=f"{inflation:.0f}"))  # fmt: skip
    return say("view.proxy_passes", lang)
