"""The client's changes (the layer that sends the requests): its concurrency, where the varying part
of its prompts sits, and the size of its output constraint."""

from __future__ import annotations

from typing import Any

from wizard.levers.change_values import (
    Proposal,
)
from wizard.levers.change_values import fact as _fact
from wizard.levers.change_values import unknown_change as _unknown


def lower_client_concurrency(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT050: half the measuring client's own concurrency (the wizard's, not the service's).

    A bisection step, not a computed value, on purpose: the client is one event loop, so its CPU
    share stops at one core and a saturated client cannot say by how much it is over (0.95 and
    1.0 of a core may be 1.1x or 3x the work it can do). Halving finds the concurrency it keeps up
    with in a few steps, and the round measured again after it shows whether it does (LAT050
    gone). It changes the wizard's own client only, never the service."""
    spec = _fact(facts, "direct.spec") or {}
    now = int(spec.get("concurrency", 0)) or None
    after = max(1, now // 2) if now else None
    return {
        "layer": "measurement", "parameter": "concurrency", "before": now, "before_from": "direct.spec",
        # `run --concurrency N` is how an operator sets it on the next walk.
        "after": after,
        "apply": f"measure with {after} streams (run --concurrency {after})" if after else "fewer streams",
        "basis": "the measuring client is behind by an amount its CPU share (capped at one core) "
                 "cannot tell; half the streams, then measured again",
    }  # fmt: skip


def varying_part_to_end(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT023: the body's per-request part, named, moved after the prompt's shared words."""
    kind, text = _fact(facts, "shape.varying_kind"), _fact(facts, "shape.varying_text")
    word, words = _fact(facts, "shape.varying_word"), _fact(facts, "shape.prompt_words")
    if not isinstance(kind, str) or not isinstance(text, str) or not isinstance(word, int):
        return _unknown(template, "the body's per-request part",
                        "<the per-request value> moved to the end of the prompt")  # fmt: skip
    return {
        "layer": "client", "parameter": "prompt_layout",
        "before": f"{kind} at word {word} of {words}", "before_from": "shape.varying_word",
        "after": f"{kind} at the end of the prompt",
        "apply": f"put the {kind} ('{text}' in the body) after the rest of the prompt, e.g. at the "
                 "end of the last user message",
        "basis": f"the {words - word if isinstance(words, int) else '?'} words after it differ "
                 "from one request to the next only because it does",
    }  # fmt: skip


# LAT019's bar: the constrained round's TPOT at most this multiple of the unconstrained one's.
CONSTRAINT_BAR = 1.2


def smaller_constraint(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT019: the constraint cut to the size whose work stays within LAT019's bar.

    The engine core fills each constrained sequence's token mask every step, work that grows
    with the grammar: the larger of the extra TPOT and the extra TTFT the constraint cost
    (relative to the same requests without it), scaled to the 20 % the bar allows, gives the
    share of the constraint's size to keep.
    """
    chars = _fact(facts, "session.constraint_chars")
    fields = _fact(facts, "session.constraint_fields") or []
    ratios = []
    for segment in ("tpot_p50", "ttft_p50"):
        with_it = _fact(facts, f"direct.steady.{segment}")
        without = _fact(facts, f"unconstrained.steady.{segment}")
        if isinstance(with_it, int | float) and isinstance(without, int | float) and without > 0:
            ratios.append((with_it / without, segment.removesuffix("_p50").upper()))
    excess, segment = max(ratios, default=(0.0, ""))
    excess -= 1
    if not isinstance(chars, int) or chars <= 0 or excess <= CONSTRAINT_BAR - 1:
        return _unknown(template, "the constraint's price",
                        "a smaller schema (fewer properties, enums and alternatives)")  # fmt: skip
    after = max(1, round(chars * (CONSTRAINT_BAR - 1) / excess))
    named = ", ".join(str(f) for f in fields) or "constraint"
    return {
        "layer": "client", "parameter": "constraint_chars", "before": chars,
        "before_from": "session.constraint_chars", "after": after,
        "apply": f"send a {named} of at most about {after} characters (now {chars}): fewer "
                 "properties, enums and alternatives, then walk again with the new --request-body",
        "basis": f"{segment} p50 {excess:.0%} above the same requests without the constraint "
                 f"of {chars} characters, where the bar is {CONSTRAINT_BAR - 1:.0%}; the mask's "
                 "work grows with the grammar",
    }  # fmt: skip
