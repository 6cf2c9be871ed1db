"""Renderers for transcript events: the live walk, replay and export draw the same pictures."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from wizard.event_shapes import problem, unreadable_note

SEVERITY_STYLE = {"info": "cyan", "warn": "yellow", "fail": "bold red"}
VERDICT_STYLE = {
    "improved": "green",
    "regressed": "red",
    "within noise": "dim",
    "inconclusive": "yellow",
    "expected": "cyan",
    # Transcripts written before the noise model said these.
    "no significant change": "dim",
    "insufficient data": "dim",
}


def pick(text: Any, lang: str) -> str:
    """The text in ``lang`` (falling back to English) from a ``{en, zh}`` mapping."""
    if isinstance(text, dict):
        return str(text.get(lang) or text.get("en") or "")
    return "" if text is None else str(text)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def render_event(
    event: dict[str, Any], lang: str = "en", replay: bool = False
) -> RenderableType | None:
    """A renderable for one event, or None for events that show nothing on their own."""
    if (why := problem(event)) is not None:  # written by another version or tool, or edited
        return Text(f"  {unreadable_note(event, why)}", style="yellow")
    kind, data = event["type"], event["data"]
    if kind == "node_enter":
        return Group(
            Rule(
                f"[bold]{escape(pick(data['title'], lang))}[/]  ({data['stage']}; {', '.join(data['covers'])})"
            ),
            Text(pick(data["explain"], lang), style="dim"),
        )
    if kind == "question":
        source = f" from the evidence ({data['default_from']})" if data.get("default_from") else ""
        if data.get("asked") is False:  # the evidence answered it: its answer line says so
            return None
        if replay:
            return Text(f"? {pick(data['text'], lang)}  [default: {data['default']}{source}]")
        if source:  # the prompt shows the default; say where it came from
            return Text(f"  {data['id']}: default {data['default']}{source}", style="dim")
    if kind == "answer":
        if data.get("from_evidence"):
            source = data["from_evidence"]
            where = (
                "answered earlier"
                if source.startswith("answers.")
                else f"from the evidence: {source}"
            )
            return Text(f"  {data['id']} = {data['value']}  ({where}; not asked)", style="cyan")
        return Text(f"  {data['id']} = {data['value']}", style="cyan")
    if kind == "node_exit":
        done = data.get("stage_done")
        if done and done["passed"]:
            info = f" (for information: {', '.join(done['findings'])})" if done["findings"] else ""
            return Text(f"PASS {done['stage']}: no cause found{info}", style="bold green")
        return None
    if kind == "probe_result":
        return _probe(data)
    if kind == "finding":
        return _finding(data, lang)
    if kind == "change":
        return Text(
            f"change ({data['layer']}): {data['parameter']}: {data['before']} -> {data['after']}"
            f"{'  [server restarted]' if data.get('restarted') else ''}",
            style="bold magenta",
        )
    if kind == "comparison":
        return _comparison(data)
    if kind == "verdict":
        gone = data["verdict"] == "cause gone"
        return Text(
            f"{data['code']} {data['verdict']} in {data['round']}: {data['evidence']}",
            style="bold green" if gone else "bold red",
        )
    if kind == "resume":
        server = data.get("server") or {}
        return Text(
            f"resumed at {data['at']}: the server answers as {server.get('model')} "
            f"(vLLM {server.get('version')}, max_model_len {server.get('max_model_len')})",
            style="bold",
        )
    if kind == "config_check":
        style = {"confirmed": "green", "not observable": "dim"}.get(data["verdict"], "bold red")
        return Text(f"  server check: {data['text']}", style=style)
    if kind == "noise":
        bands = ", ".join(f"{k} ±{v:.0%}" for k, v in data["bands"].items())
        return Text(
            f"  noise (A/A: {' vs '.join(data['rounds'])}): {bands or 'not measurable'}; "
            "changes within these bands are reported as within noise",
            style="dim",
        )
    if kind == "note":
        return Text(f"  note: {data['text']}", style="dim")
    if kind == "end":
        codes = ", ".join(data["findings"]) or "none"
        return Rule(f"walk complete: findings {codes}; {data['changes']} change(s)")
    return None


def _probe(data: dict[str, Any]) -> RenderableType:
    name, label, facts = data["probe"], data.get("round") or data["as"], data["facts"]
    if data["error"]:
        return Text(f"  {name} ({label}): failed: {data['error']}", style="red")
    if name == "measure":
        return measurement_table(facts, f"{label}: {facts['path']} {facts['url']}")
    if name == "host":
        return Text(_host_line(facts))
    if name == "vllm-log":
        return Text(_log_line(facts))
    if name == "endpoints" and facts.get("reachable") is False:
        why = facts.get("error")  # absent in transcripts written before it was recorded
        return Text(
            "  endpoints: the server does not answer"
            + (f" ({why})" if isinstance(why, str) else ""),
            style="red",
        )
    if name == "endpoints":
        return Text(
            f"  endpoints: model {facts.get('model')}, version {facts.get('version')}, auth {facts.get('auth')}, "
            f"completions {'ok' if facts.get('completions_ok') else facts.get('completions_status')}, "
            f"chat {'ok' if facts.get('chat_ok') else facts.get('chat_status')}"
            + (f"; suffix {facts['suffix']}" if facts.get("suffix") else "")
        )
    if name == "nginx-config":
        found = ", ".join(
            f"{f['code']} at {f['file']}:{f['line']} ({f['directive']})" for f in facts["findings"]
        )
        return Text(
            f"  nginx config: {len(facts['locations'])} proxied location(s); {found or 'no static findings'}"
        )
    if name == "audit":
        flags = [k for k, v in facts.items() if v is True and k != "available"]
        return Text(f"  audit: {facts.get('measurements')} measurement(s), {facts.get('changes')} change(s); "
                    f"flags: {', '.join(flags) or 'none'}")  # fmt: skip
    if name == "validate":
        return _loadgen_line(facts)
    if name == "replicas":
        return Text(_replicas_lines(facts))
    shown = {k: v for k, v in facts.items() if not isinstance(v, dict | list)}
    return Text(f"  {name} ({label}): " + ", ".join(f"{k}={v}" for k, v in shown.items()))


def loadgen_outcome(facts: dict[str, Any]) -> dict[str, Any]:
    """A LoadGen run's verdict (VALID, else INVALID/ERROR with the reasons) and its counts."""
    client = facts.get("client") or {}
    result = facts.get("result")
    queries = facts.get("queries", client.get("requests"))
    succeeded = facts.get("succeeded", client.get("succeeded"))
    reasons = list(facts.get("reasons") or [])
    # Recorded before failed queries counted: the result was LoadGen's timing verdict alone.
    if (
        "failed" not in facts
        and isinstance(queries, int)
        and isinstance(succeeded, int)
        and succeeded < queries
    ):
        reasons.insert(0, f"{queries - succeeded} of {queries} queries failed "
                          f"(recorded as LoadGen's {result})")  # fmt: skip
        result = "ERROR" if succeeded == 0 else "INVALID"
    return {"scenario": facts.get("scenario"), "result": result, "queries": queries,
            "succeeded": succeeded, "reasons": reasons,
            "early_stopping_p90_ms": (facts.get("loadgen") or {}).get("early_stopping_p90_ms")}  # fmt: skip


def _loadgen_line(facts: dict[str, Any]) -> Text:
    """The LoadGen verdict: VALID with its counts, else INVALID/ERROR with the reasons."""
    run = loadgen_outcome(facts)
    result = run["result"]
    if result == "VALID":
        detail = f"{run['succeeded']} of {run['queries']} queries succeeded"
        p90 = run["early_stopping_p90_ms"]
        if p90 is not None and facts.get("scenario") != "Offline":
            detail += f", early-stopping p90 {p90:.1f} ms"
    else:
        detail = "; ".join(run["reasons"]) or "no reason recorded"
    if facts.get("scenario") == "Offline":
        detail += "; throughput only, not latency evidence"
    return Text(f"  LoadGen {facts.get('scenario')}: {result} ({detail})",
                style="" if result == "VALID" else "red")  # fmt: skip


def busy_text(call: dict[str, Any]) -> str:
    """One line saying what a running probe is doing (the walk's transient status line)."""
    name, label, params = call["probe"], call["round"], call["params"]
    shape = (
        "the incident's body"
        if params.get("replay_body")
        else f"{params.get('input_tokens')} + {params.get('max_tokens')} tokens"
    )
    via = f" via {params['endpoint']}" if params.get("endpoint") else ""
    if name == "measure":
        return (f"measuring {label}: {params.get('concurrency')} streams, {params.get('requests')} requests "
                f"of {shape}{via}")  # fmt: skip
    if name == "validate":
        return f"LoadGen {params.get('scenario')} run ({label}): {shape}{via}"
    return f"probe {name} ({label})"


def progress_text(call: dict[str, Any], progress: dict[str, Any]) -> str:
    """The status line with a round's progress: n/N, elapsed, and about how long is left."""
    total = f"/{progress['total']}" if progress.get("total") else ""
    failed = f", {progress['failed']} failed" if progress.get("failed") else ""
    left = f", about {progress['eta_s']:.0f} s left" if progress.get("eta_s") is not None else ""
    return (
        f"{busy_text(call)}: {progress['done']}{total}{failed}, {progress['elapsed_s']:.0f} s{left}"
    )


def _known(value: Any, unit: str = "") -> str:
    return "unknown" if value is None or value == [] else f"{value}{unit}"


def _replicas_lines(facts: dict[str, Any]) -> str:
    """Each replica measured directly, the balancer's share, and what is wrong, one line each."""
    if not facts.get("available"):
        return f"  replicas: not measured ({facts.get('note', 'no replicas known')})"
    shares = (facts.get("balancer_round") or {}).get("shares") or {}
    lines = [f"  replicas from {facts.get('source')}:"]
    for replica in facts.get("replicas") or []:
        steady = replica.get("steady") or {}
        share = shares.get(replica.get("url"))
        lines.append(
            f"    {replica.get('url')}: TTFT p50 {_known(steady.get('ttft_p50'), ' ms')}, TPOT p50 "
            f"{_known(steady.get('tpot_p50'), ' ms')}"
            + (f", {share:.0%} of the balancer's requests" if share is not None else "")
            + (f"; slow: {replica['cause']} ({replica.get('why')})" if replica.get("cause") else "")
        )
    for cause, text in (facts.get("evidence") or {}).items():
        lines.append(f"    {cause}: {text}")
    return "\n".join(lines)


def _host_line(facts: dict[str, Any]) -> str:
    names = ", ".join(sorted(set(facts.get("gpu_names") or [])))
    line = (
        f"  host ({facts['source']}): {_known(facts.get('physical_cores'))} physical cores, "
        f"{_known(facts.get('gpus'))} GPU(s){f' ({names})' if names else ''}, interconnect {facts['interconnect']}, "
        f"CUDA_VISIBLE_DEVICES {_known(facts.get('cuda_visible_devices'))}"
    )
    if facts.get("notes"):
        line += f"\n    note: {facts['notes'][0]}"
    return line


def _log_line(facts: dict[str, Any]) -> str:
    if not facts.get("available"):
        return "  vLLM log: none given (--vllm-log FILE adds start-up config, timings and errors)"
    if facts.get("note"):
        return f"  vLLM log {facts['file']}: {facts['note']}"
    parts = [
        f"engine {_known(facts.get('engine'))}",
        f"TP {_known(facts.get('tensor_parallel_size'))} x PP {_known(facts.get('pipeline_parallel_size'))}",
        f"max_model_len {_known(facts.get('max_model_len'))}",
        f"max_num_batched_tokens {_known(facts.get('max_num_batched_tokens'))}",
        f"KV cache {_known(facts.get('kv_cache_tokens'), ' tokens')}",
        f"start-up {_known(facts.get('startup_s'), ' s')}",
    ]
    errors = ", ".join(f"{e['kind']} (line {e['line']})" for e in facts.get("errors", [])[:5])
    where = (
        f" (replica {facts['replica']} of {facts['replica_count']})" if facts.get("replica") else ""
    )
    line = (
        f"  vLLM log {facts['file']}{where}: "
        + ", ".join(parts)
        + (f"; errors: {errors}" if errors else "")
    )
    for replica in facts.get("replicas", []):
        kinds = ", ".join(replica["error_kinds"]) or "none"
        line += (
            f"\n    {replica['replica']}: vLLM {_known(replica.get('version'))}, max_num_seqs "
            f"{_known(replica.get('max_num_seqs'))}, KV cache "
            f"{_known(replica.get('kv_cache_tokens'), ' tokens')}, errors: {kinds}"
        )
    if facts.get("differing_text"):
        line += f"\n    differ between replicas: {facts['differing_text']}"
    return line


def measurement_table(facts: dict[str, Any], title: str) -> Table:
    """Steady (and cold) percentiles of a measure probe, with what the server saw."""
    table = Table(title=title, title_justify="left")
    table.add_column("")
    for column in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p99", "E2E p50", "ok"):
        table.add_column(column, justify="right")
    for label in ("steady", "cold"):
        row = facts.get(label)
        if row:
            table.add_row(label, *(_ms(row[k]) for k in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99",
                                                         "itl_p99", "e2e_p50")),
                          f"{row['succeeded']}/{row['requests']}")  # fmt: skip
    server = facts.get("server") or {}
    notes = []
    if server.get("available"):
        kv_peak = server["kv_usage_max"]
        notes.append(f"server: waiting max {_count(server['waiting_max'])}, preemptions "
                     f"{_count(server['preemptions'])}, KV peak "
                     f"{'?' if kv_peak is None else f'{kv_peak:.1%}'}")  # fmt: skip
        if server.get("ttft_outside_engine_ms") is not None:
            notes.append(f"TTFT outside the engine (proxy, network, API server) "
                         f"{_ms(server['ttft_outside_engine_ms'])} ms")  # fmt: skip
    burst = facts.get("burst") or {}
    if burst.get("max_events_per_read", 0) > 1:
        notes.append(f"up to {burst['max_events_per_read']} events per read")
    client = facts.get("client") or {}
    if facts.get("client_saturated"):
        notes.append("CLIENT SATURATED")
    elif client.get("contended"):
        notes.append(f"client contended: {client['reason']}")
    table.caption = "; ".join(notes) or None
    return table


def _count(value: float | None) -> str:
    """A count the server reports as a float (7.0): shown as 7."""
    return "?" if value is None else f"{value:g}"


def _finding(data: dict[str, Any], lang: str) -> Panel:
    lines = [Text(data["evidence"]), Text(pick(data["advice"], lang))]
    change = data.get("change")
    if change:
        lines.append(Text(f"the one change to try: {change['apply']}", style="bold"))
    lines.extend(Text(link, style="blue underline") for link in data["docs"])
    style = SEVERITY_STYLE.get(data["severity"], "white")
    title = (
        f"{data['code']} {data['severity'].upper()} ({data['cause']}): {pick(data['title'], lang)}"
    )
    return Panel(Group(*lines), title=escape(title), title_align="left", border_style=style)


def _rounds(data: dict[str, Any], side: str) -> str:
    """The round (or pooled rounds) on one side of a comparison: ``direct + direct_aa``."""
    pooled = data.get(f"{side}_rounds")
    return " + ".join(map(str, pooled)) if isinstance(pooled, list) and pooled else str(data[side])


def _comparison(data: dict[str, Any]) -> Table:
    table = Table(
        title=f"{_rounds(data, 'after')} vs {data['against']} ({_rounds(data, 'before')})",
        title_justify="left",
    )
    for column in ("segment", "before p50", "after p50", "change", "95% CI", "verdict"):
        table.add_column(column)
    for row in data["segments"]:
        ci = (
            "-"
            if row["ci_low_ms"] is None
            else f"[{row['ci_low_ms']:.1f}, {row['ci_high_ms']:.1f}]"
        )
        verdict = row["verdict"]
        if row.get("expected"):
            verdict = "expected (the finding predicted it)"
        elif verdict == "within noise" and row.get("noise_band") is not None:
            verdict = f"within noise (±{row['noise_band']:.0%})"
        style = (
            VERDICT_STYLE["expected"]
            if row.get("expected")
            else VERDICT_STYLE.get(row["verdict"], "")
        )
        # ITL is judged by each request's median gap (measure.JUDGED_BY): say so beside it.
        segment = f"{row['segment']} per request" if row.get("judged_by") else row["segment"]
        table.add_row(segment, _ms(row["before_p50"]), _ms(row["after_p50"]), _ms(row["change_ms"]), ci,
                      Text(verdict, style=style))  # fmt: skip
    return table
