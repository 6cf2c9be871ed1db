"""The walk: node -> questions -> probes -> rules -> findings -> one-change loop -> next edge.

The engine knows no terminal. It talks to an Operator (answers, decisions), the probe runner and
the transcript writer, and hands every event it writes to ``on_event`` so a renderer can show it.
Its state (facts, answers, findings, measurements, changes) is rebuilt from a transcript's events
by ``restore``, which is how ``resume`` continues a killed session.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from wizard import budget, changes, conditions, config_check, contention, stability
from wizard.measure import (
    IncomparableError,
    MeasurementSpec,
    check_comparable,
    compare_rounds,
    noise_bands,
)
from wizard.operator import Decision, Operator, coerce
from wizard.playbook import END, START, Finding, Node, Playbook, ProbeCall
from wizard.probes.runner import ProbeContext, ProbeResult, run_probe
from wizard.sequential import Question, time_budget
from wizard.transcript import TranscriptWriter
from wizard.words import LANGS, evidence_source, joined, percent, recorded, texts
from wizard.workload import Workload

COMPARED_SEGMENTS = ("ttft_ms", "tpot_ms", "itl_ms")
# An inconclusive verdict after a change is measured again, up to twice, before it is reported
# (P6.5): one repeat left 7 % of A/A comparisons inconclusive with a busy core.
REPEATS_WHEN_INCONCLUSIVE = 2
# Findings about the wizard's own measurement, never a cause of the incident.
MEASUREMENT_CAUSES = frozenset({"client_saturated"})
# What a change's own round is compared with, on the path where the change acts; any other
# comparison (LoadGen after the last change, on the direct path) validates every change together.
CHANGE_COMPARISONS = ("baseline", "previous round")
# The wizard's target is no OpenAI API (LAT021): the walk stops before any round, nothing measured.
UNMEASURABLE_CAUSES = frozenset({"wrong_endpoint"})


def visited_key(node_id: str) -> str:
    """Node ids contain dots, fact paths split on them: ``nginx.buffering`` -> ``nginx_buffering``."""
    return node_id.replace(".", "_")


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


def note(session: Session, node_id: str, key: str, **values: Any) -> None:
    """A note of the walk: its English text, and the same in every language the wording has."""
    said = texts(key, **values)
    session.record("note", node_id, {"text": said["en"], "texts": said})


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
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    # Rules that turned on a contended client's timing or an unstable baseline, by code.
    inconclusive: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Rounds whose A/A repeat disagreed with them: {round: {"repeat": as, "moved": {...}}}.
    unstable: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_measure: dict[str, tuple[ProbeCall, dict[str, Any]]] = field(default_factory=dict)
    # How many changes had been made when each load round (measure, validate) last succeeded: a
    # round walked again that no change since can have touched is not measured again.
    ran_after: dict[str, int] = field(default_factory=dict)
    # The stage being walked, and how many findings came before it (its PASS line counts the rest).
    stage: str | None = None
    stage_start: int = 0
    stage_errors: int = 0  # probes of this stage that failed (a stage with one did not pass)
    stage_unjudged: int = 0  # rules inconclusive before this stage (one said in it did not pass)
    limits: budget.Limits | None = None  # --max-requests and --deadline (run); None: no limits

    def enter_stage(self, stage: str) -> None:
        """A node of ``stage`` is entered: a new stage starts when it differs from the last."""
        if stage != self.stage:
            self.stage, self.stage_start, self.stage_errors = stage, len(self.findings), 0
            self.stage_unjudged = len(self.inconclusive)

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
            session.enter_stage(data.get("stage"))
            key = visited_key(node)
            session.facts["visited"][key] = session.facts["visited"].get(key, 0) + 1
            next_node = node
        elif kind == "answer":
            session.answers[data["id"]] = data["value"]
        elif kind == "probe_result":
            session.stage_errors += bool(data["error"])
            session.facts[data["as"]] = (
                data["facts"] if not data["error"] else {"error": data["error"]}
            )
            if not data["error"]:
                session.ran_after[data["as"]] = len(session.changes)
        elif kind == "finding":
            session.findings.append(data)
        elif kind == "measurement":
            session.measurements.append(data)
        elif kind == "change":
            session.changes.append(data)
            if data.get("layer") == "measurement" and data.get("after") is not None:
                session.ctx.client_concurrency = int(data["after"])
        elif kind == "comparison":
            session.comparisons.append(data)
        elif kind == "noise":
            _calibrated(session, data)
        elif kind == "verdict":
            session.verdicts.append(data)
        elif kind == "inconclusive":
            session.inconclusive[data["code"]] = data
        elif kind == "node_exit":
            next_node = data["next"]
        elif kind == "end":
            next_node = END
    # What the first node learned about the server limits later rounds (a long prompt must fit).
    endpoints = session.facts.get("endpoints") or {}
    session.ctx.max_model_len = session.ctx.max_model_len or endpoints.get("max_model_len")
    return next_node


IDENTITY = ("model", "version", "max_model_len")


async def check_resumed_server(session: Session, at: str) -> None:
    """Before a resumed walk goes on: record the resume, and refuse a different server."""
    from wizard.errors import WizardError

    recorded = {k: (session.facts.get("endpoints") or {}).get(k) for k in IDENTITY}
    result = await run_probe("endpoints", session.ctx, {})
    now = {k: (result.facts or {}).get(k) for k in IDENTITY} if result.error is None else {}
    differs = {k: [recorded[k], now.get(k)] for k in IDENTITY
               if recorded[k] is not None and now.get(k) is not None and recorded[k] != now[k]}  # fmt: skip
    session.record("resume", None, {"at": at, "server": now, "recorded": recorded,
                                    "differs": differs, "error": result.error})  # fmt: skip
    if differs:
        what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in differs.items())
        raise WizardError(
            f"a different server answers at {session.ctx.target} now ({what}); its numbers cannot "
            "continue this walk: start a new one with 'latency-wizard run'"
        )


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
        await _probe(session, node, call)
    if conditions.evaluate(node.judge_start, session.facts, session.answers):
        await _judge_starts(session, node)
    for rule in node.rules:
        if _shaky(session, node, rule.finding, rule.when):
            continue
        if conditions.evaluate(rule.when, session.facts, session.answers):
            await _finding(session, node, session.playbook.findings[rule.finding])
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
                await _finding(session, other, session.playbook.findings[rule.finding])
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


async def _probe(
    session: Session,
    node: Node,
    call: ProbeCall,
    round_label: str | None = None,
    repeated: int = 0,
    question: Question | None = None,
) -> dict[str, Any]:
    # `repeat_of: AS` marks an A/A round (the same measurement again), `compare_with: AS` a run
    # to set beside an earlier one (LoadGen after the changes, P6.5): not probe parameters.
    repeat_of = call.params.get("repeat_of")
    compare_with = call.params.get("compare_with")
    params = {
        key: _resolve(value, session)
        for key, value in call.params.items()
        if key not in ("repeat_of", "compare_with")
    }
    if round_label is None and (since := _untouched_since(session, call, params)) is not None:
        if call.as_ not in session.ran_after:
            # A run to set beside an earlier one (LoadGen after the changes) that would measure
            # that run's state again: the earlier run's figures are its own.
            session.facts[call.as_] = dict(session.facts[str(compare_with)])
            key = "note.validation_still_current" if since else "note.validation_unchanged"
            note(session, node.id, key, round=call.as_, before=compare_with, changes=since)
        elif since:
            note(session, node.id, "note.still_current", round=call.as_, changes=since)
        else:
            note(session, node.id, "note.still_current_unchanged", round=call.as_)
        return dict(session.facts[call.as_])
    if call.name == "measure" and question is None and repeat_of:
        question = _aa_question(session, str(repeat_of))
    # The incident's request shape (run --model/--endpoint/... or --request-body) and its API.
    params = (session.ctx.workload or Workload()).round_params(
        call.name, params, session.answers.get("api")
    )
    label = round_label or call.as_
    cap = session.ctx.client_concurrency
    if call.name == "measure" and cap and int(params.get("concurrency", 1)) > cap:
        # The wizard lowered its own concurrency after finding its client the bottleneck
        # (LAT050): rounds above it would measure the client again, not the server.
        params = {**params, "concurrency": cap}

    cost = budget.round_cost(call.name, params)
    if session.limits is not None and cost is not None and session.limits.over_cap(call.name, cost):
        session.limits.skipped.append(label)
        note(session, node.id, "note.over_cap", round=label, n=session.limits.priced(call.name, cost).requests,
             spent=session.limits.requests, most=session.limits.max_requests)  # fmt: skip
        return {"error": "skipped: --max-requests"}

    async def run_once() -> ProbeResult:
        # A round compared with others stops once it has answered (sequential.py).
        session.ctx.question = question if call.name == "measure" else None
        busy: dict[str, Any] = {"probe": call.name, "round": label, "params": params}
        if question is not None and call.name == "measure":
            busy["compared_with"] = question.about
            busy["budget_s"] = question.max_s
        session.on_busy(busy)
        try:
            return await budget.run_within(
                session.limits, call.name, cost, lambda: run_probe(call.name, session.ctx, params)
            )
        finally:
            session.ctx.question = None
            session.on_busy(None)

    result = await run_once()
    for again in range(1, contention.REMEASURES + 1):
        # A round its own client could not time is measured again, a bounded number of times.
        if (
            call.name != "measure"
            or result.error is not None
            or not contention.contended(result.facts)
        ):
            break
        note(session, node.id, "note.contended_again", round=label, n=again, most=contention.REMEASURES,
             why=_client_reason(result.facts["client"]))  # fmt: skip
        result = await run_once()
    session.facts[call.as_] = result.facts if result.error is None else {"error": result.error}
    session.stage_errors += result.error is not None
    if result.error is None:
        session.ran_after[call.as_] = len(session.changes)
    session.record("probe_result", node.id, {"as": call.as_, "round": label, **result.to_dict()})
    if call.name == "measure" and result.error is None:
        measurement = {"as": call.as_, "round": label, "fingerprint": result.facts["fingerprint"],
                       "spec": result.facts["spec"], "steady": result.facts["steady"],
                       "cold": result.facts["cold"], "values": result.facts["values"],
                       # Which rounds measured one state (pooled when judged): the same round,
                       # after as many changes.
                       "repeat_of": str(repeat_of) if repeat_of else None,
                       # Still contended after its repeats: its timings judge only an effect
                       # larger than its client's worst late wake-up (contention.beyond).
                       "client_contended": contention.contended(result.facts),
                       "client_lag_max_ms": (result.facts.get("client") or {}).get("loop_lag_max_ms"),
                       "changes_before": len(session.changes),
                       "after_change": bool(session.changes) and session.changes[-1].get("measured") is False,
                       "restarted_before": bool(session.changes) and session.changes[-1].get("restarted", False)
                       and session.changes[-1].get("measured") is False}  # fmt: skip
        if session.changes and session.changes[-1].get("measured") is False:
            session.changes[-1]["measured"] = True
        session.measurements.append(measurement)
        session.record("measurement", node.id, measurement)
        session.last_measure[call.as_] = (call, params)
        if repeat_of and (moved := _noise(session, node, str(repeat_of), measurement)):
            if repeated < stability.REMEASURES:
                # The baseline and its repeat disagree beyond their own intervals: once more.
                label = f"{call.as_}#{repeated + 2}"
                note(session, node.id, "note.baseline_disagrees", round=str(repeat_of), again=label,
                     moved=stability.moved_text(moved))  # fmt: skip
                return await _probe(session, node, call, label, repeated + 1, question)
            note(session, node.id, "note.baseline_unstable", round=str(repeat_of),
                 moved=stability.moved_text(moved))  # fmt: skip
    if compare_with and result.error is None:
        _side_by_side(session, node, str(compare_with), call.as_)
    return result.facts


# The only changes that leave a path's rounds as they were: nginx's, on the direct path (every
# other layer, the server, its host, the client, the wizard's own measuring client, touches all).
PATH_ONLY_LAYERS = {"nginx": "proxy"}
LOAD_PROBES = ("measure", "validate")


def _untouched_since(session: Session, call: ProbeCall, params: dict[str, Any]) -> str | None:
    """A load round walked again (the baseline after an early nginx stage) that no change since
    its last success can have touched: its figures still describe the server, and measuring it
    again would only spend time and load. A run set beside an earlier one (``compare_with``:
    LoadGen after the last change) is that run walked again. Returns the changes it outlived
    (None: measure it)."""
    last = call.as_ if call.as_ in session.ran_after else call.params.get("compare_with")
    if call.name not in LOAD_PROBES or last not in session.ran_after:
        return None
    facts = session.facts.get(last) or {"error": None}
    if "error" in facts or (call.name == "validate" and facts.get("result") != "VALID"):
        return None  # a LoadGen run with failed queries is no figure to keep (LAT060)
    since = session.changes[session.ran_after[last] :]
    path = str(params.get("path", "direct"))
    if any(PATH_ONLY_LAYERS.get(str(c.get("layer")), path) == path for c in since):
        return None
    return ", ".join(f"{c['parameter']} ({c['layer']})" for c in since)


def _aa_question(session: Session, first_as: str) -> Question | None:
    """An A/A repeat's question: does it agree with its first round, or not?"""
    first = next((m for m in reversed(session.measurements) if m["as"] == first_as), None)
    if first is None:
        return None
    wall = (session.facts.get(first_as) or {}).get("wall_s")
    return Question([[first["values"]]], COMPARED_SEGMENTS, about=first_as, max_s=time_budget(wall))


def _client_reason(client: dict[str, Any]) -> dict[str, str] | str:
    """Why the client doubted its timing, in every language the probe said it (a zh walk's note
    printed the English reason)."""
    return client.get("reason_texts") or client.get("reason") or ""


def _side_by_side(session: Session, node: Node, before_as: str, after_as: str) -> None:
    """The same validation run before the first change and after the last, side by side."""
    before, after = session.facts.get(before_as) or {}, session.facts.get(after_as) or {}
    missing = [as_ for as_, run in ((before_as, before), (after_as, after))
               if not any((run.get("values") or {}).values())]  # fmt: skip
    if missing:
        note(session, node.id, "note.no_side_by_side", after=after_as, before=before_as,
             missing=" and ".join(missing))  # fmt: skip
        return
    if before.get("fingerprint") != after.get("fingerprint"):
        note(session, node.id, "note.other_specs", after=after_as, before=before_as)
        return
    rounds = [{"as": as_, "round": as_, "fingerprint": run["fingerprint"],
               "spec": run["measured_spec"], "values": run["values"]}
              for as_, run in ((before_as, before), (after_as, after))]  # fmt: skip
    label = "before the changes" if session.changes else "the same run earlier (nothing changed)"
    _compare(session, node, rounds[:1], rounds[1:], label)


def _noise(session: Session, node: Node, first_as: str, again: dict[str, Any]) -> dict[str, float]:
    """Calibrate the noise band from an A/A pair: the same round measured twice, nothing changed.
    Returns the segments on which the pair disagreed beyond its own intervals (stability.py)."""
    first = next((m for m in session.measurements if m["as"] == first_as), None)
    if first is None or first["fingerprint"] != again["fingerprint"]:
        return {}
    bands = noise_bands(first["values"], again["values"], COMPARED_SEGMENTS)
    moved = stability.disagreement(first["values"], again["values"], COMPARED_SEGMENTS)
    data = {"rounds": [first["round"], again["round"]], "bands": bands,
            **({"unstable": moved} if moved else {})}  # fmt: skip
    _calibrated(session, data)
    session.record("noise", node.id, data)
    return moved


def _calibrated(session: Session, data: dict[str, Any]) -> None:
    """What an A/A pair's ``noise`` event tells the walk: the bands, and whether the baseline is
    stable (a later pair of the same round replaces an earlier one's word)."""
    session.facts["noise"] = data["bands"]
    first, again = data["rounds"][0], str(data["rounds"][-1]).split("#")[0]
    unstable = session.unstable
    unstable.pop(first, None)
    if data.get("unstable"):
        unstable[first] = {"repeat": again, "moved": data["unstable"]}


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


async def _finding(session: Session, node: Node, finding: Finding) -> None:
    # The change is computed from what the walk knows about the server now, never a constant.
    finding = replace(
        finding, change=changes.propose(finding.change, session.facts, session.answers)
    )
    data = {
        "code": finding.code, "cause": finding.cause, "severity": finding.severity,
        "title": finding.title, "advice": finding.advice,
        **evidence_fields("evidence", finding.evidence, session.facts, session.answers),
        "change": finding.change, "docs": list(finding.docs),
    }  # fmt: skip
    session.findings.append(data)
    session.record("finding", node.id, data)
    if finding.change is None:
        return
    unusable = changes.unusable(finding.change)
    if unusable:
        note(session, node.id, "note.no_value", code=finding.code,
             why=recorded("not_applicable", unusable))  # fmt: skip
        if finding.change.get("not_applicable") or finding.change.get("layer") == "measurement":
            return
        # No value computed (the server's current one is unknown): the change still says what
        # to read, and an operator who reads it may make it by hand and say so.
    if finding.change.get("layer") == "measurement":
        # The wizard's own measuring client: the wizard changes it itself, nobody is asked.
        decision = Decision(applied=True, layer="measurement", parameter=str(finding.change["parameter"]),
                            before=str(finding.change.get("before")),
                            after=str(finding.change["after"]),
                            note="the wizard lowered its own concurrency and measures again")  # fmt: skip
        session.ctx.client_concurrency = int(finding.change["after"])
    else:
        decision = await session.operator.decide(finding, session.lang)
    if not decision.applied:
        note(
            session,
            node.id,
            "note.not_applied",
            code=finding.code,
            why=recorded("decision", decision.note),
        )
        return
    several = changes.more_than_one_change(decision.parameter, decision.after)
    if several:
        note(session, node.id, "note.refused", why=several)
        return
    change = {"code": finding.code, "layer": decision.layer, "parameter": decision.parameter,
              "before": decision.before, "after": decision.after, "note": decision.note,
              "restarted": decision.restarted, "measured": False}  # fmt: skip
    session.changes.append(change)
    session.record("change", node.id, change)
    if (
        decision.restarted
        and decision.parameter == "max_model_len"
        and str(decision.after).isdigit()
    ):
        # Later rounds fit their prompts to the server's context: the restarted server's now.
        session.ctx.max_model_len = int(str(decision.after))
    await _remeasure(session, node, finding, decision.restarted)


def _round_to_repeat(session: Session, node: Node, finding: Finding) -> ProbeCall | None:
    """The round where the change acts: the finding's own (on its path, under its load)."""
    wanted = finding.remeasure
    if wanted is None:
        wanted = next((p.as_ for p in reversed(node.probes) if p.name == "measure"), None)
    if wanted is None:
        return None
    if wanted in session.last_measure:
        return session.last_measure[wanted][0]
    # Not measured yet on this route (an nginx change found before the proxy round ran): measure
    # it now rather than a round on another path, which the change never touches.
    return next(
        (p for n in session.playbook.nodes.values() for p in n.probes
         if p.name == "measure" and p.as_ == wanted and "repeat_of" not in p.params),
        None,
    )  # fmt: skip


async def _remeasure(session: Session, node: Node, finding: Finding, restarted: bool) -> None:
    """Repeat the measurement the finding rests on with the same spec; judge by its evidence."""
    if finding.remeasure == START:
        if (session.facts.get("vllmlog") or {}).get("startup_failed") is False:
            # The cause came while serving: the server's restart is read now.
            await _judge_restart_after_serving(session, node, finding)
            return
        # The server did not start: its next start is the round, judged once it answers.
        note(session, node.id, "note.judged_at_start", code=finding.code)
        return
    call = _round_to_repeat(session, node, finding)
    if call is None:
        note(session, node.id, "note.nothing_to_repeat")
        return
    target_as = call.as_
    if restarted:
        # A restarted server is cold: warm it up so the steady statistic stays steady (P1.2).
        # Warm-up requests are not part of the spec, so the fingerprint is unchanged.
        warmup = max(int(call.params.get("warmup", 0)), 2)
        call = ProbeCall(call.name, call.as_, {**call.params, "warmup": warmup}, call.when)
    previous = [m for m in session.measurements if m["as"] == target_as]
    round_label = f"{target_as}#{len(previous) + 1}"
    before_round = dict(session.facts.get(target_as) or {})
    max_s = time_budget(before_round.get("wall_s"))
    states = []
    if previous:
        states = [_state_of(session, previous[0])]
        if _state_of(session, previous[-1]) != states[0]:
            states.append(_state_of(session, previous[-1]))

    def question(earlier: list[dict[str, Any]]) -> Question | None:
        if not states:
            return None
        return Question([[m["values"] for m in state] for state in states], COMPARED_SEGMENTS,
                        session.facts.get("noise") or {}, [m["values"] for m in earlier],
                        about=target_as, max_s=max_s)  # fmt: skip

    facts = await _probe(session, node, call, round_label, question=question([]))
    if "error" in facts:
        return
    if restarted and not await _check_one_change(session, node, before_round, facts):
        return
    _evidence_verdict(session, node, finding, round_label)
    if not previous:
        note(session, node.id, "note.no_earlier", round=target_as)
        return
    after = [session.measurements[-1]]
    for repeat in range(REPEATS_WHEN_INCONCLUSIVE):
        if not _inconclusive(session, states, after):
            break
        label = f"{target_as}#{len(previous) + 2 + repeat}"
        note(session, node.id, "note.inconclusive", n=len(after), round=target_as, label=label)
        if "error" in await _probe(session, node, call, label, question=question(after)):
            break
        after.append(session.measurements[-1])
    expected = finding.expected_worse
    for state, against in zip(states, CHANGE_COMPARISONS, strict=False):
        _compare(session, node, state, after, against, expected)


async def _check_one_change(
    session: Session, node: Node, before_round: dict[str, Any], after_round: dict[str, Any]
) -> bool:
    """After a restart, diff what the server says about itself; False stops the comparison."""
    change = session.changes[-1]
    identity_before = dict(session.facts.get("endpoints") or {})
    log_before = dict(session.facts.get("vllmlog") or {})
    await _probe(session, node, ProbeCall("endpoints", "endpoints", {}, True))
    identity_after = session.facts.get("endpoints") or {}
    for key in ("model", "version"):
        was, now = identity_before.get(key), identity_after.get(key)
        if was is not None and now is not None and was != now:
            said = texts(
                "check.different_server", target=session.ctx.target, fact=key, was=was, now=now
            )
            session.record("config_check", node.id, {"verdict": "different server", "changed": [key],
                                                     "text": said["en"], "texts": said})  # fmt: skip
            return False
    log_after = None
    if log_before.get("available"):
        new_log = await _read_log_again(session, node)
        # Only a new run in the log describes the restarted server.
        if (new_log.get("runs_count") or 0) > (log_before.get("runs_count") or 0):
            log_after = new_log
    before = config_check.reported(before_round, log_before if log_after else None)
    after = config_check.reported(after_round, log_after)
    diffs = config_check.differences(before, after)
    verdict = config_check.judge(str(change["parameter"]), diffs, set(before) & set(after))
    _record_config_check(session, node, str(change["parameter"]), verdict, diffs)
    return True


def _record_config_check(
    session: Session, node: Node, declared: str, verdict: dict[str, Any], diffs: dict[str, Any]
) -> None:
    """The check's verdict; a change other than (or beside) the declared one is a finding."""
    session.record("config_check", node.id, {**verdict, "declared": declared, "diff": diffs})
    if verdict["verdict"] in ("several", "other"):
        finding = session.playbook.findings["LAT091"]
        data = {
            "code": finding.code, "cause": finding.cause, "severity": finding.severity,
            "title": finding.title, "advice": finding.advice, "evidence": verdict["text"],
            "change": None, "docs": list(finding.docs),
        }  # fmt: skip
        session.findings.append(data)
        session.record("finding", node.id, data)


def _check_start_one_change(
    session: Session, node: Node, log_before: dict[str, Any], log_after: dict[str, Any],
    earlier: str = "refused",
) -> None:  # fmt: skip
    """The earlier start's logged arguments against the new start's: exactly the declared
    parameter should differ. vLLM logs its `non-default args` before it checks them, so a
    refused start has them; a log that begins later (cut, tailed) has nothing to compare.
    ``earlier``: what the earlier start was, ``refused`` or ``served`` (the notes say so)."""
    before, after = config_check.logged(log_before), config_check.logged(log_after)
    if before is None or after is None:
        key = (
            f"note.{earlier}_start_args_missing"
            if before is None
            else "note.new_start_args_missing"
        )
        note(session, node.id, key)
        return
    declared = str(session.changes[-1]["parameter"])
    diffs = config_check.differences(before, after)
    verdict = config_check.judge(declared, diffs, set(before) & set(after))
    _record_config_check(session, node, declared, verdict, diffs)


async def _read_log_again(session: Session, node: Node) -> dict[str, Any]:
    """The vLLM log read again, into ``vllmlog``: what the restarted server wrote."""
    # The playbook's own call, so the log is read with the same parameters (the GPU host's GPUs,
    # which say how many nodes the layout spans).
    first = next(
        (p for n in session.playbook.nodes.values() for p in n.probes
         if p.name == "vllm-log" and p.as_ == "vllmlog"),
        ProbeCall("vllm-log", "vllmlog", {}),
    )  # fmt: skip
    await _probe(session, node, ProbeCall(first.name, first.as_, first.params, True))
    return dict(session.facts.get("vllmlog") or {})


async def _judge_starts(session: Session, node: Node) -> None:
    """A server that did not start now answers: each change made to start it is judged by its
    cause's own evidence, the server's answer and its log read again (a refusal gone, the value
    changed), as a repeated round judges a change to a running server."""
    judged = {v["code"] for v in session.verdicts}
    pending = [
        finding
        for finding in (session.playbook.findings.get(c["code"]) for c in session.changes)
        if finding is not None and finding.remeasure == START and finding.code not in judged
    ]
    if not pending:
        return
    log_before = dict(session.facts.get("vllmlog") or {})
    log_after = await _read_log_again(session, node) if log_before.get("available") else None
    if log_after is None or log_after == log_before:
        # The log holds nothing the restarted server wrote: what it says is the failed start.
        for finding in pending:
            note(session, node.id, "note.log_unchanged", code=finding.code)
        return
    _check_start_one_change(session, node, log_before, log_after)
    for finding in pending:
        _evidence_verdict(session, node, finding, _next_start(session))


def _next_start(session: Session) -> str:
    """The label of the start being judged: the failed start was start#1, each one judged since
    counts one more."""
    starts = sum(1 for v in session.verdicts if str(v.get("round", "")).startswith("start#"))
    return f"start#{starts + 2}"


async def _judge_restart_after_serving(session: Session, node: Node, finding: Finding) -> None:
    """A `remeasure: start` cause that came while the server was serving (a CUDA out of memory
    under load): the new start is read as for a refused one, but a start without it proves only
    that the server starts. Its absence is "inconclusive", with the reason; its return is "still
    there"."""
    log_before = dict(session.facts.get("vllmlog") or {})
    await _probe(session, node, ProbeCall("endpoints", "endpoints", {}, True))
    log_after = await _read_log_again(session, node) if log_before.get("available") else None
    if log_after is None or log_after == log_before:
        note(session, node.id, "note.log_unchanged_serving", code=finding.code)
        return
    _check_start_one_change(session, node, log_before, log_after, "served")
    why = texts("note.start_after_serving", code=finding.code)
    _evidence_verdict(session, node, finding, _next_start(session), unproven=why)


def _evidence_verdict(
    session: Session, node: Node, finding: Finding, round_label: str,
    unproven: dict[str, str] | None = None,
) -> None:  # fmt: skip
    """First the cause's own evidence: gone, or still there, in the repeated round.

    ``unproven``: why this round cannot show the cause gone (only still there); its evidence
    of absence is then "inconclusive", with that reason.
    """
    if finding.gone is None:
        return
    doubtful = contention.doubtful_facts(session.facts)
    gone = conditions.evaluate_knowing(finding.gone, session.facts, session.answers, doubtful)
    data = {
        "code": finding.code, "cause": finding.cause, "round": round_label,
        "verdict": "inconclusive" if gone is None else "cause gone" if gone else "cause still there",
        **evidence_fields("evidence", finding.gone_evidence, session.facts, session.answers),
    }  # fmt: skip
    if gone and unproven is not None:
        # The reason goes with the evidence too: every reader of the verdict's line sees why.
        shown = data.get("evidence_texts") or {"en": data["evidence"]}
        data.update(
            verdict="inconclusive", reason=unproven["en"], reason_texts=unproven,
            evidence=joined([data["evidence"], unproven["en"]], "en"),
            evidence_texts={lang: joined([text, unproven.get(lang, unproven["en"])], lang)
                            for lang, text in shown.items()},
        )  # fmt: skip
    elif gone is None:  # its evidence is the client's timing, and the client was contended
        rounds = contention.contended_rounds(session.facts, finding.gone)
        why = contention.reason_texts(session.facts, rounds)
        data.update(contended_rounds=rounds, reason=why.get("en", ""), reason_texts=why)
    session.verdicts.append(data)
    session.record("verdict", node.id, data)


def _resolve(value: Any, session: Session) -> Any:
    """A probe parameter may be ``{answer: id}`` or ``{fact: path}``: the value it names."""
    if isinstance(value, dict) and len(value) == 1:
        if "answer" in value:
            return session.answers.get(value["answer"])
        if "fact" in value:
            found = conditions.lookup(session.facts, value["fact"])
            return None if found is conditions.MISSING else found
    return value


def _spec(record: dict[str, Any]) -> MeasurementSpec:
    return MeasurementSpec(**record["spec"])


def _state_of(session: Session, record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every round that measured what ``record`` measured, in the same state of the server.

    The same round (or its A/A repeat) under the same spec after as many changes. A record from
    an older transcript, without ``changes_before``, stands alone.
    """
    if "changes_before" not in record:
        return [record]

    def key(m: dict[str, Any]) -> tuple[Any, ...]:
        return (m.get("repeat_of") or m["as"], m["fingerprint"], m.get("changes_before"))

    return [m for m in session.measurements if key(m) == key(record)]


def _inconclusive(
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


def _compare(
    session: Session, node: Node, before: list[dict[str, Any]], after: list[dict[str, Any]],
    against: str, expected_worse: tuple[str, ...] = (),
) -> None:  # fmt: skip
    try:
        # Refuse first if the specs differ (P0.2): the rounds of one state share one spec.
        check_comparable(_spec(before[0]), _spec(after[0]))
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
