"""How a fleet replica stands out, in words, in every language: ``probe fleet``'s view, and the
``why`` the walk's findings quote when Prometheus names a replica the walk does not measure
(LAT072, LAT073). The judgement records each difference in English with the signal's id
(``text``); here it is said again from its numbers, with the signal's name."""

from __future__ import annotations

from typing import Any

from wizard.i18n.words import LANGS, joined, percent, say


def signal_value(signal: str, value: float) -> str:
    """A plain signal's value as a person reads it: the KV peak is a fraction of the cache."""
    return percent(value) if signal == "kv_peak" else f"{value:.3g}"


def bounds(quoted: dict[str, Any], lang: str) -> str:
    """A percentile quoted with its bucket, as ``bucket_quantile`` says it in English."""
    if quoted["high_ms"] is None:
        return say("view.above", lang, low=f"{quoted['low_ms']:g}")
    return say("view.between", lang, low=f"{quoted['low_ms']:g}", high=f"{quoted['high_ms']:g}")


def difference(found: dict[str, Any], lang: str) -> str:
    """How a replica stands out, from its numbers, with the signal's name."""
    signal = say(f"view.fleet_signal.{found['signal']}", lang)
    if isinstance(found["value"], dict):  # a percentile, quoted with its bucket
        return say("view.fleet_percentile", lang, signal=signal, value=bounds(found["value"], lang),
                   others=bounds(found["others_median"], lang))  # fmt: skip
    value, centre = (
        signal_value(found["signal"], found[key]) for key in ("value", "others_median")
    )
    return say("view.fleet_plain", lang, signal=signal, value=value,
               way=say(f"view.fleet_{found['direction']}", lang), centre=centre)  # fmt: skip


def why_texts(differs: list[dict[str, Any]]) -> dict[str, str]:
    """Every difference of a replica in every language (English as the judgement recorded it)."""
    return {
        lang: "; ".join(d["text"] for d in differs)
        if lang == "en"
        else joined([difference(d, lang) for d in differs], lang)
        for lang in LANGS
    }
