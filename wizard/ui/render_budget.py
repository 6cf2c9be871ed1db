"""The walk's load budget and what it spent, as lines (``run`` before its first request, the
``budget`` event in replay, the ``end`` event's ``spent``)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from wizard.i18n.words import say


def budget_text(data: dict[str, Any], lang: str) -> Text:
    """Per stage: rounds, requests, tokens and concurrency; the totals, the cap, the deadline."""
    lines = [say("budget.title", lang)]
    if data.get("brief"):
        lines.append(say("budget.brief", lang))
    lines += [say("budget.stage", lang, **row) for row in data["stages"]]
    cap = data.get("max_requests")
    lines.append(say("budget.total", lang, requests=data["requests"], tokens=data["tokens"],
                     cap=say("budget.cap", lang, n=cap) if cap is not None else ""))  # fmt: skip
    lines.append(say("budget.deadline", lang, seconds=round(data["deadline_s"])))
    return Text("\n".join(lines), style="bold")


def spent_text(spent: dict[str, Any], lang: str) -> Text:
    """What the walk sent, and the rounds it skipped at --max-requests."""
    skipped = ", ".join(spent.get("skipped") or []) or say("walk.none", lang)
    return Text(say("budget.spent", lang, requests=spent["requests"], tokens=spent["tokens"],
                    rounds=spent["rounds"], skipped=skipped), style="dim")  # fmt: skip
