"""A round that stops once it has answered its question: the sequential part of measuring.

A round compared with another (an A/A repeat with its first round; a round after a change with the
rounds before it) asks one question: is it different from them by more than the noise? It is
measured in looks of one request per stream. From the first look that holds enough samples to
judge (``measure.MIN_SAMPLES``, at least one per stream) it looks again after every further one:
once every compared segment's interval is decided ("improved", "regressed" or "within noise"), it
stops; the rest of its requests are never sent. A 10x change is decided at the first look; a close
call uses the whole round, which is its budget (the playbook's ``requests``), and its verdict is
then what the full round says, "inconclusive" included.

Looking several times would make a false verdict likelier than one look's 5 %, so each look
judges at ``1 - 0.05 / looks`` (Bonferroni): the chance that any look stops on a false verdict
stays within 5 % whatever the server. The recorded comparison is judged afterwards at 95 % on
everything measured: an interval decided at the stricter level is decided the same way at 95 %.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wizard.measure import MIN_SAMPLES, compare_rounds

# The verdicts that answer the question; "inconclusive" asks for another look.
DECIDED = ("improved", "regressed", "within noise")
# The error rate every comparison is held to, over all of a round's looks together.
ALPHA = 0.05
# A round's seconds budget, as a multiple of its reference round's time (Question.max_s).
TIME_BUDGET_FACTOR = 2.0


def first_look(concurrency: int) -> int:
    """The steady samples of a round's first look: enough to judge (``MIN_SAMPLES``) and one
    request of every stream, in whole looks (every stream's request is in)."""
    step = max(1, concurrency)
    return -(-max(MIN_SAMPLES, step) // step) * step


def time_budget(reference_wall_s: Any) -> float | None:
    """Seconds a compared round may take: ``TIME_BUDGET_FACTOR`` times its reference round's."""
    if not isinstance(reference_wall_s, int | float) or reference_wall_s <= 0:
        return None  # a round recorded before rounds kept their time
    return TIME_BUDGET_FACTOR * float(reference_wall_s)


@dataclass(frozen=True)
class Question:
    """Is a round different from each of ``states`` (each the pooled rounds of one state: the
    baseline, the round before the change) beyond ``noise``? ``earlier`` are rounds of the round's
    own state measured before it, pooled with it (a repeat of an inconclusive round)."""

    states: Sequence[Sequence[Mapping[str, list[float]]]]
    segments: tuple[str, ...]
    noise: Mapping[str, float] = field(default_factory=dict)
    earlier: Sequence[Mapping[str, list[float]]] = ()
    # What the question is, for the transcript ("direct", the round it repeats or follows).
    about: str = ""
    # The round's budget in seconds: twice its reference round's time (the same spec, so the same
    # time when nothing changed; a round twice as slow is a 2x change its first look already
    # decides). Checked at each look, never before the first. None: its requests alone.
    max_s: float | None = None

    def plan(self, requests: int, concurrency: int) -> list[int]:
        """After how many steady samples the round looks: once per stream's request from the
        first look that can judge, the last at the round's full count."""
        looks = list(range(first_look(concurrency), requests, max(1, concurrency)))
        return [*looks, requests]

    def answered(self, values: Mapping[str, list[float]], looks: int) -> bool:
        """Whether every compared segment is decided at this look's confidence."""
        after = [*(dict(r) for r in self.earlier), dict(values)]
        for state in self.states:
            results = compare_rounds(
                [dict(r) for r in state], after, self.segments, dict(self.noise),
                confidence=1 - ALPHA / max(1, looks),
            )  # fmt: skip
            if not results or any(r.verdict not in DECIDED for r in results):
                return False
        return bool(self.states)


@dataclass
class Progress:
    """What the round's looks found, for its facts (``sequential`` in the measure probe's)."""

    about: str
    budget: int
    looks: list[int]
    taken: list[int] = field(default_factory=list)
    answered: bool = False
    budget_s: float | None = None
    out_of_time: bool = False

    def to_dict(self, sent: int) -> dict[str, Any]:
        """``{"about", "budget", "budget_s", "looks", "answered_after", "out_of_time",
        "steady_sent"}``."""
        return {
            "about": self.about,
            "budget": self.budget,
            "budget_s": self.budget_s,
            "looks": self.taken,
            "answered_after": self.taken[-1] if self.answered and self.taken else None,
            "out_of_time": self.out_of_time,
            "steady_sent": sent,
        }
