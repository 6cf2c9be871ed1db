"""The one-change loop: a finding raised, its change decided, its round measured again and judged
first by the cause's evidence, then by latency; a refused start's change proven by the next start.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from wizard.i18n.words import joined, recorded, texts
from wizard.levers import changes, config_check, one_parameter
from wizard.measure import (
    contention,
)
from wizard.measure.sequential import Question, time_budget
from wizard.playbook import START, Finding, Node, ProbeCall, conditions
from wizard.walk.comparisons import (
    CHANGE_COMPARISONS,
    COMPARED_SEGMENTS,
    compare_states,
    state_of,
    still_inconclusive,
)
from wizard.walk.evidence import evidence_fields
from wizard.walk.operator import Decision
from wizard.walk.rounds import run_call
from wizard.walk.session import Session, note

# An inconclusive verdict after a change is measured again, up to twice, before it is reported
# (P6.5): one repeat left 7 % of A/A comparisons inconclusive with a busy core.
REPEATS_WHEN_INCONCLUSIVE = 2


async def raise_finding(session: Session, node: Node, finding: Finding) -> None:
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
    several = one_parameter.more_than_one_change(decision.parameter, decision.after)
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
        states = [state_of(session, previous[0])]
        if state_of(session, previous[-1]) != states[0]:
            states.append(state_of(session, previous[-1]))

    def question(earlier: list[dict[str, Any]]) -> Question | None:
        if not states:
            return None
        return Question([[m["values"] for m in state] for state in states], COMPARED_SEGMENTS,
                        session.facts.get("noise") or {}, [m["values"] for m in earlier],
                        about=target_as, max_s=max_s)  # fmt: skip

    facts = await run_call(session, node, call, round_label, question=question([]))
    if "error" in facts:
        return
    if restarted and not await check_one_change(session, node, before_round, facts):
        return
    _evidence_verdict(session, node, finding, round_label)
    if not previous:
        note(session, node.id, "note.no_earlier", round=target_as)
        return
    after = [session.measurements[-1]]
    for repeat in range(REPEATS_WHEN_INCONCLUSIVE):
        if not still_inconclusive(session, states, after):
            break
        label = f"{target_as}#{len(previous) + 2 + repeat}"
        note(session, node.id, "note.inconclusive", n=len(after), round=target_as, label=label)
        if "error" in await run_call(session, node, call, label, question=question(after)):
            break
        after.append(session.measurements[-1])
    expected = finding.expected_worse
    for state, against in zip(states, CHANGE_COMPARISONS, strict=False):
        compare_states(session, node, state, after, against, expected)


async def check_one_change(
    session: Session, node: Node, before_round: dict[str, Any], after_round: dict[str, Any]
) -> bool:
    """After a restart, diff what the server says about itself; False stops the comparison."""
    change = session.changes[-1]
    identity_before = dict(session.facts.get("endpoints") or {})
    log_before = dict(session.facts.get("vllmlog") or {})
    await run_call(session, node, ProbeCall("endpoints", "endpoints", {}, True))
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
    await run_call(session, node, ProbeCall(first.name, first.as_, first.params, True))
    return dict(session.facts.get("vllmlog") or {})


async def judge_starts(session: Session, node: Node) -> None:
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
    await run_call(session, node, ProbeCall("endpoints", "endpoints", {}, True))
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
