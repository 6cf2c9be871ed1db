"""A node's probe calls run: a round measured (or kept, when nothing touched its path since), an
A/A pair's noise and the baseline's stability, rounds side by side.
"""

from __future__ import annotations

from typing import Any

from wizard.measure import (
    contention,
    noise_bands,
)
from wizard.measure.sequential import Question, time_budget
from wizard.playbook import Node, ProbeCall
from wizard.probes.runner import ProbeResult, run_probe
from wizard.walk import budget, stability
from wizard.walk.comparisons import COMPARED_SEGMENTS, compare_states, resolve
from wizard.walk.session import Session, note
from wizard.workload import Workload


async def run_call(
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
        key: resolve(value, session)
        for key, value in call.params.items()
        if key not in ("repeat_of", "compare_with")
    }
    if round_label is None and (since := untouched_since(session, call, params)) is not None:
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
        if (
            session.limits is not None
            and cost is not None
            and session.limits.over_cap(call.name, cost)
        ):
            # --max-requests holds for a repeat too: the contended round stands, said as such.
            note(session, node.id, "note.contended_over_cap", round=label, why=_client_reason(result.facts["client"]),
                 n=session.limits.priced(call.name, cost).requests, most=session.limits.max_requests)  # fmt: skip
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
                return await run_call(session, node, call, label, repeated + 1, question)
            note(session, node.id, "note.baseline_unstable", round=str(repeat_of),
                 moved=stability.moved_text(moved))  # fmt: skip
    if compare_with and result.error is None:
        _side_by_side(session, node, str(compare_with), call.as_)
    return result.facts


# The only changes that leave a path's rounds as they were: nginx's, on the direct path (every
# other layer, the server, its host, the client, the wizard's own measuring client, touches all).
PATH_ONLY_LAYERS = {"nginx": "proxy"}

LOAD_PROBES = ("measure", "validate")


def untouched_since(session: Session, call: ProbeCall, params: dict[str, Any]) -> str | None:
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
    compare_states(session, node, rounds[:1], rounds[1:], label)


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
    calibrated(session, data)
    session.record("noise", node.id, data)
    return moved


def calibrated(session: Session, data: dict[str, Any]) -> None:
    """What an A/A pair's ``noise`` event tells the walk: the bands, and whether the baseline is
    stable (a later pair of the same round replaces an earlier one's word)."""
    session.facts["noise"] = data["bands"]
    first, again = data["rounds"][0], str(data["rounds"][-1]).split("#")[0]
    unstable = session.unstable
    unstable.pop(first, None)
    if data.get("unstable"):
        unstable[first] = {"repeat": again, "moved": data["unstable"]}
