"""Triage: the likely cause class from what the server already says, as data (no printing).

Every check reads one kind of evidence and says ``fired``, ``clear`` or ``unknown`` (no evidence
for it), with its numbers; the first check that fired, in the order below, is the likely class,
the clear ones are what is ruled out, and the next step is the command that proves the class
(usually ``latency-wizard run`` with the incident's own flags), with the production risk that
step carries. Each bar comes from what vLLM's numbers mean (``facts/vllm.md``, cited beside it),
never from a simulator's values. The words for every check live in ``words_triage.py``.
"""

from __future__ import annotations

import shlex
from typing import Any

SCHEMA_VERSION = 1
# vLLM's API server is one asyncio process: it cannot use more than one core. The walk's LAT035
# judges it by the pace it would need (its CPU times the client's TPOT over the engine's gap);
# triage reads /metrics alone, with no client pace, so a process this near its core counts as
# saturated (the walk's bar before issue #26; not derived: see docs/findings.md).
API_SERVER_CORE_BAR = 0.8
# The order a class is named in: a server that does not answer or whose engine died explains
# everything after it; preemption (KV pressure) puts requests back in the queue, so a queue seen
# with preemptions is KV pressure first; the API server and the proxy come after the engine.
ORDER = ("server_unreachable", "engine_died", "kv_cache_preemption", "queue_saturation",
         "api_server_cpu_saturated", "proxy_buffering")  # fmt: skip
# Log error kinds that mean the engine stopped serving (facts/vllm.md §2.4: "EngineCore
# encountered a fatal error"; a CUDA OOM after the KV cache was sized is a runtime death).
ENGINE_DEATHS = ("engine_dead", "oom")
RUN_TRANSCRIPT = "triage-run.ndjson"


def _check(check: str, result: str, **numbers: Any) -> dict[str, Any]:
    return {"check": check, "result": result, "numbers": numbers}


def _max(values: list[Any]) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


def checks(
    observed: dict[str, Any],
    log: dict[str, Any] | None,
    nginx: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    """Every check, in ORDER, with its result and numbers."""
    found = [_reachable(observed), _engine(log)]
    delta = observed.get("delta") or None
    if not observed.get("reachable") or delta is None or observed.get("stats_disabled"):
        why = "no_metrics" if observed.get("reachable") else "unreachable"
        found += [_check(c, "unknown", why=why) for c in ORDER[2:5]]
    else:
        gauges = observed["gauges"]
        judged = [_kv(delta, gauges, observed["cache"]), _queue(delta, gauges, log),
                  _api_server(delta)]  # fmt: skip
        # An idle window proves nothing clear: no request, no preemption, no queue is no
        # evidence that the next request will not meet them. What fired still stands (requests
        # that wait and none that finish is a queue).
        if not delta.get("requests"):
            judged = [c if c["result"] != "clear" else
                      _check(c["check"], "unknown", why="idle", **c["numbers"]) for c in judged]  # fmt: skip
        found += judged
    found.append(_proxy(nginx))
    return found


def _reachable(observed: dict[str, Any]) -> dict[str, Any]:
    if observed.get("reachable"):
        return _check("server_unreachable", "clear", status=observed.get("health_status"))
    return _check("server_unreachable", "fired", error=observed.get("error"))


def _engine(log: dict[str, Any] | None) -> dict[str, Any]:
    if log is None:
        return _check("engine_died", "unknown", why="no_log")
    if "note" in log:  # the reader recognised no line of it as vLLM's: it proves nothing
        return _check("engine_died", "unknown", why="log_unrecognised")
    deaths = [e for e in log.get("errors", []) if e["kind"] in ENGINE_DEATHS]
    if deaths and log.get("kv_cache_tokens") is not None:
        return _check("engine_died", "fired", kind=deaths[-1]["kind"], line=deaths[-1]["line"])
    return _check("engine_died", "clear", runs=log.get("runs_total"))


def _kv(delta: dict[str, Any], gauges: dict[str, Any], cache: dict[str, Any]) -> dict[str, Any]:
    # vLLM V1 preempts only when a running request cannot be given a KV block (facts/vllm.md
    # §3.3), so any preemption in the window is KV pressure: no bar to choose. KV usage is the
    # supporting number (a gauge sampled between steps may read below its peak).
    numbers = {"preemptions": delta.get("preemptions"), "per_s": delta.get("preemptions_per_s"),
               "window_s": delta.get("window_s"), "kv_max": _max(gauges["kv_cache_usage"]),
               "kv_tokens": cache.get("kv_cache_tokens")}  # fmt: skip
    if delta.get("restarted"):
        return _check("kv_cache_preemption", "unknown", why="restarted", **numbers)
    fired = (delta.get("preemptions") or 0) > 0
    return _check("kv_cache_preemption", "fired" if fired else "clear", **numbers)


def _queue(
    delta: dict[str, Any], gauges: dict[str, Any], log: dict[str, Any] | None
) -> dict[str, Any]:
    # A request waits at most one engine step (milliseconds) when a slot and its KV blocks are
    # free: the V1 scheduler admits waiting requests every step, after the running ones (facts/
    # vllm.md §3.3). Scrapes seconds apart that each find requests waiting therefore see a queue,
    # not one arrival between steps; one such scrape is not enough.
    waiting = [w for w in gauges["waiting"] if w is not None]
    seen = sum(1 for w in waiting if w > 0)
    running_max = _max(gauges["running"])
    max_num_seqs = (log or {}).get("max_num_seqs")
    # Slot-bound: running equals max_num_seqs while requests wait (no free slot to admit into).
    # Below it, admission waits for KV blocks or the step's token budget.
    if max_num_seqs is None or running_max is None:
        bound = "unknown"
    else:
        bound = "slots" if running_max >= max_num_seqs else "kv_or_budget"
    ttft, queue = delta.get("server_ttft_mean_s"), delta.get("server_queue_mean_s")
    numbers = {"waiting_max": _max(waiting), "seen": seen, "scrapes": len(waiting),
               "running_max": running_max, "max_num_seqs": max_num_seqs, "bound": bound,
               "queue_ms": None if queue is None else queue * 1000,
               "ttft_ms": None if ttft is None else ttft * 1000}  # fmt: skip
    return _check("queue_saturation", "fired" if seen >= 2 else "clear", **numbers)


def _api_server(delta: dict[str, Any]) -> dict[str, Any]:
    # Near its one core, its events wait (API_SERVER_CORE_BAR).
    cores = delta.get("api_server_cpu_cores")
    if cores is None:
        return _check("api_server_cpu_saturated", "unknown", why="no_process_cpu")
    fired = cores >= API_SERVER_CORE_BAR
    return _check("api_server_cpu_saturated", "fired" if fired else "clear", cores=cores,
                  bar=API_SERVER_CORE_BAR)  # fmt: skip


def _proxy(nginx: dict[str, Any] | None) -> dict[str, Any]:
    if nginx is None:
        return _check("proxy_buffering", "unknown", why="no_nginx_conf")
    buffering = [f for f in nginx.get("findings", [])
                 if f.get("cause") in ("proxy_buffering", "proxy_gzip_buffering")]  # fmt: skip
    if buffering:
        first = buffering[0]
        return _check("proxy_buffering", "fired", file=first.get("file"), line=first.get("line"),
                      location=first.get("location"))  # fmt: skip
    return _check("proxy_buffering", "clear", locations=len(nginx.get("locations", [])))


def classify(
    observed: dict[str, Any],
    *,
    target: str,
    proxy: str | None = None,
    log: dict[str, Any] | None = None,
    log_path: str | None = None,
    nginx: dict[str, Any] | None = None,
    nginx_path: str | None = None,
) -> dict[str, Any]:
    """The triage verdict: class, strongest signal, ruled out, next step and its risk."""
    found = checks(observed, log, nginx)
    fired = next((c for c in found if c["result"] == "fired"), None)
    delta = observed.get("delta") or {}
    requests = delta.get("requests")
    cause = fired["check"] if fired else "none"
    if fired:
        signal = fired
    elif observed.get("reachable") and not requests and delta:
        signal = _check("no_traffic", "fired", window_s=delta.get("window_s"))
    else:
        signal = _check("healthy", "fired", requests=requests, window_s=delta.get("window_s"),
                        ttft_ms=_ms(delta.get("server_ttft_mean_s")),
                        queue_ms=_ms(delta.get("server_queue_mean_s")))  # fmt: skip
    concurrency = _concurrency(observed)
    step = next_step(cause, target, proxy, log_path, nginx_path, concurrency)
    return {
        "schema_version": SCHEMA_VERSION,
        "target": target,
        "proxy": proxy,
        "completion_requests_sent": 0,
        "class": cause,
        "signal": signal,
        "checks": found,
        "ruled_out": [c["check"] for c in found if c["result"] == "clear"],
        "next_step": step,
        "risk": risk(cause, step, observed),
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def _concurrency(observed: dict[str, Any]) -> int | None:
    """The incident's own concurrency: requests running and waiting at once (the most seen)."""
    gauges = observed.get("gauges") or {}
    pairs = zip(gauges.get("running", []), gauges.get("waiting", []), strict=False)
    totals = [int(r + w) for r, w in pairs if r is not None and w is not None]
    top = max(totals, default=0)
    return top or None


def next_step(
    cause: str,
    target: str,
    proxy: str | None,
    log_path: str | None,
    nginx_path: str | None,
    concurrency: int | None,
) -> dict[str, Any]:
    """The command that proves (or refutes) the class, as an argument list and as text."""
    if cause == "server_unreachable" and log_path:
        argv = ["latency-wizard", "probe", "vllm-log", log_path]
        why = "read_log"
    elif cause == "proxy_buffering" and proxy:
        argv = ["latency-wizard", "probe", "proxy", "--target", target, "--proxy", proxy]
        why = "compare_proxy"
    else:
        argv = ["latency-wizard", "run", "--target", target]
        for flag, value in (("--proxy", proxy), ("--vllm-log", log_path),
                            ("--nginx-conf", nginx_path)):  # fmt: skip
            if value:
                argv += [flag, value]
        if concurrency and cause in ("kv_cache_preemption", "queue_saturation"):
            argv += ["--concurrency", str(concurrency)]
        argv += ["--auto", "--transcript", RUN_TRANSCRIPT]
        why = f"run.{cause}" if cause in ORDER or cause == "none" else "run.none"
    return {"argv": argv, "command": shlex.join(argv), "why": why}


def risk(cause: str, step: dict[str, Any], observed: dict[str, Any]) -> dict[str, Any]:
    """What the next step costs the production server."""
    argv = step["argv"]
    if argv[1] == "probe" and argv[2] == "vllm-log":
        return {"level": "none", "why": "reads_file"}
    if argv[1] == "probe":
        return {"level": "low", "why": "few_streams"}
    concurrency = int(argv[argv.index("--concurrency") + 1]) if "--concurrency" in argv else None
    delta = observed.get("delta") or {}
    if cause in ("kv_cache_preemption", "queue_saturation"):
        # Every stream it adds waits behind the users' requests (or takes KV blocks from them).
        return {"level": "high", "why": f"load_on_{cause}", "concurrency": concurrency}
    if delta.get("requests"):
        return {"level": "medium", "why": "load_on_live", "concurrency": concurrency}
    return {"level": "low", "why": "load_on_idle", "concurrency": concurrency}


# What a start resolved that decides latency (each run's own fields: the engine config line, the
# KV-cache line, else the logged arguments), compared between a log's first and last start.
RUN_SETTINGS = ("max_num_seqs", "max_num_batched_tokens", "max_model_len", "gpu_memory_utilization",
                "tensor_parallel_size", "pipeline_parallel_size", "chunked_prefill", "enforce_eager",
                "block_size", "num_gpu_blocks", "kv_cache_tokens", "version")  # fmt: skip


def log_summary(log: dict[str, Any] | None) -> dict[str, Any] | None:
    """The log's tail as triage reads it: its runs (a restart, and which settings the last start
    resolved differently from the first), its errors and its last stats lines."""
    if log is None:
        return None
    if "note" in log:
        return {"recognised": False, "runs": 0, "last_started": None, "changed": {},
                "max_num_seqs": None, "errors": [], "stats_tail": []}  # fmt: skip
    runs = log.get("runs") or []
    changed: dict[str, Any] = {}
    if len(runs) > 1:
        first, last = runs[0], runs[-1]
        changed = {k: {"before": first.get(k), "after": last.get(k)} for k in RUN_SETTINGS
                   if first.get(k) is not None and last.get(k) is not None
                   and first.get(k) != last.get(k)}  # fmt: skip
        # A setting the last start was given and the first was not: the first ran on vLLM's
        # default, which its log (0.34's engine line) does not always print.
        given_first, given_last = first.get("logged_args") or {}, last.get("logged_args") or {}
        for key in RUN_SETTINGS:
            if key in given_last and key not in given_first and first.get(key) is None:
                changed[key] = {"before": None, "before_is_default": True, "after": given_last[key]}
    return {
        "recognised": True,
        "runs": log.get("runs_total"),
        "last_started": runs[-1].get("first_timestamp") if runs else None,
        "changed": changed,
        "max_num_seqs": log.get("max_num_seqs"),
        "errors": [{"kind": e["kind"], "line": e["line"]} for e in log.get("errors", [])[-5:]],
        "stats_tail": log.get("stats", [])[-3:],
    }


def with_log(history: dict[str, Any] | None, target: str, log: dict[str, Any] | None) -> None:
    """A restart of the target's replica takes the settings its log says the new start changed
    (``max_num_seqs`` is in no metric), where Prometheus' cache_config_info said none."""
    if not history or not log or not log.get("changed"):
        return
    instance = target.split("://", 1)[-1].split("/", 1)[0]
    events = history.get("events", []) + [
        c["event"] for c in history.get("changes", []) if c.get("event")
    ]
    for event in events:
        if (
            event["kind"] == "restart"
            and event["instance"] == instance
            and not event.get("changed")
        ):
            event["changed"] = log["changed"]
