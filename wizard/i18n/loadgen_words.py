"""A LoadGen run's note in words (``probe validate``, the walk's validation), in every language,
English included, from what the run records: one sentence per note. The run records its English
as ``note`` (as scripts read it); a view says it in the reader's language."""

from __future__ import annotations

from wizard.i18n.words import say


def loadgen_note(scenario: str, result: str, failed: int, lang: str) -> str | None:
    """Why a run's LoadGen latencies are not latency evidence, or None when they are."""
    if scenario == "Offline":
        return say("view.offline_note", lang)
    if result == "ERROR":
        return say("view.error_note", lang)
    return say("view.failed_note", lang) if failed else None
