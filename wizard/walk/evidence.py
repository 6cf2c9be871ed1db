"""The evidence a finding quotes: its templates filled with the walk's facts, in every language, a
clause whose every figure is unknown left out.
"""

from __future__ import annotations

import re
from typing import Any

from wizard.i18n.words import LANGS, percent
from wizard.playbook import conditions


def evidence_fields(
    key: str, templates: dict[str, str], facts: dict[str, Any], answers: dict[str, Any]
) -> dict[str, Any]:
    """The event's English ``key`` and, when the playbook translates it or a value it quotes has
    texts of its own (``replicas.evidence_texts``), ``{key}_texts`` by language."""
    english = templates.get("en", "")
    rendered = {
        lang: render_evidence(templates.get(lang) or english, facts, answers, lang)
        for lang in LANGS
    }
    fields: dict[str, Any] = {key: rendered["en"]}
    if len(templates) > 1 or any(text != rendered["en"] for text in rendered.values()):
        fields[f"{key}_texts"] = rendered
    return fields


# Where an evidence text's clauses part: "; " in English, "；" in Chinese.
CLAUSE_BREAK = re.compile(r"(;\s+|；)")


def render_evidence(
    template: str, facts: dict[str, Any], answers: dict[str, Any], lang: str = "en"
) -> str:
    """Fill ``{a.b.c}`` (facts) and ``{answers.x}`` placeholders; unknown values show as '?',
    and a clause (between "; " or "；") whose every placeholder is unknown is left out.

    ``{a.b.c:%}`` shows a fraction as a percentage, as the summary writes it (a KV peak of
    0.0011 reads "0.1 %", not "0.0011"). A text a probe records in English quotes in ``lang``
    when the probe recorded it in every language beside it (``a.b_texts.c`` or ``a.b.c_texts``).
    """

    def value(spec: str) -> str:
        path, _, style = spec.partition(":")
        path = path.strip()
        if path.startswith("answers."):
            found = answers.get(path.removeprefix("answers."), conditions.MISSING)
        else:
            found = conditions.lookup(facts, path)
        if found is conditions.MISSING or found is None:
            return "?"
        if isinstance(found, str) and lang != "en":
            found = _said_in(lang, facts, path) or found
        if style == "%" and isinstance(found, int | float) and not isinstance(found, bool):
            return percent(found)
        if isinstance(found, float):
            if found.is_integer():
                return str(int(found))
            # Milliseconds read well with one decimal; fractions (0.95) need their digits.
            return f"{found:.1f}" if abs(found) >= 10 else f"{found:.3g}"
        return str(found)

    def filled(text: str) -> tuple[str, bool]:
        """The text filled in, and whether it names figures that are all unknown."""
        out, rest, known, named = [], text, False, False
        while "{" in rest and "}" in rest.split("{", 1)[1]:
            head, tail = rest.split("{", 1)
            path, rest = tail.split("}", 1)
            shown = value(path)
            named, known = True, known or shown != "?"
            out.append(head + shown)
        return "".join(out) + rest, named and not known

    # A clause whose every figure is unknown says nothing ("up to ? requests waiting" from a
    # server with its stats off): it is left out, unless nothing else would be left.
    parts = CLAUSE_BREAK.split(template)
    kept = []
    for clause, separator in zip(parts[::2], [*parts[1::2], ""], strict=True):
        text, unknown = filled(clause)
        if not unknown:
            kept.append(text + separator)
    said = "".join(kept).rstrip().removesuffix(";").removesuffix("；")
    return said if said else filled(template)[0]


def _said_in(lang: str, facts: dict[str, Any], path: str) -> str | None:
    """The text at ``path`` in ``lang``, from the texts recorded beside it (one of the path's
    parts with ``_texts``, the innermost first), or None when none were."""
    parts = path.split(".")
    for at in reversed(range(len(parts))):
        beside = ".".join([*parts[:at], parts[at] + "_texts", *parts[at + 1 :]])
        said = conditions.lookup(facts, beside)
        if isinstance(said, dict) and isinstance(said.get(lang), str):
            return str(said[lang])
    return None
