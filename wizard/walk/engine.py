"""The walk: node -> questions -> probes -> rules -> findings -> one-change loop -> next edge.

The engine knows no terminal. It talks to an Operator (answers, decisions), the probe runner and
the transcript writer, and hands every event it writes to ``on_event`` so a renderer can show it.
Its state (``session.py``) is rebuilt from a transcript's events by ``resume.restore``, which is
how ``resume`` continues a killed session. A node's probes run in ``rounds.py``, a finding's
change is decided and proven in ``one_change.py``, rounds are judged in ``comparisons.py``, and a
finding's evidence is worded in ``evidence.py``.
"""

from __future__ import annotations

import itertools
from typing import Any

from wizard.errors import missing_modules
from wizard.i18n.words import LANGS, evidence_source, texts
from wizard.measure import (
    contention,
)
from wizard.playbook import END, Node, conditions
from wizard.walk import budget, stability
from wizard.walk.comparisons import MEASUREMENT_CAUSES
from wizard.walk.one_change import judge_starts, raise_finding
from wizard.walk.operator import coerce
from wizard.walk.rounds import run_call
from wizard.walk.session import Session, note, visited_key
from wizard.workload import Workload

# The wizard's target is no OpenAI API (LAT021): the walk stops before any round, nothing measured.
UNMEASURABLE_CAUSES = frozenset({"wrong_endpoint"})


def session_facts(
    proxy: str | None, target: str | None, nginx_conf: str | None, workload: Workload
) -> dict[str, Any]:
    """What the walk knows before its first probe (``session.*`` facts; the budget plans by
    them too)."""
    return {
        "has_proxy": bool(proxy),
        "target": target,
        "nginx_conf": nginx_conf,
        # The API the operator named (run --endpoint, or the body's): no need to ask.
        "endpoint": workload.endpoint,
        # The incident's body constrains its output (structured outputs): its price is
        # measured by the same round without the constraint.
        "constraint_fields": workload.constraint_fields,
        "constrained": bool(workload.constraint_fields),
        "constraint_chars": workload.constraint_chars,
    }


async def walk(session: Session, start: str | None = None) -> None:
    """Walk from ``start`` (default: the playbook's start) to the end, then record ``end``."""
    playbook = session.playbook
    session.facts.setdefault("visited", {})
    # The optional parts this machine has: MLPerf LoadGen ([loadgen]) sets what validating with
    # it defaults to (the operator may still say yes, and is then told which part to install).
    session.facts.setdefault("install", {"loadgen": not missing_modules("loadgen")})
    session.facts.setdefault(
        "session",
        session_facts(session.ctx.proxy, session.ctx.target, session.ctx.nginx_conf,
                      session.ctx.workload or Workload()),
    )  # fmt: skip
    session.ctx.session = session  # the audit probe reads the session's history
    node_id = start or playbook.start
    try:
        while node_id != END:
            if session.limits is not None:
                session.limits.check_deadline()
            node = playbook.nodes[node_id]
            node_id = await _visit(session, node)
    except budget.DeadlineReached:
        # Past --deadline the walk ends with what it has: the rounds so far, their findings.
        assert session.limits is not None
        note(session, node_id, "note.deadline", seconds=round(session.limits.deadline_s),
             rounds=session.limits.rounds)  # fmt: skip
    spent = {"spent": session.limits.spent()} if session.limits is not None else {}
    session.record("end", None, {
        "findings": [f["code"] for f in session.findings],
        "changes": len(session.changes),
        **outcome(session), **spent,
    })  # fmt: skip


def outcome(session: Session) -> dict[str, Any]:
    """What a script needs to know: does a cause remain, and was anything measured at all.

    A cause is a warn or fail finding; it no longer remains when a later round showed its own
    evidence gone (a ``verdict`` of "cause gone"). ``outcome`` is "no_cause", "cause_remains" or
    "nothing_measured" (no round succeeded and nothing was found, or the target is no OpenAI API).
    """
    gone = {v["code"] for v in session.verdicts if v["verdict"] == "cause gone"}
    remaining = sorted({
        f["cause"] for f in session.findings
        if f["severity"] in ("warn", "fail") and f["code"] not in gone
        and f["cause"] not in MEASUREMENT_CAUSES | UNMEASURABLE_CAUSES
    })  # fmt: skip
    if remaining:
        result = "cause_remains"
    elif not session.measurements and all(
        f["cause"] in UNMEASURABLE_CAUSES for f in session.findings
    ):
        result = "nothing_measured"
    else:
        result = "no_cause"
    # Rules no round could judge (the measuring client was contended) and that never fired.
    raised = {f["code"] for f in session.findings}
    unjudged = sorted(code for code in session.inconclusive if code not in raised)
    return {"outcome": result, "causes_remaining": remaining, "inconclusive": unjudged}


async def _visit(session: Session, node: Node) -> str:
    session.record("node_enter", node.id, {
        "stage": node.stage, "title": node.title, "explain": node.explain, "covers": list(node.covers),
    })  # fmt: skip
    session.enter_stage(node.stage)
    visited = session.facts["visited"]
    visited[visited_key(node.id)] = visited.get(visited_key(node.id), 0) + 1
    if node.sweep:
        await _sweep(session)
    for question in node.ask:
        if not conditions.evaluate(question.when, session.facts, session.answers):
            continue
        # A question answered earlier on this walk (baseline.direct is walked again after an
        # early nginx stage) keeps its answer.
        earlier = (
            [(f"answers.{question.id}", session.answers[question.id])]
            if question.id in session.answers
            else []
        )
        found = itertools.chain(
            earlier,
            ((path, conditions.lookup(session.facts, path)) for path in question.default_facts),
        )
        default_from, default = next(
            # "unknown" is the readers' word for evidence that says nothing (no topology).
            (
                (path, v)
                for path, v in found
                if v is not conditions.MISSING and v not in (None, "unknown")
            ),
            (None, question.default),
        )
        # Evidence that answers the question is shown, not asked (an answers file still wins);
        # a fact that only suggests the answer is asked to confirm.
        known = default_from is not None and default_from not in question.confirm_facts
        session.record("question", node.id, {"id": question.id, "type": question.type, "text": question.text,
                                             "choices": list(question.choices), "default": default,
                                             "default_from": default_from, "asked": not known})  # fmt: skip
        value = coerce(question, await session.operator.ask(question, default, session.lang, known))
        session.answers[question.id] = value
        answer = {"id": question.id, "value": value}
        if known and value == default and default_from is not None:
            answer["from_evidence"] = default_from
            answer["from_evidence_texts"] = _source_texts(session, default_from)
        session.record("answer", node.id, answer)
    for call in node.probes:
        if not conditions.evaluate(call.when, session.facts, session.answers):
            if call.skipped:
                note(session, node.id, "note.skipped_because", probe=call.name, label=call.as_,
                     why=call.skipped)  # fmt: skip
            else:
                note(session, node.id, "note.skipped", probe=call.name, label=call.as_)
            continue
        await run_call(session, node, call)
    if conditions.evaluate(node.judge_start, session.facts, session.answers):
        await judge_starts(session, node)
    for rule in node.rules:
        if _shaky(session, node, rule.finding, rule.when):
            continue
        if conditions.evaluate(rule.when, session.facts, session.answers):
            await raise_finding(session, node, session.playbook.findings[rule.finding])
        else:
            _unjudged(session, node, rule.finding, rule.when)
    edge = next(e for e in node.next if conditions.evaluate(e.when, session.facts, session.answers))
    exit_data: dict[str, Any] = {"next": edge.to}
    if edge.to == END or session.playbook.nodes[edge.to].stage != node.stage:
        exit_data["stage_done"] = _stage_result(session, node.stage)
    session.record("node_exit", node.id, exit_data)
    return edge.to


def _source_texts(session: Session, path: str) -> dict[str, str]:
    """Where an answer came from, in every language (an nginx location named by its path)."""
    parts = path.split(".")
    location = None
    if parts[0] == "nginxconf" and len(parts) > 3:
        found = conditions.lookup(session.facts, ".".join([*parts[:3], "path"]))
        location = found if isinstance(found, str) else None
    return {lang: evidence_source(path, lang, location) for lang in LANGS}


def _stage_result(session: Session, stage: str) -> dict[str, Any]:
    """A stage the walk leaves: the findings raised in it (no warn or fail: it passed)."""
    raised = session.findings[session.stage_start :]
    severe = [f["code"] for f in raised if f["severity"] in ("warn", "fail")]
    unjudged = list(session.inconclusive)[session.stage_unjudged :]
    return {"stage": stage, "passed": not severe and not session.stage_errors and not unjudged,
            "findings": [f["code"] for f in raised], "failed_probes": session.stage_errors,
            "inconclusive": unjudged}  # fmt: skip


async def _sweep(session: Session) -> None:
    """Every rule again, over all the evidence: findings whose evidence came after their node."""
    raised = {f["code"] for f in session.findings}
    for other in session.playbook.nodes.values():
        for rule in other.rules:
            if (
                rule.finding in raised
                or other.sweep
                or _shaky(session, other, rule.finding, rule.when)
            ):
                continue
            if conditions.evaluate(rule.when, session.facts, session.answers):
                raised.add(rule.finding)
                note(session, other.id, "note.sweep", code=rule.finding, node=other.id)
                await raise_finding(session, other, session.playbook.findings[rule.finding])
            else:
                _unjudged(session, other, rule.finding, rule.when)


def _unjudged(session: Session, node: Node, code: str, condition: Any) -> None:
    """A rule that did not fire, but might have had its rounds' client not been contended:
    inconclusive, said once, never "no cause" and never a cause."""
    if code in session.inconclusive or any(f["code"] == code for f in session.findings):
        return
    if not contention.rule_unknown(condition, session.facts, session.answers):
        return
    finding = session.playbook.findings[code]
    rounds = contention.contended_rounds(session.facts, condition)
    why = contention.reason_texts(session.facts, rounds)
    data = {"code": code, "cause": finding.cause, "title": finding.title, "rounds": rounds,
            "reason": why.get("en", ""), "reason_texts": why}  # fmt: skip
    session.inconclusive[code] = data
    session.record("inconclusive", node.id, data)


def _shaky(session: Session, node: Node, code: str, condition: Any) -> bool:
    """A rule whose outcome depends on which round of an unstable A/A pair is believed: recorded
    inconclusive (once), never a cause and never "no cause"."""
    flips = stability.flipping_rounds(condition, session.facts, session.answers, session.unstable)
    if not flips:
        return False
    if code not in session.inconclusive and not any(f["code"] == code for f in session.findings):
        finding = session.playbook.findings[code]
        moved = stability.moved_text(session.unstable[flips[0]]["moved"])
        why = texts("reason.baseline_unstable", round=flips[0], moved=moved)
        data = {"code": code, "cause": finding.cause, "title": finding.title, "rounds": flips,
                "reason": why["en"], "reason_texts": why}  # fmt: skip
        session.inconclusive[code] = data
        session.record("inconclusive", node.id, data)
    return True
