"""Gixy-style fixtures for every finding: ``trigger`` cases raise it, ``_fp`` near misses do not.

The rules are data in the playbook; these cases pin what each rule means, so an edit that makes a
rule fire on a near miss (or stop firing) fails here with the case that changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from wizard import conditions, playbook

FIXTURES = Path(__file__).parent / "fixtures" / "findings"
BOOK = playbook.load()


def raised(code: str, case: dict[str, Any]) -> bool:
    """True when any rule of the playbook that names ``code`` holds for the case."""
    facts, answers = case.get("facts") or {}, case.get("answers") or {}
    return any(
        conditions.evaluate(rule.when, facts, answers)
        for node in BOOK.nodes.values()
        for rule in node.rules
        if rule.finding == code
    )


def cases(kind: str) -> list[Any]:
    found = []
    for path in sorted(FIXTURES.glob("LAT*.yaml")):
        for i, case in enumerate(yaml.safe_load(path.read_text(encoding="utf-8"))[kind]):
            found.append(pytest.param(path.stem, case, id=f"{path.stem}-{kind}{i}"))
    return found


@pytest.mark.parametrize(("code", "case"), cases("trigger"))
def test_trigger_fixtures_raise_their_finding(code: str, case: dict[str, Any]) -> None:
    assert raised(code, case)


@pytest.mark.parametrize(("code", "case"), cases("_fp"))
def test_fp_fixtures_do_not(code: str, case: dict[str, Any]) -> None:
    assert not raised(code, case)


def test_every_finding_has_both_kinds_of_fixture_and_a_rule() -> None:
    files = {path.stem: yaml.safe_load(path.read_text()) for path in FIXTURES.glob("LAT*.yaml")}
    assert set(files) == set(BOOK.findings), "one fixture file per finding, none for unknown codes"
    for code, content in files.items():
        assert content.get("trigger") and content.get("_fp"), f"{code} needs trigger and _fp cases"
    ruled = {rule.finding for node in BOOK.nodes.values() for rule in node.rules}
    assert ruled == set(BOOK.findings), "every finding is raised by some rule"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0.95, "0.95"), (0.0055509, "0.00555"), (164.2869, "164.3"), (35.14, "35.1"), (4.0, "4"),
     (7, "7"), (None, "?")],
)  # fmt: skip
def test_evidence_numbers_keep_their_meaningful_digits(value: Any, shown: str) -> None:
    from wizard.engine import render_evidence

    assert render_evidence("x={a.b}", {"a": {"b": value}}, {}) == f"x={shown}"
