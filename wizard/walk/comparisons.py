"""Rounds compared: the states a change is judged between, pooled, each segment against the noise
band, and whether any is still inconclusive.
"""

from __future__ import annotations

from typing import Any

from wizard.measure import (
    IncomparableError,
    MeasurementSpec,
    check_comparable,
    compare_rounds,
    contention,
)
from wizard.playbook import Node, conditions
from wizard.walk.session import Session, note

COMPARED_SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms")

# What a change's own round is compared with, on the path where the change acts; any other
# comparison (LoadGen after the last change, on the direct path) validates every change together.
CHANGE_COMPARISONS = ("baseline", "previous round")

# Findings about the wizard's own measurement, never a cause of the incident.
MEASUREMENT_CAUSES = frozenset({"client_saturated"})


def resolve(value: Any, session: Session) -> Any:
    """A probe parameter may be ``{answer: id}`` or ``{fact: path}``: the value it names."""
    if isinstance(value, dict) and len(value) == 1:
        if "answer" in value:
            return session.answers.get(value["answer"])
        if "fact" in value:
            found = conditions.lookup(session.facts, value["fact"])
            return None if found is conditions.MISSING else found
    return value


def spec_of(record: dict[str, Any]) -> MeasurementSpec:
    return MeasurementSpec(**record["spec"])


def state_of(session: Session, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every round that measured what ``record`` measured, in the same state of the server.

    The same round (or its A/A repeat) under the same spec after as many changes. A record from
    an older transcript, without ``changes_before``, stands alone.
    """
    if "changes_before" not in record:
        return [record]

    def key(m: dict[str, Any]) -> tuple[Any, ...]:
        return (m.get("repeat_of") or m["as"], m["fingerprint"], m.get("changes_before"))

    return [m for m in session.measurements if key(m) == key(record)]


def still_inconclusive(
    session: Session, states: list[list[dict[str, Any]]], after: list[dict[str, Any]]
) -> bool:
    """Whether any compared segment of the rounds so far is still inconclusive."""
    for state in states:
        if state[0]["fingerprint"] != after[0]["fingerprint"]:
            continue
        results = compare_rounds([m["values"] for m in state], [m["values"] for m in after],
                                 COMPARED_SEGMENTS, session.facts.get("noise"))  # fmt: skip
        if any(r.verdict == "inconclusive" for r in results):
            return True
    return False


def compare_states(
    session: Session, node: Node, before: list[dict[str, Any]], after: list[dict[str, Any]],
    against: str, expected_worse: tuple[str, ...] = (),
) -> None:  # fmt: skip
    try:
        # Refuse first if the specs differ (P0.2): the rounds of one state share one spec.
        check_comparable(spec_of(before[0]), spec_of(after[0]))
    except IncomparableError as exc:
        note(session, node.id, "note.not_compared", against=against, why=exc)
        return
    results = compare_rounds([m["values"] for m in before], [m["values"] for m in after],
                             COMPARED_SEGMENTS, session.facts.get("noise"))  # fmt: skip
    # A round whose client stayed contended timed the client too: a verdict stands only when the
    # effect is larger than the worst its client's contention could add (contention.beyond).
    contended, lag = contention.contention_ms([*before, *after])
    segments = []
    for result in results:
        if result.segment in COMPARED_SEGMENTS:
            row = result.to_dict()
            # A trade-off the finding predicted (bursts hid the real gaps) is not a regression.
            row["expected"] = result.verdict == "regressed" and result.segment in expected_worse
            if contended:
                row["contention_ms"] = lag
                if lag is None or not contention.beyond(result.ci_low_ms, result.ci_high_ms, lag):
                    row.update(verdict="inconclusive", client_contended=True, expected=False)
            segments.append(row)
    data = {"against": against, "before": before[0]["round"], "after": after[0]["round"],
            "before_rounds": [m["round"] for m in before],
            "after_rounds": [m["round"] for m in after],
            "fingerprint": after[0]["fingerprint"], "segments": segments}  # fmt: skip
    session.comparisons.append(data)
    session.record("comparison", node.id, data)
