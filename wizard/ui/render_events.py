"""Renderers for transcript events: the live walk, replay and export draw the same pictures."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from wizard.i18n.replica_words import replica_evidence, said_why
from wizard.i18n.words import (
    WORDS,
    answer_label,
    evidence_source,
    joined,
    outside_engine,
    paren,
    path_name,
    percent,
    say,
    segment_name,
    tenths,
    value_word,
    verdict_word,
)
from wizard.measure import MAX_BAND, NEAR_ZERO, TOO_WIDE
from wizard.record.event_shapes import problem, unreadable_note
from wizard.ui.render_budget import budget_text, spent_text

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


def _answer_value(question_id: str, value: Any, lang: str) -> str:
    """An answer as a person reads it: yes/no, a link's name, never ``None`` or ``True``."""
    return value_word(question_id, value, lang)


def _ms(value: Any) -> str:
    return "-" if value is None else tenths(value)


def render_event(
    event: dict[str, Any], lang: str = "en", replay: bool = False
) -> RenderableType | None:
    """A renderable for one event, or None for events that show nothing on their own."""
    if (why := problem(event)) is not None:  # written by another version or tool, or edited
        return Text(f"  {unreadable_note(event, why, lang)}", style="yellow")
    kind, data = event["type"], event["data"]
    if kind == "node_enter":
        # A node that covers no procedure item (a cause beyond the seed) shows its stage alone.
        where = data["stage"] + (f"; {', '.join(data['covers'])}" if data["covers"] else "")
        return Group(
            Rule(f"[bold]{escape(pick(data['title'], lang))}[/]  ({where})"),
            Text(pick(data["explain"], lang), style="dim"),
        )
    if kind == "question":
        source = (
            say("walk.default_from", lang, source=evidence_source(data["default_from"], lang))
            if data.get("default_from")
            else ""
        )
        if data.get("asked") is False:  # the evidence answered it: its answer line says so
            return None
        default = _answer_value(data["id"], data["default"], lang)
        if replay:
            return Text(say("walk.replay_question", lang, text=pick(data["text"], lang),
                            default=default, source=source))  # fmt: skip
        if source:  # the prompt shows the default; say where it came from
            return Text(say("walk.question_default", lang, label=answer_label(data["id"], lang),
                            default=default, source=source), style="dim")  # fmt: skip
    if kind == "answer":
        label, value = (
            answer_label(data["id"], lang),
            _answer_value(data["id"], data["value"], lang),
        )
        if data.get("from_evidence"):
            source = data["from_evidence"]
            if source.startswith("answers."):
                return Text(
                    say("walk.not_asked_earlier", lang, label=label, value=value), style="cyan"
                )
            shown = pick(data.get("from_evidence_texts") or evidence_source(source, lang), lang)
            return Text(
                say("walk.not_asked", lang, label=label, value=value, source=shown), style="cyan"
            )
        return Text(say("walk.answer", lang, label=label, value=value), style="cyan")
    if kind == "node_exit":
        done = data.get("stage_done")
        if done and done["passed"]:
            info = (say("walk.pass_info", lang, codes=", ".join(done["findings"]))
                    if done["findings"] else "")  # fmt: skip
            return Text(say("walk.pass", lang, stage=done["stage"], info=info), style="bold green")
        return None
    if kind == "probe_result":
        return _probe(data, lang)
    if kind == "finding":
        return _finding(data, lang)
    if kind == "change":
        restarted = say("walk.restarted", lang) if data.get("restarted") else ""
        return Text(say("walk.change", lang, layer=data["layer"], parameter=data["parameter"],
                        before=data["before"], after=data["after"], restarted=restarted),
                    style="bold magenta")  # fmt: skip
    if kind == "comparison":
        return _comparison(data, lang)
    if kind == "verdict":
        style = {"cause gone": "bold green", "inconclusive": "yellow"}.get(
            data["verdict"], "bold red"
        )
        verdict = verdict_word(data["verdict"], lang)
        if data.get("contended_rounds"):
            verdict = say("cmp.contended", lang)
        return Text(
            say("cause_verdict", lang, code=data["code"], verdict=verdict,
                round=data["round"], evidence=pick(data.get("evidence_texts") or data["evidence"], lang)),
            style=style,
        )  # fmt: skip
    if kind == "inconclusive":
        return Text(say("walk.inconclusive", lang, code=data["code"], rounds=", ".join(data["rounds"]),
                        reason=pick(data.get("reason_texts") or data["reason"], lang)), style="yellow")  # fmt: skip
    if kind == "resume":
        server = data.get("server") or {}
        return Text(say("walk.resumed", lang, at=data["at"], model=server.get("model"),
                        version=server.get("version"), max_model_len=server.get("max_model_len")),
                    style="bold")  # fmt: skip
    if kind == "config_check":
        style = {"confirmed": "green", "not observable": "dim"}.get(data["verdict"], "bold red")
        return Text(
            say("walk.server_check", lang, text=pick(data.get("texts") or data["text"], lang)),
            style=style,
        )
    if kind == "noise":
        bands = say("comma", lang).join(
            f"{segment_name(k)} ±{percent(v)}"
            if v <= MAX_BAND
            else say("band.beyond", lang, segment=segment_name(k))
            for k, v in data["bands"].items()
        )
        return Text(say("walk.noise", lang, rounds=" vs ".join(data["rounds"]),
                        bands=bands or say("walk.not_measurable", lang)), style="dim")  # fmt: skip
    if kind == "note":
        return Text(
            say("walk.note", lang, text=pick(data.get("texts") or data["text"], lang)), style="dim"
        )
    if kind == "end":
        codes = ", ".join(data["findings"]) or say("walk.none", lang)
        rule = Rule(say("walk.complete", lang, codes=codes, changes=data["changes"]))
        return Group(spent_text(data["spent"], lang), rule) if data.get("spent") else rule
    if kind == "budget":
        return budget_text(data, lang)
    return None


def _probe(data: dict[str, Any], lang: str) -> RenderableType | None:
    name, label, facts = data["probe"], data.get("round") or data["as"], data["facts"]
    if data["error"]:
        return Text(
            say("walk.probe_failed", lang, name=name, label=label, error=data["error"]), style="red"
        )
    if name == "measure":
        title = say("walk.round_title", lang, label=label, path=path_name(facts["path"], lang),
                    url=facts["url"])  # fmt: skip
        return measurement_table(facts, title, lang)
    if name == "host":
        return Text(host_line(facts, lang))
    if name == "vllm-log":
        return Text(log_line(facts, lang))
    if name == "engine-state":
        # Whether the engine died while serving: its reason in words, or that it still serves (the
        # facts' own keys and Python values were printed raw).
        if facts.get("died"):
            return Text(
                pick(facts.get("why_texts") or facts.get("why") or "", lang), style="bold red"
            )
        status = facts.get("health_status")
        return Text(say("walk.engine_serving", lang,
                        health=say("unknown", lang) if status is None else str(status)))  # fmt: skip
    if name == "endpoints" and facts.get("reachable") is False:
        # Absent in transcripts written before it was recorded; in every language since.
        why = pick(facts.get("error_texts") or facts.get("error"), lang)
        return Text(
            say("walk.no_answer", lang) + (paren("", why, lang) if why else ""),
            style="red",
        )
    if name == "endpoints" and facts.get("openai_api") is False:
        # No model list: nothing else was asked, there is no value to show (it printed None).
        status = facts.get("models_status")
        answer = f"HTTP {status}" if isinstance(status, int) else say("walk.not_model_list", lang)
        return Text(say("walk.endpoints_no_api", lang, status=answer), style="red")
    if name == "endpoints":
        unknown = say("unknown", lang)
        return Text(say("walk.endpoints", lang, model=facts.get("model") or unknown,
                        version=facts.get("version") or unknown,
                        auth=value_word("auth", facts.get("auth"), lang),
                        completions="ok" if facts.get("completions_ok") else facts.get("completions_status"),
                        chat="ok" if facts.get("chat_ok") else facts.get("chat_status"),
                        suffix=say("walk.suffix", lang, suffix=facts["suffix"]) if facts.get("suffix") else ""))  # fmt: skip
    if name == "nginx-config":
        found = say("comma", lang).join(say("walk.nginx_at", lang, code=f["code"], file=f["file"], line=f["line"],
                              directive=pick(f.get("directive_texts") or f["directive"], lang))
                          for f in facts["findings"])  # fmt: skip
        return Text(
            say(
                "walk.nginx",
                lang,
                n=len(facts["locations"]),
                found=found or say("walk.no_static", lang),
            )
        )
    if name == "audit":
        flags = [
            say(f"audit_flag.{k}", lang) if f"audit_flag.{k}" in WORDS else k
            for k, v in facts.items()
            if v is True and k != "available"
        ]
        return Text(say("walk.audit", lang, measurements=facts.get("measurements"), changes=facts.get("changes"),
                        flags=say("comma", lang).join(flags) or say("walk.none", lang)))  # fmt: skip
    if name == "validate":
        return _loadgen_line(facts, lang)
    if name == "replicas":
        return Text(_replicas_lines(facts, lang))
    if name == "fleet" and not facts.get("available"):
        error = facts.get("error")
        return Text(
            say("walk.fleet_failed", lang, error=error) if error else say("walk.fleet_off", lang)
        )
    if name == "request-shape":
        return Text(_shape_line(facts, lang))
    if name == "nginx-access":
        return _access_line(facts, lang)
    shown = {k: v for k, v in facts.items() if not isinstance(v, dict | list)}
    return Text(f"  {name} ({label}): " + ", ".join(f"{k}={v}" for k, v in shown.items()))


def _access_line(facts: dict[str, Any], lang: str) -> Text | None:
    """nginx's times for the round through the proxy; nothing for the mark before it (or for a
    walk given no access log: the summary's waterfall says what it lacks)."""
    if "offset" in facts or facts.get("why") == "not_given":
        return None
    if not facts.get("available"):
        return Text(say(f"waterfall.access.{facts.get('why') or 'unreadable'}", lang), style="dim")
    from wizard.measure.waterfall import from_means

    hops = {p["hop"]: p["ms"] for p in from_means({}, facts, None)["parts"]}
    return Text(say("walk.access", lang, requests=facts["requests"], proxy=_ms(hops.get("proxy")),
                    header=_ms(hops.get("api_server"))), style="dim")  # fmt: skip


def _shape_line(facts: dict[str, Any], lang: str) -> str:
    """The incident body's per-request part (a timestamp, an id) and how much prompt follows it."""
    if not facts.get("body"):
        return say("walk.shape_no_body", lang)
    if not facts.get("varying_kind"):
        return say("walk.shape_fixed", lang)
    share = facts.get("varying_share_after")
    return say("walk.shape_varies", lang, kind=value_word("varying_kind", facts["varying_kind"], lang),
               text=facts.get("varying_text"), word=facts.get("varying_word"),
               share=percent(share) if isinstance(share, int | float) else say("unknown", lang))  # fmt: skip


def loadgen_outcome(facts: dict[str, Any], lang: str = "en") -> dict[str, Any]:
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
        reasons.insert(0, say("walk.queries_failed", lang, failed=queries - succeeded, queries=queries,
                              result=result))  # fmt: skip
        result = "ERROR" if succeeded == 0 else "INVALID"
    return {"scenario": facts.get("scenario"), "result": result, "queries": queries,
            "succeeded": succeeded, "reasons": reasons,
            "early_stopping_p90_ms": (facts.get("loadgen") or {}).get("early_stopping_p90_ms")}  # fmt: skip


def _loadgen_line(facts: dict[str, Any], lang: str) -> Text:
    """The LoadGen verdict: VALID with its counts, else INVALID/ERROR with the reasons."""
    run = loadgen_outcome(facts, lang)
    result = run["result"]
    if result == "VALID":
        detail = say("loadgen_ok", lang, succeeded=run["succeeded"], queries=run["queries"])
        p90 = run["early_stopping_p90_ms"]
        if p90 is not None and facts.get("scenario") != "Offline":
            detail += say("walk.loadgen_p90", lang, p90=f"{p90:.1f}")
    else:
        detail = joined(run["reasons"], lang) or say("walk.no_reason", lang)
    if facts.get("scenario") == "Offline":
        detail += say("walk.offline", lang)
    return Text("  " + say("loadgen", lang, scenario=facts.get("scenario"), result=result, detail=detail),
                style="" if result == "VALID" else "red")  # fmt: skip


def busy_text(call: dict[str, Any], lang: str = "en") -> str:
    """One line saying what a running probe is doing (the walk's transient status line)."""
    name, label, params = call["probe"], call["round"], call["params"]
    shape = (
        say("busy.body", lang)
        if params.get("replay_body")
        else say(
            "busy.tokens", lang, input=params.get("input_tokens"), output=params.get("max_tokens")
        )
    )
    via = say("busy.via", lang, endpoint=params["endpoint"]) if params.get("endpoint") else ""
    if name == "measure" and call.get("compared_with"):
        seconds = (say("busy.seconds", lang, s=f"{call['budget_s']:.0f}")
                   if call.get("budget_s") else "")  # fmt: skip
        return say("busy.measure_until", lang, label=label, streams=params.get("concurrency"),
                   requests=params.get("requests"), seconds=seconds, shape=shape, via=via,
                   about=call["compared_with"])  # fmt: skip
    if name == "measure":
        return say("busy.measure", lang, label=label, streams=params.get("concurrency"),
                   requests=params.get("requests"), shape=shape, via=via)  # fmt: skip
    if name == "validate":
        return say(
            "busy.loadgen", lang, scenario=params.get("scenario"), label=label, shape=shape, via=via
        )
    return say("busy.probe", lang, name=name, label=label)


def progress_text(call: dict[str, Any], progress: dict[str, Any], lang: str = "en") -> str:
    """The status line with a round's progress: n/N, elapsed, and about how long is left."""
    total = f"/{progress['total']}" if progress.get("total") else ""
    failed = say("busy.failed", lang, failed=progress["failed"]) if progress.get("failed") else ""
    left = (say("busy.left", lang, eta=f"{progress['eta_s']:.0f}")
            if progress.get("eta_s") is not None else "")  # fmt: skip
    return say("busy.progress", lang, busy=busy_text(call, lang), done=progress["done"], total=total,
               failed=failed, elapsed=f"{progress['elapsed_s']:.0f}", left=left)  # fmt: skip


def _known(value: Any, lang: str, unit_key: str = "") -> str:
    if value is None or value == []:
        return say("unknown", lang)
    return say(unit_key, lang, n=value) if unit_key else str(value)


def _ms_value(value: float | None) -> str | None:
    """A replica's p50 as a person reads it (``192.8``, never the float's binary noise); None
    stays unknown."""
    return None if value is None else _ms(value)


def _replicas_lines(facts: dict[str, Any], lang: str) -> str:
    """Each replica measured directly, the balancer's share, and what is wrong, one line each."""
    if not facts.get("available"):
        why = pick(facts.get("note_texts") or facts.get("note", "no replicas known"), lang)
        return say("walk.replicas_off", lang, why=why)
    shares = (facts.get("balancer_round") or {}).get("shares") or {}
    source = facts.get("source") if lang == "en" else replicas_source(facts, lang)
    lines = [say("replicas.from", lang, source=source)]
    for replica in facts.get("replicas") or []:
        steady = replica.get("steady") or {}
        share = shares.get(replica.get("url"))
        lines.append(
            say("replicas.line", lang, url=replica.get("url"), ttft=_known(_ms_value(steady.get("ttft_p50")), lang, "ms"),
                tpot=_known(_ms_value(steady.get("tpot_p50")), lang, "ms"))
            + (say("replicas.share", lang, share=f"{share:.0%}") if share is not None else "")
            + (say("replicas.slow", lang, cause=replica["cause"],
                   why=said_why(replica, lang))
               if replica.get("cause") else "")
        )  # fmt: skip
    for cause, text in (facts.get("evidence") or {}).items():
        lines.append(f"    {cause}: {replica_evidence(facts, cause, text, lang)}")
    return "\n".join(lines)


def replicas_source(report: dict[str, Any], lang: str) -> str:
    """Where the replicas came from (recorded in English), said again."""
    upstream = report.get("upstream")
    if upstream:
        return say(
            "view.replicas_upstream",
            lang,
            name=upstream["name"],
            file=upstream["file"],
            line=upstream["line"],
        )
    source = report.get("source")
    return say("view.replicas_given", lang) if source == "--replica" else str(source)


def host_line(facts: dict[str, Any], lang: str, every_note: bool = False) -> str:
    """The host probe's facts as a sentence, with its first note (every note: ``probe host``)."""
    names = ", ".join(sorted(set(facts.get("gpu_names") or [])))
    source_key = f"host.source.{facts['source']}"
    line = say("host.line", lang, source=say(source_key, lang) if source_key in WORDS else facts["source"],
               cores=_known(facts.get("physical_cores"), lang), gpus=_known(facts.get("gpus"), lang),
               names=paren("", names, lang) if names else "",
               interconnect=value_word("interconnect", facts["interconnect"], lang),
               visible=_known(facts.get("cuda_visible_devices"), lang))  # fmt: skip
    return line + _notes(facts, lang, every_note)


def _notes(facts: dict[str, Any], lang: str, every_note: bool) -> str:
    notes = facts.get("notes_texts") or facts.get("notes") or []
    return "".join("\n  " + say("walk.note", lang, text=pick(note, lang))
                   for note in (notes if every_note else notes[:1]))  # fmt: skip


def log_line(facts: dict[str, Any], lang: str, every_note: bool = False) -> str:
    """The vLLM log probe's facts as sentences (with every note of the reader: ``probe vllm-log``)."""
    if not facts.get("available"):
        return say("log.none", lang)
    # Optional in the shape: a probe that found no log records none.
    file = facts.get("file") or say("unknown", lang)
    if facts.get("note"):
        return say(
            "log.note",
            lang,
            file=file,
            note=pick(facts.get("note_texts") or facts["note"], lang),
        )
    errors = ", ".join(say("log.error_at", lang, kind=value_word("error_kind", e["kind"], lang), line=e["line"])
                       for e in facts.get("errors", [])[:5])  # fmt: skip
    where = (
        say("log.replica", lang, replica=facts["replica"], count=facts["replica_count"])
        if facts.get("replica")
        else ""
    )
    line = say("log.line", lang, file=file + where, engine=_known(facts.get("engine"), lang),
               tp=_known(facts.get("tensor_parallel_size"), lang),
               pp=_known(facts.get("pipeline_parallel_size"), lang),
               max_model_len=_known(facts.get("max_model_len"), lang),
               budget=_known(facts.get("max_num_batched_tokens"), lang),
               kv=_known(facts.get("kv_cache_tokens"), lang, "tokens"),
               startup=_known(facts.get("startup_s"), lang, "seconds"),
               errors=say("log.errors", lang, errors=errors) if errors else "")  # fmt: skip
    for replica in facts.get("replicas", []):
        kinds = ", ".join(value_word("error_kind", kind, lang) for kind in replica["error_kinds"])
        kinds = kinds or say("walk.none", lang)
        line += "\n" + say("log.replica_line", lang, replica=replica["replica"],
                            version=_known(replica.get("version"), lang),
                            seqs=_known(replica.get("max_num_seqs"), lang),
                            kv=_known(replica.get("kv_cache_tokens"), lang, "tokens"), errors=kinds)  # fmt: skip
    if facts.get("differing_text"):
        line += "\n" + say("log.differ", lang, text=facts["differing_text"])
    return line + (_notes(facts, lang, every_note) if every_note else "")


def measurement_table(facts: dict[str, Any], title: str, lang: str = "en") -> Table:
    """Steady (and cold) percentiles of a measure probe, with what the server saw."""
    table = Table(title=title, title_justify="left")
    table.add_column("ms", header_style="dim")  # the unit of every time in the table
    for column in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "ITL p99", "E2E p50"):
        table.add_column(column, justify="right")
    table.add_column(say("ok", lang), justify="right")
    for label in ("steady", "cold"):
        row = facts.get(label)
        if row:
            table.add_row(say(label, lang), *(_ms(row[k]) for k in ("ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99",
                                                         "itl_p99", "e2e_p50")),
                          f"{row['succeeded']}/{row['requests']}")  # fmt: skip
    server = facts.get("server") or {}
    notes = []
    if server.get("available"):
        # Absent from rounds recorded before the server's peaks were (all optional in the shape).
        kv_peak = server.get("kv_usage_max")
        notes.append(say("table.server", lang, waiting=_count(server.get("waiting_max")),
                         preemptions=_count(server.get("preemptions")),
                         kv="?" if kv_peak is None else f"{kv_peak:.1%}"))  # fmt: skip
        if (outside := outside_engine(server.get("ttft_outside_engine_ms"))) is not None:
            notes.append(say("table.outside", lang, ms=_ms(outside)))
    sequential = facts.get("sequential") or {}
    if sequential.get("answered_after") is not None:
        notes.append(say("table.answered", lang, n=sequential["steady_sent"],
                         budget=sequential["budget"], about=sequential["about"]))  # fmt: skip
    elif sequential.get("out_of_time"):
        notes.append(say("table.out_of_time", lang, n=sequential["steady_sent"],
                         s=f"{sequential['budget_s']:.0f}", about=sequential["about"]))  # fmt: skip
    elif sequential:
        notes.append(say("table.unanswered", lang, budget=sequential["budget"],
                         about=sequential["about"]))  # fmt: skip
    burst = facts.get("burst") or {}
    if burst.get("max_events_per_read", 0) > 1:
        notes.append(say("table.bursts", lang, n=burst["max_events_per_read"]))
    client = facts.get("client") or {}
    if facts.get("client_saturated"):
        notes.append(say("table.saturated", lang))
    elif client.get("contended"):
        notes.append(
            say(
                "table.contended",
                lang,
                reason=pick(client.get("reason_texts") or client["reason"], lang),
            )
        )
    table.caption = joined(notes, lang) or None
    return table


def _count(value: float | None) -> str:
    """A count the server reports as a float (7.0): shown as 7."""
    return "?" if value is None else f"{value:g}"


def _finding(data: dict[str, Any], lang: str) -> Panel:
    lines = [
        Text(pick(data.get("evidence_texts") or data["evidence"], lang)),
        Text(pick(data["advice"], lang)),
    ]
    change = data.get("change")
    if change:
        lines.append(Text(say("finding.try", lang, apply=change["apply"]), style="bold"))
    lines.extend(Text(link, style="blue underline") for link in data["docs"])
    style = SEVERITY_STYLE.get(data["severity"], "white")
    title = say("finding_head", lang, code=data["code"], severity=say(f"severity.{data['severity']}", lang)
                if f"severity.{data['severity']}" in WORDS else data["severity"].upper(),
                cause=data["cause"], title=pick(data["title"], lang))  # fmt: skip
    return Panel(Group(*lines), title=escape(title), title_align="left", border_style=style)


def _rounds(data: dict[str, Any], side: str) -> str:
    """The round (or pooled rounds) on one side of a comparison: ``direct + direct_aa``."""
    pooled = data.get(f"{side}_rounds")
    return " + ".join(map(str, pooled)) if isinstance(pooled, list) and pooled else str(data[side])


def band_word(row: dict[str, Any], lang: str) -> str | None:
    """What bounds a segment's verdict: its noise band (never beyond ±100 %: a transcript recorded
    before that bound shows why instead), or why no band can be given."""
    band = row.get("noise_band")
    if row["verdict"] == "within noise" and band is not None and band <= MAX_BAND:
        return say("noise_band", lang, band=percent(band))
    reason = row.get("reason")
    if reason is None and row["verdict"] == "within noise" and band is not None:
        reason = TOO_WIDE
    if reason == NEAR_ZERO:
        medians = [v for v in (row.get("before_p50"), row.get("after_p50")) if v is not None]
        return say("band.near_zero_median", lang, median=_ms(min(medians)) if medians else "-")
    if reason == TOO_WIDE and row["verdict"] in ("inconclusive", "within noise"):
        return say("band.band_too_wide", lang)
    return None


def _comparison(data: dict[str, Any], lang: str = "en") -> Table:
    table = Table(
        title=say("cmp.title", lang, after=_rounds(data, "after"),
                  against=value_word("against", data["against"], lang),
                  before=_rounds(data, "before")),
        title_justify="left",
    )  # fmt: skip
    for column in ("segment", "before", "after", "change", "ci", "verdict"):
        table.add_column(say(f"cmp.{column}", lang))
    for row in data["segments"]:
        ci = (
            "-"
            if row["ci_low_ms"] is None or row["ci_high_ms"] is None
            else f"[{row['ci_low_ms']:.1f}, {row['ci_high_ms']:.1f}]"
        )
        verdict = verdict_word(row["verdict"], lang)
        if row.get("expected"):
            verdict = say("cmp.expected", lang)
        elif row.get("client_contended"):
            verdict = say("cmp.contended", lang)
        elif band := band_word(row, lang):
            verdict = paren(verdict, band, lang)
        style = (
            VERDICT_STYLE["expected"]
            if row.get("expected")
            else VERDICT_STYLE.get(row["verdict"], "")
        )
        # ITL is judged by each request's median gap (measure.JUDGED_BY): say so beside it.
        segment = (
            say("cmp.per_request", lang, segment=segment_name(row["segment"]))
            if row.get("judged_by")
            else segment_name(row["segment"])
        )
        table.add_row(segment, _ms(row["before_p50"]), _ms(row["after_p50"]), _ms(row["change_ms"]), ci,
                      Text(verdict, style=style))  # fmt: skip
    return table
