"""``probe endpoints`` and ``probe metrics`` in a language other than English: one labelled fact
a line, every value as a person reads it (yes/no, unknown, a percentage, milliseconds). English
keeps the ``key: value`` lines that scripts read (the commands print those themselves)."""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import WORDS, count, ms, percent, plain, say, value_word
from wizard.ui.render_events import pick

ERRORS = {"error", "completions_error", "chat_error"}
# What the server said in its own words: quoted as code, never translated.
SERVER_TEXT = {"completions_error", "chat_error", "suffix"}
# Fractions (0..1) shown as percentages.
FRACTIONS = {"kv_cache_usage", "gpu_memory_utilization", "spec_acceptance_rate"}
# Facts recorded in seconds, shown in milliseconds.
SECONDS = {"server_ttft_mean_s", "server_itl_mean_s", "server_queue_mean_s",
           "server_prefill_mean_s", "server_decode_mean_s", "server_itl_p50_low_s",
           "server_itl_p50_high_s", "itl_smallest_bucket_s"}  # fmt: skip
# Kept beside another fact (``error_texts`` is how ``error`` is said in every language), or shown
# last (the notes).
SHOWN_ELSEWHERE = {"error_texts", "notes", "notes_texts"}


def fact_lines(facts: dict[str, Any], lang: str, prefix: str = "") -> list[str]:
    """Each fact as ``label：value``; notes last, each on its own line."""
    lines = [
        say(
            "labelled", lang, label=prefix + _label(key, lang), text=_value(key, value, facts, lang)
        )
        for key, value in facts.items()
        if key not in SHOWN_ELSEWHERE and key != "since"
    ]
    for key, value in (facts.get("since") or {}).items():
        lines.append(say("labelled", lang, label=say("fact.since", lang) + _label(key, lang),
                         text=_value(key, value, {**facts, **facts["since"]}, lang)))  # fmt: skip
    notes = facts.get("notes_texts") or facts.get("notes") or []
    lines += [say("view.note", lang, note=pick(note, lang)) for note in notes]
    return lines


def _label(key: str, lang: str) -> str:
    # A fact without a label shows its key: the tests that read every fact in Chinese find it.
    return say(f"fact.{key}", lang) if f"fact.{key}" in WORDS else key


def _value(key: str, value: Any, facts: dict[str, Any], lang: str) -> str:
    if key in ERRORS and value is None:  # nothing went wrong
        return say("walk.none", lang)
    if key == "error":
        return pick(facts.get("error_texts") or value, lang)
    if key == "itl_note" and value is not None:  # recorded in English; said again from its numbers
        return say("fact.itl_below_bucket", lang, mean=ms(facts["server_itl_mean_s"] * 1000),
                   smallest=ms(smallest * 1000) if (smallest := facts.get("itl_smallest_bucket_s")) else "?")  # fmt: skip
    if key == "note" and value is not None:  # a snapshot's note, recorded in English: said again
        if facts.get("stats_disabled"):
            return say("fact.no_vllm_series", lang)
        return say("fact.itl_below_bucket", lang, mean=ms(facts["itl_s"]["mean"] * 1000),
                   smallest=ms(facts["itl_smallest_bucket_s"] * 1000))  # fmt: skip
    if key == "models_status" and isinstance(value, str):  # answered 200 with no model list
        return say("fact.not_model_list", lang)
    if key == "api" and value is None and facts.get("completions_ok") and facts.get("chat_ok"):
        return say("fact.api_both", lang)
    if key == "auth":
        return value_word("auth", value, lang)
    if value is None or value in ([], {}):
        return say("unknown", lang)
    if key in SERVER_TEXT:
        return f"`{value}`"
    if key in FRACTIONS:
        return percent(value)
    if key in SECONDS:
        return f"{ms(value * 1000)} ms"
    if key == "spec_acceptance_per_pos":
        return ", ".join(percent(v) for v in value)
    if isinstance(value, dict) and "mean" in value:  # a histogram: its mean and how many
        return say(
            "fact.histogram", lang, mean=ms(value["mean"] * 1000), count=count(value["count"])
        )
    if isinstance(value, dict):  # counts by position (speculative decoding)
        return ", ".join(f"{k}: {count(v)}" for k, v in value.items())
    if isinstance(value, float) and not value.is_integer():  # CPU seconds, rates: two decimals
        return f"{value:,.2f}"
    return plain(value, lang)
