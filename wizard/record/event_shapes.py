"""What replay and export read from each event, checked before they read it (issue #15).

A transcript whose hash chain verifies may still come from another version or another tool, or
have been edited and re-chained: an event may lack a key or carry a value of another type. Each
event type's shape below lists what the renderers (``render_events``) and the summary
(``report``, ``summary``) read from it; an event that does not fit is shown as one line saying
what is wrong with it, and the summary leaves it out (and says so), instead of failing on it.

The shape language: a type (``str``; ``NUMBER`` is an int or float, never a bool), ``ANY``,
``TEXT`` (a string or an ``{en, zh}`` mapping), ``Opt(shape)`` (also None), ``[shape]`` (a list
of it), ``Each(shape)`` (a mapping of anything to it), ``OneOf(values)`` (a closed vocabulary's
word, such as a severity), and a dict of keys to shapes (a key ending
in ``?`` may be absent).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wizard.playbook.vocabulary import LANGUAGES, OUTCOMES, ROUND_DEPTHS, SEVERITIES


@dataclass(frozen=True)
class Opt:
    """The shape, or None."""

    shape: Any


@dataclass(frozen=True)
class Each:
    """A mapping whose every value has the shape."""

    shape: Any


@dataclass(frozen=True)
class OneOf:
    """One of a closed vocabulary's values (the renderers look their words up by it)."""

    values: tuple[str, ...]


ANY = object()
NUMBER = (int, float)
TEXT = (str, dict)
OPT_NUMBER = Opt(NUMBER)

# A round's statistics as the measure probe records them: the p50 and p99 of every segment are
# read (render_events.measurement_table, the summary's baseline table).
ROUND_STATS = Opt({**{f"{segment}_{q}": OPT_NUMBER for segment in ("ttft", "tpot", "itl", "e2e")
                      for q in ("p50", "p99")},
                   "succeeded": int, "requests": int})  # fmt: skip
MEASURE_FACTS = {
    "path": Opt(str),
    "url": Opt(str),
    "steady?": ROUND_STATS,
    "cold?": ROUND_STATS,
    "server?": Opt(
        {
            "available?": ANY,
            "kv_usage_max?": OPT_NUMBER,
            "waiting_max?": OPT_NUMBER,
            "preemptions?": OPT_NUMBER,
            "running_max?": OPT_NUMBER,
            "ttft_outside_engine_ms?": OPT_NUMBER,
            # The first token's waterfall (walk_waterfall.py).
            "server_ttft_mean_ms?": OPT_NUMBER,
            "queue_mean_ms?": OPT_NUMBER,
            "prefill_mean_ms?": OPT_NUMBER,
        }
    ),
    "values?": Opt({"ttft_ms?": [NUMBER]}),
    "burst?": Opt({"max_events_per_read?": NUMBER, "p50_events_per_read?": OPT_NUMBER}),
    "client?": Opt({"reason?": ANY}),
}
LOADGEN_FACTS = {"reasons?": Opt([str]), "client?": Opt(dict),
                 "loadgen?": Opt({"early_stopping_p90_ms?": OPT_NUMBER}),
                 "queries?": ANY, "succeeded?": ANY}  # fmt: skip
# The numbers an unequal share of the balancer's requests is said from in every language.
UNBALANCED = {**{f"{key}?": NUMBER for key in ("served", "of", "share", "equal_share", "band")},
              "weight?": OPT_NUMBER}  # fmt: skip
# The facts of the probes whose results are drawn field by field; others are listed as they are.
PROBE_FACTS = {
    "measure": MEASURE_FACTS,
    # The summary lists each flag's detail as written (report.py audit_details).
    "audit": {
        key: shape
        for flag in (
            "cold_steady_mixed",
            "multiple_changes",
            "total_time_only",
            "cross_scenario",
            "budget_unjudged",
        )
        for key, shape in ((f"{flag}_detail?", Opt(str)), (f"{flag}_detail_texts?", Opt(dict)))
    },
    "validate": LOADGEN_FACTS,
    # nginx's hops for the round through the proxy (walk_waterfall.py, the walk's line).
    "nginx-access": {
        "why?": OneOf(("not_given", "no_mark", "unreadable")),
        "requests?": int,
        **{
            f"{name}?": OPT_NUMBER
            for name in (
                "request_time_ms",
                "upstream_response_time_ms",
                "upstream_header_time_ms",
                "request_time_count",
                "upstream_header_time_count",
            )
        },
    },
    "host": {
        "source": ANY,
        "interconnect": ANY,
        "gpu_names?": Opt([str]),
        "notes?": Opt([TEXT]),
        "notes_texts?": Opt([TEXT]),
        # The evidence file each fact came from, listed by name in the summary.
        "sources?": Opt(Each(str)),
    },
    "vllm-log": {
        "file?": str,
        "errors?": [{"kind": ANY, "line": ANY}],
        "note_texts?": Opt(dict),
    },
    "nginx-config": {
        "locations": list,
        "findings": [
            {"code": ANY, "file": ANY, "line": ANY, "directive": ANY, "directive_texts?": Opt(TEXT)}
        ],
        "notes_texts?": Opt([TEXT]),
    },
    # What the walk's replica lines say again in another language (replica_words); the rest of
    # the report is read with defaults.
    "replicas": {
        "replicas?": Opt([{"why_texts?": Opt(Each(str))}]),
        "balancer_round?": Opt({"unbalanced?": Opt(UNBALANCED)}),
        "evidence_texts?": Opt(Each(Each(str))),
    },
}
SHAPES: dict[str, Any] = {
    "node_enter": {"title": TEXT, "stage": str, "covers": [str], "explain": TEXT},
    "question": {"id": str, "text": TEXT, "default": ANY, "default_from?": Opt(str)},
    "answer": {"id": str, "value": ANY, "from_evidence?": Opt(str), "from_evidence_texts?": TEXT},
    "node_exit": {
        "next": str,
        "stage_done?": Opt(
            {"stage": str, "passed": bool, "findings": [str], "failed_probes?": ANY}
        ),
    },
    "probe_result": {
        "probe": str,
        "as": str,
        "round?": Opt(str),
        "error": Opt(str),
        "facts": Opt(dict),
    },
    "finding": {
        "code": str,
        "cause": str,
        "severity": OneOf(SEVERITIES),
        "title": TEXT,
        "evidence": str,
        # The evidence in every language (a translated template, or quoted texts that have one).
        "evidence_texts?": Opt(TEXT),
        "advice": TEXT,
        "change": Opt({"apply": ANY}),
        "docs": [str],
    },
    # The finding a change answers: the summary pairs each change with its finding by code.
    "change": {"code": str, "layer": ANY, "parameter": ANY, "before": ANY, "after": ANY},
    "comparison": {
        "against": ANY,
        # Round names: the summary looks the rounds' facts up by them.
        "before": str,
        "after": str,
        "segments": [
            {
                "segment": str,
                "before_p50": OPT_NUMBER,
                "after_p50": OPT_NUMBER,
                "change_ms": OPT_NUMBER,
                "ci_low_ms": OPT_NUMBER,
                "ci_high_ms": OPT_NUMBER,
                "verdict": str,
                "noise_band?": OPT_NUMBER,
                "relative_change?": OPT_NUMBER,
                # Why no band is given (measure.NEAR_ZERO, TOO_WIDE, FEW_SAMPLES).
                "reason?": Opt(OneOf(("near_zero_median", "band_too_wide", "too_few_samples"))),
            }
        ],
    },
    "verdict": {
        "code": str,
        "verdict": str,
        "round": ANY,
        "evidence": ANY,
        "evidence_texts?": Opt(TEXT),
    },
    "inconclusive": {"code": str, "rounds": [str], "reason": str},
    "resume": {"at": ANY, "server?": Opt(dict)},
    "config_check": {"verdict": str, "text": ANY, "texts?": Opt(dict)},
    # ``unstable``: the segments on which the pair disagreed beyond its own intervals (stability.py).
    "noise": {"bands": Each(NUMBER), "rounds": [str], "unstable?": Opt(Each(NUMBER))},
    "note": {"text": str},
    "measurement": {
        "as": str,
        "round": ANY,
        "steady": ROUND_STATS,
        "cold": ROUND_STATS,
        "fingerprint": ANY,
        "spec": {"access_path": ANY, "endpoint?": str},
        "repeat_of?": ANY,
        # How many changes came before the round: the summary slices the changes by it.
        "changes_before?": Opt(int),
    },
    "end": {
        "findings": [str],
        "changes": ANY,
        "outcome?": Opt(OneOf(OUTCOMES)),
        "causes_remaining?": Opt([str]),
        # What the walk sent, against its budget (run's --max-requests, --deadline).
        "spent?": {"requests": int, "tokens": int, "rounds": int, "skipped": [str]},
    },
    "budget": {
        "stages": [
            {"stage": str, "rounds": int, "requests": int, "tokens": int, "concurrency": int}
        ],
        "requests": int,
        "tokens": int,
        "max_requests": Opt(int),
        "deadline_s": NUMBER,
    },
}


# What replay and the summary read of the header (optional: older transcripts lack some).
HEADER = {
    "target?": Opt(str), "proxy?": Opt(str), "lang?": Opt(OneOf(LANGUAGES)),
    "playbook_id?": Opt(str), "started_at?": Opt(str), "workload?": Opt(dict),
    "vllm_log?": Opt(str), "host_evidence?": Opt(str), "nginx_conf?": Opt(str),
    "nginx_access_log?": Opt(str), "rounds?": Opt(OneOf(ROUND_DEPTHS)),
}  # fmt: skip


def header_problem(header: dict[str, Any]) -> str | None:
    """What in a transcript's header does not fit what is read of it (one line), or None."""
    return _mismatch(header, HEADER, "header")


def problem(event: dict[str, Any]) -> str | None:
    """What in ``event`` does not fit its type's shape (one line), or None when it fits.

    The envelope (``type`` a string, ``data`` a mapping) is checked on load (transcript.py).
    """
    kind, data = event["type"], event["data"]
    shape = SHAPES.get(kind)
    why = None if shape is None else _mismatch(data, shape, "data")
    if why is None and kind == "probe_result" and data["error"] is None:
        if data["facts"] is None:  # what a probe that succeeded found is what is read of it
            return "data.facts is null for a probe that succeeded"
        facts_shape = PROBE_FACTS.get(data["probe"])
        if facts_shape is not None:
            why = _mismatch(data["facts"], facts_shape, "data.facts")
    return why


def _mismatch(value: Any, shape: Any, where: str) -> str | None:
    if shape is ANY:
        return None
    if isinstance(shape, Opt):
        return None if value is None else _mismatch(value, shape.shape, where)
    if isinstance(shape, OneOf):
        if value in shape.values and isinstance(value, str):
            return None
        return f"{where} is {str(value)[:40]!r}, not one of {', '.join(shape.values)}"
    if isinstance(shape, dict):
        if not isinstance(value, dict):
            return f"{where} is {_kind(value)}, not a mapping"
        for key, inner in shape.items():
            name = key.rstrip("?")
            if name not in value:
                if not key.endswith("?"):
                    return f"{where}.{name} is missing"
                continue
            if (why := _mismatch(value[name], inner, f"{where}.{name}")) is not None:
                return why
        return None
    if isinstance(shape, list):
        if not isinstance(value, list):
            return f"{where} is {_kind(value)}, not a list"
        for index, item in enumerate(value):
            if (why := _mismatch(item, shape[0], f"{where}[{index}]")) is not None:
                return why
        return None
    if isinstance(shape, Each):
        if not isinstance(value, dict):
            return f"{where} is {_kind(value)}, not a mapping"
        for key, item in value.items():
            if (why := _mismatch(item, shape.shape, f"{where}.{key}")) is not None:
                return why
        return None
    if isinstance(value, bool) and bool not in (shape if isinstance(shape, tuple) else (shape,)):
        return f"{where} is a bool"
    if not isinstance(value, shape):
        return f"{where} is {_kind(value)}"
    return None


def _kind(value: Any) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


def unreadable_note(event: dict[str, Any], why: str, lang: str = "en") -> str:
    """The one line shown instead of an event that does not fit (``why`` names the key that
    does not, as the transcript spells it, in every language)."""
    from wizard.i18n.words import say

    return say(
        "replay.not_shown", lang, seq=event.get("seq"), type=event["type"][:40], why=why[:200]
    )
