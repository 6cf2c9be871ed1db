"""The walk: node -> questions -> probes -> rules -> findings -> one-change loop -> next edge.

The engine knows no terminal. It talks to an Operator (answers, decisions), the probe runner and
the transcript writer, and hands every event it writes to ``on_event`` so a renderer can show it.
Its state (facts, answers, findings, measurements, changes) is rebuilt from a transcript's events
by ``restore``, which is how ``resume`` continues a killed session.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wizard import changes, conditions
from wizard.measure import IncomparableError, Measurement, MeasurementSpec, compare
from wizard.operator import Operator, coerce
from wizard.playbook import END, Finding, Node, Playbook, ProbeCall
from wizard.probes.runner import ProbeContext, run_probe
from wizard.transcript import TranscriptWriter

COMPARED_SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms")


def visited_key(node_id: str) -> str:
    """Node ids contain dots, fact paths split on them: ``nginx.buffering`` -> ``nginx_buffering``."""
    return node_id.replace(".", "_")


def render_evidence(template: str, facts: dict[str, Any], answers: dict[str, Any]) -> str:
    """Fill ``{a.b.c}`` (facts) and ``{answers.x}`` placeholders; unknown values show as '?'."""

    def value(path: str) -> str:
        if path.startswith("answers."):
            found = answers.get(path.removeprefix("answers."), conditions.MISSING)
        else:
            found = conditions.lookup(facts, path)
        if found is conditions.MISSING or found is None:
            return "?"
        if isinstance(found, float):
            if found.is_integer():
                return str(int(found))
            # Milliseconds read well with one decimal; fractions (0.95) need their digits.
            return f"{found:.1f}" if abs(found) >= 10 else f"{found:.3g}"
        return str(found)

    out, rest = [], template
    while "{" in rest and "}" in rest.split("{", 1)[1]:
        head, tail = rest.split("{", 1)
        path, rest = tail.split("}", 1)
        out.append(head + value(path.strip()))
    return "".join(out) + rest


@dataclass
class Session:
    """Everything one walk accumulates."""

    playbook: Playbook
    ctx: ProbeContext
    operator: Operator
    writer: TranscriptWriter
    lang: str = "en"
    on_event: Callable[[dict[str, Any]], None] = lambda event: None
    # The probe call running now ({probe, round, params}; None when it is done); never recorded.
    on_busy: Callable[[dict[str, Any] | None], None] = lambda call: None
    facts: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    last_measure: dict[str, tuple[ProbeCall, dict[str, Any]]] = field(default_factory=dict)

    def record(self, kind: str, node: str | None, data: dict[str, Any]) -> dict[str, Any]:
        """Write an event and show it."""
        event = self.writer.append(kind, node, data)
        self.on_event(event)
        return event


def restore(session: Session, events: list[dict[str, Any]]) -> str:
    """Rebuild the session's state from recorded events; return the node to continue at."""
    session.facts.setdefault("visited", {})
    next_node = session.playbook.start
    for event in events:
        kind, data, node = event["type"], event["data"], event["node"]
        if kind == "node_enter":
            key = visited_key(node)
            session.facts["visited"][key] = session.facts["visited"].get(key, 0) + 1
            next_node = node
        elif kind == "answer":
            session.answers[data["id"]] = data["value"]
        elif kind == "probe_result":
            session.facts[data["as"]] = (
                data["facts"] if not data["error"] else {"error": data["error"]}
            )
        elif kind == "finding":
            session.findings.append(data)
        elif kind == "measurement":
            session.measurements.append(data)
        elif kind == "change":
            session.changes.append(data)
        elif kind == "comparison":
            session.comparisons.append(data)
        elif kind == "node_exit":
            next_node = data["next"]
        elif kind == "end":
            next_node = END
    return next_node


async def walk(session: Session, start: str | None = None) -> None:
    """Walk from ``start`` (default: the playbook's start) to the end, then record ``end``."""
    playbook = session.playbook
    session.facts.setdefault("visited", {})
    session.facts.setdefault(
        "session",
        {
            "has_proxy": bool(session.ctx.proxy),
            "target": session.ctx.target,
            "nginx_conf": session.ctx.nginx_conf,
        },
    )
    session.ctx.session = session  # the audit probe reads the session's history
    node_id = start or playbook.start
    while node_id != END:
        node = playbook.nodes[node_id]
        node_id = await _visit(session, node)
    session.record("end", None, {
        "findings": [f["code"] for f in session.findings],
        "changes": len(session.changes),
    })  # fmt: skip


async def _visit(session: Session, node: Node) -> str:
    session.record("node_enter", node.id, {
        "stage": node.stage, "title": node.title, "explain": node.explain, "covers": list(node.covers),
    })  # fmt: skip
    visited = session.facts["visited"]
    visited[visited_key(node.id)] = visited.get(visited_key(node.id), 0) + 1
    for question in node.ask:
        if not conditions.evaluate(question.when, session.facts, session.answers):
            continue
        known = ((path, conditions.lookup(session.facts, path)) for path in question.default_facts)
        default_from, default = next(
            ((path, v) for path, v in known if v is not conditions.MISSING and v is not None),
            (None, question.default),
        )
        session.record("question", node.id, {"id": question.id, "type": question.type, "text": question.text,
                                             "choices": list(question.choices), "default": default,
                                             "default_from": default_from})  # fmt: skip
        value = coerce(question, await session.operator.ask(question, default, session.lang))
        session.answers[question.id] = value
        session.record("answer", node.id, {"id": question.id, "value": value})
    for call in node.probes:
        if not conditions.evaluate(call.when, session.facts, session.answers):
            session.record(
                "note",
                node.id,
                {"text": f"probe {call.name} skipped (its condition does not hold)"},
            )
            continue
        await _probe(session, node, call)
    for rule in node.rules:
        if conditions.evaluate(rule.when, session.facts, session.answers):
            await _finding(session, node, session.playbook.findings[rule.finding])
    edge = next(e for e in node.next if conditions.evaluate(e.when, session.facts, session.answers))
    session.record("node_exit", node.id, {"next": edge.to})
    return edge.to


async def _probe(
    session: Session, node: Node, call: ProbeCall, round_label: str | None = None
) -> dict[str, Any]:
    params = {key: _resolve(value, session) for key, value in call.params.items()}
    label = round_label or call.as_
    session.on_busy({"probe": call.name, "round": label, "params": params})
    try:
        result = await run_probe(call.name, session.ctx, params)
    finally:
        session.on_busy(None)
    session.facts[call.as_] = result.facts if result.error is None else {"error": result.error}
    session.record("probe_result", node.id, {"as": call.as_, "round": label, **result.to_dict()})
    if call.name == "measure" and result.error is None:
        measurement = {"as": call.as_, "round": label, "fingerprint": result.facts["fingerprint"],
                       "spec": result.facts["spec"], "steady": result.facts["steady"],
                       "cold": result.facts["cold"], "values": result.facts["values"],
                       "after_change": bool(session.changes) and session.changes[-1].get("measured") is False,
                       "restarted_before": bool(session.changes) and session.changes[-1].get("restarted", False)
                       and session.changes[-1].get("measured") is False}  # fmt: skip
        if session.changes and session.changes[-1].get("measured") is False:
            session.changes[-1]["measured"] = True
        session.measurements.append(measurement)
        session.record("measurement", node.id, measurement)
        session.last_measure[call.as_] = (call, params)
    return result.facts


async def _finding(session: Session, node: Node, finding: Finding) -> None:
    # The change is computed from what the walk knows about the server now, never a constant.
    finding = replace(
        finding, change=changes.propose(finding.change, session.facts, session.answers)
    )
    data = {
        "code": finding.code, "cause": finding.cause, "severity": finding.severity,
        "title": finding.title, "advice": finding.advice,
        "evidence": render_evidence(finding.evidence, session.facts, session.answers),
        "change": finding.change, "docs": list(finding.docs),
    }  # fmt: skip
    session.findings.append(data)
    session.record("finding", node.id, data)
    if finding.change is None:
        return
    unusable = changes.unusable(finding.change)
    if unusable:
        session.record("note", node.id, {"text": f"{finding.code}: no value to apply ({unusable})"})
        return
    decision = await session.operator.decide(finding, session.lang)
    if not decision.applied:
        session.record(
            "note", node.id, {"text": f"{finding.code}: change not applied ({decision.note})"}
        )
        return
    if "," in decision.parameter or " and " in decision.parameter:
        session.record("note", node.id, {"text": (
            f"refused: '{decision.parameter}' names more than one parameter; one change per round "
            "(P0.2), so its effect can be attributed"
        )})  # fmt: skip
        return
    change = {"code": finding.code, "layer": decision.layer, "parameter": decision.parameter,
              "before": decision.before, "after": decision.after, "note": decision.note,
              "restarted": decision.restarted, "measured": False}  # fmt: skip
    session.changes.append(change)
    session.record("change", node.id, change)
    await _remeasure(session, node, finding.remeasure, decision.restarted)


async def _remeasure(session: Session, node: Node, wanted: str | None, restarted: bool) -> None:
    """Repeat the measurement the finding rests on with the same spec, and compare."""
    target_as = wanted if wanted in session.last_measure else None
    if target_as is None:
        target_as = next((p.as_ for p in reversed(node.probes) if p.name == "measure"), None)
    if target_as is None or target_as not in session.last_measure:
        target_as = next(reversed(session.last_measure), None) if session.last_measure else None
    if target_as is None:
        session.record(
            "note", node.id, {"text": "nothing measured yet to repeat after this change"}
        )
        return
    call, _ = session.last_measure[target_as]
    if restarted:
        # A restarted server is cold: warm it up so the steady statistic stays steady (P1.2).
        # Warm-up requests are not part of the spec, so the fingerprint is unchanged.
        warmup = max(int(call.params.get("warmup", 0)), 2)
        call = ProbeCall(call.name, call.as_, {**call.params, "warmup": warmup}, call.when)
    previous = [m for m in session.measurements if m["as"] == target_as]
    round_label = f"{target_as}#{len(previous) + 1}"
    facts = await _probe(session, node, call, round_label)
    if "error" in facts:
        return
    after = session.measurements[-1]
    _compare(session, node, previous[0], after, "baseline")
    if len(previous) > 1:
        _compare(session, node, previous[-1], after, "previous round")


def _resolve(value: Any, session: Session) -> Any:
    """A probe parameter may be ``{answer: id}`` or ``{fact: path}``: the value it names."""
    if isinstance(value, dict) and len(value) == 1:
        if "answer" in value:
            return session.answers.get(value["answer"])
        if "fact" in value:
            found = conditions.lookup(session.facts, value["fact"])
            return None if found is conditions.MISSING else found
    return value


def _measurement(record: dict[str, Any]) -> Measurement:
    return Measurement(MeasurementSpec(**record["spec"]), record["values"])


def _compare(
    session: Session, node: Node, before: dict[str, Any], after: dict[str, Any], against: str
) -> None:
    try:
        results = compare(_measurement(before), _measurement(after))
    except IncomparableError as exc:
        session.record("note", node.id, {"text": f"not compared with the {against}: {exc}"})
        return
    data = {"against": against, "before": before["round"], "after": after["round"],
            "fingerprint": after["fingerprint"],
            "segments": [r.to_dict() for r in results if r.segment in COMPARED_SEGMENTS]}  # fmt: skip
    session.comparisons.append(data)
    session.record("comparison", node.id, data)
