"""Declarative conditions over facts and answers, evaluated without eval.

Grammar (YAML/JSON):
    true | false
    {fact: "a.b.c", <op>: operand}      ops: eq ne gt ge lt le in contains divides exists
    {answer: "question_id", <op>: operand}
    {all: [cond, ...]}  {any: [cond, ...]}  {not: cond}
An operand is a literal or a reference ``{fact: "x.y", times: 2, plus: 10}`` or ``{answer: id, ...}``
(times/plus optional; each may itself be a reference, for a product or a sum of two facts),
so "proxy TTFT more than twice direct TTFT" is ``{fact: proxy.ttft_p50, gt: {fact: direct.ttft_p50,
times: 2}}``. ``noise: <segment>`` raises the factor to at least 1 + the noise band the walk measured
for that segment (the A/A pair, fact ``noise.<segment>``), so that a ratio the server's own noise can
produce never counts as a difference. A missing fact makes a comparison false (``exists`` tests for
it explicitly).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

COMPARISONS: dict[str, Callable[[Any, Any], bool]] = {
    "eq": operator.eq, "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
    "lt": operator.lt, "le": operator.le,
    "in": lambda value, options: value in options,
    "contains": lambda value, item: item in value,
    # Whole multiples (the nodes divide the pipeline stages): the value divides the operand.
    "divides": lambda value, whole: value != 0 and whole % value == 0,
}  # fmt: skip
SUBJECTS = ("fact", "answer")
MODIFIERS = ("times", "plus", "noise")
MISSING = object()


class ConditionError(ValueError):
    """A condition that does not follow the grammar."""


def lookup(data: Mapping[str, Any], path: str) -> Any:
    """``data["a"]["b"]["c"]`` for ``"a.b.c"`` (list indices allowed); MISSING when absent."""
    current: Any = data
    for part in path.split("."):
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return MISSING
    return current


def check(condition: Any) -> None:
    """Raise ConditionError when ``condition`` does not follow the grammar."""
    if isinstance(condition, bool):
        return
    if not isinstance(condition, Mapping):
        raise ConditionError(f"a condition must be a mapping or true/false, got {condition!r}")
    keys = set(condition)
    if keys == {"all"} or keys == {"any"}:
        items = next(iter(condition.values()))
        if not isinstance(items, list) or not items:
            raise ConditionError(f"'{next(iter(keys))}' needs a non-empty list")
        for item in items:
            check(item)
        return
    if keys == {"not"}:
        check(condition["not"])
        return
    subjects = keys & set(SUBJECTS)
    ops = keys - set(SUBJECTS)
    if len(subjects) != 1 or len(ops) != 1:
        raise ConditionError(
            f"expected one of fact/answer and one operator, got keys {sorted(keys)}"
        )
    op = next(iter(ops))
    if op != "exists" and op not in COMPARISONS:
        raise ConditionError(f"unknown operator '{op}' (use {', '.join([*COMPARISONS, 'exists'])})")
    _check_operand(condition[op])


def _check_operand(operand: Any) -> None:
    if not isinstance(operand, Mapping):
        return
    if len(set(operand) & set(SUBJECTS)) != 1 or not set(operand) <= {*SUBJECTS, *MODIFIERS}:
        raise ConditionError(
            f"an operand reference takes fact or answer, times, plus, noise; got {sorted(operand)}"
        )
    if "noise" in operand and not isinstance(operand["noise"], str):
        raise ConditionError(
            f"noise names a measured segment (ttft_ms...), got {operand['noise']!r}"
        )
    _check_operand(operand.get("times"))
    _check_operand(operand.get("plus"))


def evaluate(condition: Any, facts: Mapping[str, Any], answers: Mapping[str, Any]) -> bool:
    """True when ``condition`` holds."""
    if isinstance(condition, bool):
        return condition
    if "all" in condition:
        return all(evaluate(c, facts, answers) for c in condition["all"])
    if "any" in condition:
        return any(evaluate(c, facts, answers) for c in condition["any"])
    if "not" in condition:
        return not evaluate(condition["not"], facts, answers)
    subject = "fact" if "fact" in condition else "answer"
    value = (
        lookup(facts, condition["fact"])
        if subject == "fact"
        else answers.get(condition["answer"], MISSING)
    )
    op = next(key for key in condition if key not in SUBJECTS)
    if op == "exists":
        return (value is not MISSING and value is not None) == bool(condition[op])
    operand = _operand(condition[op], facts, answers)
    if value is MISSING or value is None or operand is MISSING or operand is None:
        return False
    try:
        return bool(COMPARISONS[op](value, operand))
    except TypeError:
        return False


def _operand(operand: Any, facts: Mapping[str, Any], answers: Mapping[str, Any]) -> Any:
    if not isinstance(operand, Mapping):
        return operand
    value = (
        lookup(facts, operand["fact"])
        if "fact" in operand
        else answers.get(operand["answer"], MISSING)
    )
    times = _operand(operand.get("times", 1), facts, answers)
    plus = _operand(operand.get("plus", 0), facts, answers)
    if value is MISSING or value is None or times in (MISSING, None) or plus in (MISSING, None):
        return MISSING
    if "noise" in operand:
        band = lookup(facts, f"noise.{operand['noise']}")
        if isinstance(band, int | float):
            times = max(times, 1 + band)
    return value * times + plus


def evaluate_knowing(
    condition: Any,
    facts: Mapping[str, Any],
    answers: Mapping[str, Any],
    doubtful: Callable[[str], bool],
) -> bool | None:
    """``evaluate`` where facts the walk cannot trust (``doubtful(path)``) are unknown: True or
    False when the condition holds or fails whatever they were, None when it turns on them.

    Kleene's three values: ``all`` is False when one part is, ``any`` True when one part is, so
    a rule that fails on a trusted fact is still plainly False.
    """
    if isinstance(condition, bool):
        return condition
    if "all" in condition or "any" in condition:
        is_all = "all" in condition
        parts = [
            evaluate_knowing(c, facts, answers, doubtful)
            for c in condition["all" if is_all else "any"]
        ]
        decisive = not is_all  # any: one True decides; all: one False decides
        if decisive in parts:
            return decisive
        return None if None in parts else not decisive
    if "not" in condition:
        inner = evaluate_knowing(condition["not"], facts, answers, doubtful)
        return None if inner is None else not inner
    paths = _fact_paths(condition)
    op = next(key for key in condition if key not in SUBJECTS)
    # A fact that is missing makes the comparison false whatever the doubtful ones say.
    absent = op != "exists" and any(
        lookup(facts, p) in (MISSING, None) for p in paths if not doubtful(p)
    )
    if not absent and any(doubtful(path) for path in paths):
        return None
    return evaluate(condition, facts, answers)


def _fact_paths(comparison: Mapping[str, Any]) -> list[str]:
    """The facts one comparison reads: its subject's and its operand's (times, plus included)."""
    paths = [comparison["fact"]] if "fact" in comparison else []
    for key, value in comparison.items():
        if key not in SUBJECTS and key in (*COMPARISONS, *MODIFIERS) and isinstance(value, Mapping):
            paths += _fact_paths(value)
    return paths
