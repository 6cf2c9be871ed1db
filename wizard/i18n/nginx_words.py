"""The nginx config reader's findings in words (``probe nginx-config``), in every language, English
included, from the values each finding records: one sentence per finding. The reader records its
English as ``message`` (as scripts read it); a view says it in the reader's language."""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import say


def buffering_from(source: str, lang: str) -> str:
    """Where proxy_buffering was set: a file:line as it is, nginx's default in words."""
    return say("view.nginx_default", lang) if source == "default" else source


def seconds(value: float | None) -> str:
    """A timeout that did not parse shows as unknown."""
    return "?" if value is None else f"{value:g}"


def nginx_message(code: str, values: dict[str, Any], lang: str) -> str:
    """What a finding says is wrong with its location, from the values it records."""
    worst = values.get("worst_gap_ms")
    return say(f"view.nginx_msg.{code}", lang,
               source=buffering_from(values.get("source") or "?", lang),
               read=seconds(values.get("read_s")), connect=seconds(values.get("connect_s")),
               worst="?" if worst is None else f"{worst:.0f}",
               x_accel=say("view.nginx_x_accel_too", lang) if values.get("x_accel_honoured") else "")  # fmt: skip
