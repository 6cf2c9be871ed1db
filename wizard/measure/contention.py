"""A round whose measuring client was contended: measured again, and what rests on it inconclusive.

When other processes hold the cores (a vLLM busy-polling one of two, a hog), the client's loop
wakes late and a whole stream can arrive in one read: its TTFT, TPOT, gaps and events per read
describe the client, not the server. The measure probe says so (``client.timings_doubtful``):
the client's self-check found it contended or its requests held back, and its loop woke late by
half a gap of the stream or more (the engine's own mean gap, else the client's TPOT: a late wake-up
shorter than that still reads events one by one). The walk then measures the round again, up to
``REMEASURES`` times; if the client stays contended, every rule that turns on that round's client
timing is "inconclusive: the measuring client was contended", never "no cause"; a comparison's
verdict stands only when its effect is larger than the client's worst late wake-up (``beyond``),
else it is inconclusive too. It is never a cause of the incident.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from wizard.playbook import conditions

# Each repeat costs a round; two bound the walk's extra time to twice the contended rounds.
REMEASURES = 2
# What a measure round's facts hold that the client timed: its statistics, its reads, what is
# computed from them. The server's own numbers (``server.*``) and the self-check stay trusted.
CLIENT_TIMED = frozenset({"steady", "cold", "burst", "values", "budget_estimate"})


def timings_doubtful(client: Mapping[str, Any], pace_ms: float | None) -> bool:
    """Whether a round's client, by its own self-check, timed itself rather than the server."""
    if client.get("saturated"):  # its own bottleneck: LAT050 lowers its concurrency instead
        return False
    if not (client.get("contended") or client.get("send_delayed")):
        return False
    lag = float(client.get("loop_lag_p90_ms") or 0.0)
    return pace_ms is None or lag >= pace_ms / 2


def contention_ms(rounds: Sequence[Mapping[str, Any]]) -> tuple[bool, float | None]:
    """Whether any round's client stayed contended, and the worst late wake-up of those clients
    (ms); None when a contended round did not record it (an older transcript): then no effect
    can be told from the client's own delay, and its rounds judge nothing."""
    lags = [r.get("client_lag_max_ms") for r in rounds if r.get("client_contended")]
    known = [float(lag) for lag in lags if isinstance(lag, int | float)]
    return bool(lags), (max(known) if known and len(known) == len(lags) else None)


def beyond(low_ms: float | None, high_ms: float | None, lag_ms: float) -> bool:
    """Whether an effect's interval (after - before, ms) lies beyond what a contended client could
    add: a late wake-up delays a timestamp by at most the loop's worst lag, so a difference of
    medians moved by contention alone stays within that lag of zero. The demo's TTFT 267 -> 27.6
    ms (interval [-576, -110] ms) with wake-ups of 6-24 ms is an effect, not the client."""
    if low_ms is None or high_ms is None:
        return False
    return high_ms < -lag_ms or low_ms > lag_ms


def contended(facts: Any) -> bool:
    """True when a measure round's facts say its client's timings cannot be trusted."""
    client = facts.get("client") if isinstance(facts, Mapping) else None
    return isinstance(client, Mapping) and client.get("timings_doubtful") is True


def doubtful_facts(facts: Mapping[str, Any]) -> Callable[[str], bool]:
    """Which fact paths rest on a contended client's timing (``proxy.steady.ttft_p50``...)."""

    def doubtful(path: str) -> bool:
        parts = path.split(".")
        return len(parts) > 1 and parts[1] in CLIENT_TIMED and contended(facts.get(parts[0]))

    return doubtful


def contended_rounds(facts: Mapping[str, Any], condition: Any) -> list[str]:
    """The contended rounds a condition reads (for the event: which rounds to blame)."""
    doubtful = doubtful_facts(facts)
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key == "fact" and isinstance(value, str) and doubtful(value):
                    found.add(value.split(".", 1)[0])
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(condition)
    return sorted(found)


def rule_unknown(condition: Any, facts: Mapping[str, Any], answers: Mapping[str, Any]) -> bool:
    """True when a rule that did not fire might have, had its rounds' client been trusted."""
    return conditions.evaluate_knowing(condition, facts, answers, doubtful_facts(facts)) is None


def reason_texts(facts: Mapping[str, Any], rounds: list[str]) -> dict[str, str]:
    """The first contended round's own words about its client (the load probe's reason), in every
    language it said them (English alone before zh was recorded); empty when no round says why."""
    for round_as in rounds:
        client = (facts.get(round_as) or {}).get("client") or {}
        said = client.get("reason_texts") or (
            {"en": client["reason"]} if client.get("reason") else {}
        )
        if said:
            return {lang: f"{round_as}: {text}" for lang, text in said.items()}
    return {}
