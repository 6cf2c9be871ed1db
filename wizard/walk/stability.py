"""A baseline that its own A/A repeat contradicts: measured again, and what rests on it inconclusive.

The walk measures its direct baseline twice with nothing changed (the A/A pair) to learn how far
the server's numbers move on their own. When the repeat disagrees with the first round beyond both
rounds' own intervals (their comparison, judged as any change is, comes out "improved" or
"regressed": TPOT 19.6 vs 11.1 ms), the first round is no stable description of the server. The
repeat is measured once more; if the pair still disagrees, a rule that reads that round is judged
on either round of the pair: a rule whose outcome depends on which of the two is believed is
"inconclusive: the baseline is not stable (A vs A: +77 %)", never a cause and never "no cause". A
rule that fires (or not) on both rounds stands: the instability does not reach its threshold.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from wizard.i18n.words import segment_name, signed_percent
from wizard.measure import Comparison, compare_rounds
from wizard.measure.contention import CLIENT_TIMED
from wizard.playbook import conditions

# Each disagreeing pair is measured again once: a second round's cost, never a loop.
REMEASURES = 1


def disagreement(
    first: Mapping[str, list[float]], again: Mapping[str, list[float]], segments: Sequence[str]
) -> dict[str, float]:
    """The segments on which an A/A pair disagrees beyond its own intervals, by relative change
    (the repeat against the first round); empty when the pair agrees."""
    results: list[Comparison] = compare_rounds([dict(first)], [dict(again)], segments)
    return {
        r.segment: r.relative_change
        for r in results
        if r.verdict in ("improved", "regressed") and r.relative_change is not None
    }


def moved_text(moved: Mapping[str, float]) -> str:
    """``TTFT +77 %, TPOT -43 %``: how far the repeat moved from the first round."""
    return ", ".join(f"{segment_name(s)} {signed_percent(v)}" for s, v in moved.items())


def alternative(facts: Mapping[str, Any], round_as: str, repeat_as: str) -> dict[str, Any]:
    """The facts as they would read had the repeat been the round: its client-timed parts."""
    round_facts, repeat_facts = facts.get(round_as), facts.get(repeat_as)
    if not isinstance(round_facts, Mapping) or not isinstance(repeat_facts, Mapping):
        return dict(facts)
    swapped = {**round_facts, **{k: v for k, v in repeat_facts.items() if k in CLIENT_TIMED}}
    return {**facts, round_as: swapped}


def flipping_rounds(
    condition: Any,
    facts: Mapping[str, Any],
    answers: Mapping[str, Any],
    unstable: Mapping[str, Any],
) -> list[str]:
    """The unstable rounds whose repeat would change this rule's outcome."""
    outcome = conditions.evaluate(condition, dict(facts), dict(answers))
    return [
        round_as
        for round_as, pair in unstable.items()
        if conditions.evaluate(
            condition, alternative(facts, round_as, pair["repeat"]), dict(answers)
        )
        != outcome
    ]
