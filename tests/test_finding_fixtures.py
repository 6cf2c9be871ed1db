"""Gixy-style fixtures for every finding: ``trigger`` cases raise it, ``_fp`` near misses do not.

The rules are data in the playbook; these cases pin what each rule means, so an edit that makes a
rule fire on a near miss (or stop firing) fails here with the case that changed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from wizard import playbook
from wizard.playbook import conditions

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
    from wizard.walk.evidence import render_evidence

    assert render_evidence("x={a.b}", {"a": {"b": value}}, {}) == f"x={shown}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1.0, "100 %"), (0.209, "21 %"), (0.0011101859561476468, "0.1 %"), (0, "0 %"),
     (None, "?"), ("on", "on")],
)  # fmt: skip
def test_fractions_read_as_percentages(value: Any, shown: str) -> None:
    """A KV peak of 0.0011 read "peaked at 0.0011" and a full cache "peaked at 1"."""
    from wizard.walk.evidence import render_evidence

    assert render_evidence("x={a.b:%}", {"a": {"b": value}}, {}) == f"x={shown}"


# -- the change each finding proposes ------------------------------------------------------------


def proposed(code: str, case: dict[str, Any]) -> dict[str, Any] | None:
    from wizard.levers.changes import propose

    return propose(BOOK.findings[code].change, case.get("facts") or {}, case.get("answers") or {})


@pytest.mark.parametrize(("code", "case"), [c for c in cases("trigger") if "change" in c.values[1]])
def test_trigger_fixtures_propose_the_change_computed_from_their_facts(
    code: str, case: dict[str, Any]
) -> None:
    change = proposed(code, case)
    assert change is not None and "not_applicable" not in change, change
    assert {key: change[key] for key in case["change"]} == case["change"]


def _number(value: Any) -> float | None:
    try:
        return float(str(value).removesuffix("s"))
    except (TypeError, ValueError):
        return None


@pytest.mark.parametrize(("code", "case"), cases("trigger"))
def test_every_computed_change_moves_the_right_way_and_would_start(
    code: str, case: dict[str, Any]
) -> None:
    """Whatever the facts, a computed change is never a no-op, never goes against its finding's
    direction, and never names a configuration vLLM refuses to start with."""
    from wizard.levers.refusals import refusals, server_config

    template = BOOK.findings[code].change
    if template is None or "compute" not in template:
        pytest.skip(f"{code} proposes no computed change")
    change = proposed(code, case)
    assert change is not None
    if change.get("after") is None:
        assert "<" in change["apply"] or change["layer"] == "host", change  # says what to read
        return
    assert change["after"] != change["before"], change
    before, after = _number(change["before"]), _number(change["after"])
    direction = template.get("direction")
    if before is not None and after is not None and change["parameter"] == template["parameter"]:
        assert (
            after > before
            if direction == "raise"
            else after < before
            if direction == "lower"
            else True
        )
    if change["layer"] == "vllm":
        config = {**server_config(case.get("facts") or {}), change["parameter"]: change["after"]}
        assert refusals(config) == [], config


def test_refusals_are_vllms_start_up_checks() -> None:
    from wizard.levers.refusals import refusals

    assert refusals(
        {"chunked_prefill": False, "max_model_len": 2048, "max_num_batched_tokens": 512}
    )
    assert not refusals(
        {"chunked_prefill": True, "max_model_len": 2048, "max_num_batched_tokens": 512}
    )
    # vLLM needs max_model_len / block_size + 1 blocks (16 of 128 cannot hold 2048; 17 can).
    assert refusals({"num_gpu_blocks": 16, "block_size": 128, "max_model_len": 2048})
    assert not refusals({"num_gpu_blocks": 17, "block_size": 128, "max_model_len": 2048})
    assert refusals({"max_num_batched_tokens": 128, "max_num_seqs": 256})


def test_queueing_without_the_servers_stats_is_proven_gone_by_the_same_contrast() -> None:
    """LAT013 found by TTFT growing under load while TPOT stays flat (stats off) is gone when the
    repeated loaded round no longer shows that contrast; it was never gone before (the engine's
    waiting counts it asked for do not exist then)."""
    gone = BOOK.findings["LAT013"].gone
    direct = {"steady": {"ttft_p50": 70, "tpot_p50": 10}}
    queued = {"direct": direct, "loaded": {"steady": {"ttft_p50": 2100, "tpot_p50": 11},
                                           "server": {"available": False}}}  # fmt: skip
    fixed = {"direct": direct, "loaded": {"steady": {"ttft_p50": 160, "tpot_p50": 12},
                                          "server": {"available": False}}}  # fmt: skip
    assert raised("LAT013", {"facts": queued}) and not raised("LAT013", {"facts": fixed})
    assert not conditions.evaluate(gone, queued, {})
    assert conditions.evaluate(gone, fixed, {})
    # With the server's stats on, its own queue decides, whatever the contrast says.
    waiting = {**fixed, "loaded": {**fixed["loaded"], "server": {"available": True, "waiting_max": 6,
                                                                 "waiting_share": 0.9}}}  # fmt: skip
    assert not conditions.evaluate(gone, waiting, {})


def test_a_queue_back_within_the_baseline_spread_is_gone() -> None:
    """LAT013 fires only on a loaded median beyond the baseline's own p99; a repeated round back
    within it is gone, though the engine still counts half of a 43 ms TTFT as queued (the truth
    table's batch-budget-small with max_num_seqs 4 raised to 8: its budget of 256 tokens still
    queues the eight prompts for 22 ms)."""
    gone = BOOK.findings["LAT013"].gone
    direct = {"steady": {"ttft_p50": 28.6, "ttft_p99": 41.0, "tpot_p50": 14.5}}
    repeated = {"available": True, "waiting_max": 8, "waiting_share": 0.06, "running_max": 8,
                "queue_share_of_ttft": 0.51, "queue_mean_ms": 21.9}  # fmt: skip
    fixed = {"direct": direct, "noise": {"ttft_ms": 0.2},
             "loaded": {"steady": {"ttft_p50": 33.6}, "server": repeated}}  # fmt: skip
    assert conditions.evaluate(gone, fixed, {})
    # Still beyond the baseline's spread with the engine's queue the larger part: still there.
    queued = {**fixed, "loaded": {"steady": {"ttft_p50": 900.0}, "server": repeated}}
    assert not conditions.evaluate(gone, queued, {})


# -- the evidence in every language --------------------------------------------------------------

QUOTED_ONLY = re.compile(r"\{[a-z_.]+\}")


@pytest.mark.parametrize("code", sorted(BOOK.findings))
def test_every_evidence_is_worded_in_chinese(code: str) -> None:
    """Issue #13: a zh walk showed LAT018's, LAT019's, LAT035's, LAT072's, LAT073's and LAT079's
    evidence in English (their templates had no zh). A template with only English is one that
    only quotes what a probe recorded in every language (``{replicas.evidence.<cause>}``)."""
    finding = BOOK.findings[code]
    for name in ("evidence", "gone_evidence"):
        template = getattr(finding, name)
        if template and "zh" not in template:
            assert QUOTED_ONLY.fullmatch(template["en"]), (code, name, template["en"])


def test_a_clause_whose_every_figure_is_unknown_is_left_out() -> None:
    """With the server's stats off, LAT013's evidence read "up to ? requests waiting; ? of the
    engine's TTFT spent in its queue (? ms on average); TTFT p50 34.5 ms ..."."""
    from wizard.walk.evidence import render_evidence

    facts = {"loaded": {"server": {"available": False},
                        "steady": {"ttft_p50": 134.5, "tpot_p50": 11.4}},
             "direct": {"steady": {"ttft_p50": 25.5, "tpot_p50": 11.4}}}  # fmt: skip
    finding = BOOK.findings["LAT013"]
    assert render_evidence(finding.evidence["en"], facts, {}) == (
        "TTFT p50 134.5 ms (baseline 25.5 ms), TPOT p50 11.4 ms (baseline 11.4 ms)"
    )
    zh = render_evidence(finding.evidence["zh"], facts, {}, "zh")
    assert "?" not in zh and zh.startswith("TTFT p50 134.5 ms"), zh
    # A clause with one figure known keeps its unknown one; a text of unknowns only is said whole.
    assert render_evidence("a {x.y} of {x.z}; b {x.w}", {"x": {"y": 1}}, {}) == "a 1 of ?"
    assert render_evidence("b {x.w}; c {x.v}", {}, {}) == "b ?; c ?"
    assert render_evidence("a {x.y}；b {x.w}", {"x": {"y": 1}}, {}, "zh") == "a 1"
