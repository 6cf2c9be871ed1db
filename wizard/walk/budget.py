"""The load a walk will send, its cap (``--max-requests``) and its deadline (``--deadline``).

Before its first request ``run`` says how many requests and tokens each stage will send and at
what concurrency: computed from the playbook's rounds (their ``requests``, ``warmup``,
``concurrency``, token counts, as the incident's workload shapes them), never a constant. A
round's rules decide at walk time whether it runs, so the plan is an upper bound of the planned
rounds; a change applied repeats its round (and an inconclusive one up to twice more), which the
cap and the deadline count as they come.

The deadline gives each planned request the time the loosest MLPerf datacenter LLM Server
constraint allows one (Llama2-70b and Mixtral: TTFT 2000 ms, TPOT 200 ms; facts:
nginx-and-mlperf.md): a server slower than that on every request fails every published LLM
latency target, and the walk ends with what it has rather than wait on it.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.probes.runner import ProbeResult

TTFT_ALLOWANCE_S = 2.0
TPOT_ALLOWANCE_S = 0.2
# The endpoints probe asks completions, chat and a `suffix` once each, one token (endpoints.py);
# its /v1/models, /health and /version are no generation.
ENTRY_PINGS = 3
LOAD_PROBES = ("measure", "replicas", "validate")


class DeadlineReached(Exception):
    """The walk's deadline passed: it ends with what it has."""


@dataclass(frozen=True)
class RoundCost:
    """What one round sends: its requests, their tokens (prompt + output), how many at once,
    and the time the deadline allows it."""

    requests: int
    tokens: int
    concurrency: int
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "tokens": self.tokens, "concurrency": self.concurrency}

    def times(self, rounds: int) -> RoundCost:
        """The cost of ``rounds`` such rounds, one after the other."""
        return RoundCost(self.requests * rounds, self.tokens * rounds, self.concurrency,
                         self.seconds * rounds)  # fmt: skip


def replica_rounds(replicas: int, proxied: bool) -> int:
    """How many rounds the replicas probe sends: every replica measured twice (A B C, C B A:
    probes/replicas.py), then one round through the balancer; none with fewer than two replicas
    (the probe has nothing to compare and sends nothing)."""
    return 0 if replicas < 2 else 2 * replicas + int(proxied)


def known_replica_rounds(listed: list[str] | None, nginx_conf: str | None,
                         fleet: dict[str, Any] | None, proxy: str | None) -> int:  # fmt: skip
    """The replicas probe's rounds for the replicas known before the walk (``--replica``, the
    nginx upstream, Prometheus' targets: what the probe itself will find)."""
    from wizard.probes.fleet.replica_sources import known

    found = known(listed, nginx_conf, fleet)
    return replica_rounds(len(found.urls) if found is not None else 0, bool(proxy))


def _int(params: dict[str, Any], key: str, default: int) -> int:
    """A literal count from a round's parameters; one taken from a fact or an answer at walk
    time (``{fact: ...}``) counts as the probe's default."""
    value = params.get(key, default)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else default


def request_seconds(output_tokens: int) -> float:
    """The time one request may take before the server fails every MLPerf LLM Server target."""
    return TTFT_ALLOWANCE_S + output_tokens * TPOT_ALLOWANCE_S


def round_cost(name: str, params: dict[str, Any]) -> RoundCost | None:
    """The cost of one round of a load probe, or of the endpoints probe's pings (None for a
    probe that sends no generation request)."""
    from wizard.probes.fleet import replicas
    from wizard.probes.http import measure_probe
    from wizard.probes.http.load import requests_sent

    if name == "endpoints":
        return RoundCost(ENTRY_PINGS, ENTRY_PINGS * 2, 1, ENTRY_PINGS * request_seconds(1))
    if name == "validate":
        # LoadGen's SingleStream sends one query at a time, at least min_queries of them.
        queries, output = _int(params, "min_queries", 64), _int(params, "max_tokens", 8)
        each = _int(params, "input_tokens", 64) + output
        seconds = max(float(params.get("min_duration_s") or 0), queries * request_seconds(output))
        return RoundCost(queries, queries * each, 1, seconds)
    defaults = {"measure": measure_probe.DEFAULTS, "replicas": replicas.DEFAULTS}.get(name)
    if defaults is None:
        return None
    concurrency = max(1, _int(params, "concurrency", defaults["concurrency"]))
    sent = requests_sent(_int(params, "requests", defaults["requests"]),
                         _int(params, "warmup", defaults["warmup"]), concurrency)  # fmt: skip
    output = _int(params, "max_tokens", defaults["max_tokens"])
    each = _int(params, "input_tokens", defaults["input_tokens"]) + output
    waves = math.ceil(sent / concurrency)
    return RoundCost(sent, sent * each, concurrency, waves * request_seconds(output))


def _names(condition: Any) -> list[str]:
    """Every fact and answer a condition reads (answers as ``answers.ID``)."""
    if isinstance(condition, list):
        return [name for part in condition for name in _names(part)]
    if not isinstance(condition, dict):
        return []
    found = [str(condition["fact"])] if "fact" in condition else []
    found += [f"answers.{condition['answer']}"] if "answer" in condition else []
    return found + [name for key in ("all", "any", "not") for name in _names(condition.get(key))]


def _possible(condition: Any, session: dict[str, Any]) -> bool:
    """False only for a condition that reads nothing but what is known before the walk (the
    ``session`` facts) and fails on it; anything else may hold at walk time."""
    from wizard.playbook.conditions import evaluate

    if not all(name.startswith("session.") for name in _names(condition)):
        return True
    return bool(evaluate(condition, {"session": session}, {}))


def _planned(playbook: Any, session: dict[str, Any], start: str) -> list[Any]:
    """The nodes a walk may enter, in the playbook's order: reachable from ``start`` through
    edges not ruled out by what is known before it."""
    from wizard.playbook import END

    reached, todo = {start}, [start]
    while todo:
        for edge in playbook.nodes[todo.pop()].next:
            if _possible(edge.when, session) and edge.to != END and edge.to not in reached:
                reached.add(edge.to)
                todo.append(edge.to)
    return [node for node in playbook.nodes.values() if node.id in reached]


def plan(
    playbook: Any, workload: Any, session: dict[str, Any], replicas_rounds: int = 0,
    start: str | None = None,
) -> list[dict[str, Any]]:  # fmt: skip
    """Per stage, in the playbook's order: its planned rounds, requests, tokens and the highest
    concurrency, with the deadline's allowance (``seconds``). ``session``: the facts known
    before the walk (``has_proxy``), which rule rounds out (the proxy's without a proxy).
    ``replicas_rounds``: the rounds the replicas probe sends (``known_replica_rounds``).
    ``start``: the node a resumed walk continues at (its server check pings first)."""
    stages: dict[str, dict[str, Any]] = {}

    def add(stage: str, cost: RoundCost, rounds: int) -> None:
        row = stages.setdefault(stage, {"stage": stage, "rounds": 0, "requests": 0,
                                        "tokens": 0, "concurrency": 0, "seconds": 0.0})  # fmt: skip
        row["rounds"] += rounds
        row["requests"] += cost.requests
        row["tokens"] += cost.tokens
        row["concurrency"] = max(row["concurrency"], cost.concurrency)
        row["seconds"] += cost.seconds

    first = start or playbook.start
    pings = round_cost("endpoints", {})
    assert pings is not None
    if first != playbook.start:  # a resumed walk checks it is the same server (the pings)
        add(playbook.nodes[first].stage, pings, 0)
    for node in _planned(playbook, session, first):
        for call in node.probes:
            if not _possible(call.when, session):
                continue
            params = workload.round_params(call.name, dict(call.params), None)
            cost = round_cost(call.name, params)
            # The endpoints probe pings once at the start (again only after a restart).
            if cost is None or (call.name == "endpoints" and node.id != playbook.start):
                continue
            rounds = replicas_rounds if call.name == "replicas" else int(call.name != "endpoints")
            if call.name == "replicas" and not rounds:
                continue  # fewer than two replicas known: the probe sends nothing
            add(node.stage, cost.times(rounds) if call.name == "replicas" else cost, rounds)
    return list(stages.values())


def budget_event(
    stages: list[dict[str, Any]], max_requests: int | None, deadline_s: float,
    replicas_rounds: int = 0,
) -> dict[str, Any]:  # fmt: skip
    """The ``budget`` event's data: the plan per stage, its totals, the cap, the deadline and
    the rounds the replicas probe sends (each priced in the stage's row)."""
    return {
        "stages": [{k: v for k, v in row.items() if k != "seconds"} for row in stages],
        "requests": sum(row["requests"] for row in stages),
        "tokens": sum(row["tokens"] for row in stages),
        "max_requests": max_requests,
        "deadline_s": round(deadline_s, 1),
        "replicas_rounds": replicas_rounds,
    }


def default_deadline(stages: list[dict[str, Any]], request_timeout_s: float) -> float:
    """The deadline sized from the planned rounds (see the module's docstring), plus one request's
    own timeout for everything that sends no completion (the readers, Prometheus, restarts): a
    walk that plans no load round (a fleet-only playbook) had a deadline of 0 s and ended at once."""
    return float(sum(row["seconds"] for row in stages)) + request_timeout_s


@dataclass
class Limits:
    """The walk's cap and deadline, and what it has spent so far."""

    deadline_s: float
    max_requests: int | None = None
    # The replicas probe's rounds (known_replica_rounds): round_cost prices one of them.
    replicas_rounds: int = 1
    started: float = field(default_factory=time.monotonic)
    requests: int = 0
    tokens: int = 0
    rounds: int = 0
    skipped: list[str] = field(default_factory=list)
    deadline_reached: bool = False

    def remaining_s(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)

    def check_deadline(self) -> None:
        """Raise DeadlineReached once the deadline has passed."""
        if self.remaining_s() <= 0:
            self.deadline_reached = True
            raise DeadlineReached

    def priced(self, name: str, cost: RoundCost) -> RoundCost:
        """What a probe call sends: the replicas probe sends its round once per replica and
        pass (and once through the balancer), every other probe its round once."""
        return cost.times(self.replicas_rounds) if name == "replicas" else cost

    def over_cap(self, name: str, cost: RoundCost) -> bool:
        """Whether the round would take the walk past ``--max-requests`` (the cap stops rounds
        of load; the endpoints probe's pings, which the walk needs to start, are counted)."""
        return (
            name in LOAD_PROBES
            and self.max_requests is not None
            and self.requests + self.priced(name, cost).requests > self.max_requests
        )

    def spend(self, name: str, cost: RoundCost, facts: dict[str, Any] | None) -> None:
        """A probe ran: what it says it sent (LoadGen's queries, the endpoints' pings; nothing
        from a replicas probe that found fewer than two), else its plan (a round cut by the
        deadline counts whole: at most that much was sent)."""
        cost = self.priced(name, cost)
        said = (facts or {}).get({"validate": "queries", "endpoints": "generation_requests_sent"}
                                 .get(name, ""))  # fmt: skip
        if name == "replicas" and (facts or {}).get("available") is False:
            said = 0
        sent = said if isinstance(said, int) else cost.requests
        self.requests += sent
        self.tokens += cost.tokens * sent // max(cost.requests, 1)
        if name == "replicas":
            self.rounds += self.replicas_rounds if sent else 0
        else:
            self.rounds += name in LOAD_PROBES

    def spent(self) -> dict[str, Any]:
        """The ``end`` event's ``spent`` field."""
        return {"requests": self.requests, "tokens": self.tokens, "rounds": self.rounds,
                "skipped": list(self.skipped), "deadline_reached": self.deadline_reached}  # fmt: skip


async def run_within(
    limits: Limits | None, name: str, cost: RoundCost | None,
    run: Callable[[], Awaitable[ProbeResult]],
) -> ProbeResult:  # fmt: skip
    """Run a probe within the walk's deadline (cut when it passes: DeadlineReached) and count
    what it sent."""
    if limits is None:
        return await run()
    limits.check_deadline()
    try:
        async with asyncio.timeout(limits.remaining_s()):
            result = await run()
    except TimeoutError:
        limits.deadline_reached = True
        if cost is not None:
            limits.spend(name, cost, None)
        raise DeadlineReached from None
    if cost is not None:
        limits.spend(name, cost, result.facts if result.error is None else None)
    return result
