"""The one rendering layer (rich): live runs, replay and export all draw with these functions."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.live import Live
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from wizard.i18n.fleet_words import bounds, difference
from wizard.i18n.loadgen_words import loadgen_note
from wizard.i18n.nginx_words import buffering_from, nginx_message, seconds
from wizard.i18n.proxy_words import proxy_verdict
from wizard.i18n.replica_words import replica_evidence
from wizard.i18n.words import paren, say
from wizard.measure import percentile
from wizard.record.terminal import printable
from wizard.ui.render_events import pick, replicas_source

PLAIN_PROGRESS_INTERVAL_S = 2.0


class SafeConsole(Console):
    """A console that never passes a control sequence from the text it prints to the terminal.

    Every renderable ends as segments here, whatever built it, so outside text is made inert
    in one place; the console's own styling and cursor control are separate control segments.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and (text := printable(segment.text)) != segment.text:
                yield Segment(text, segment.style)
            else:
                yield segment


def console(stderr: bool = False) -> Console:
    """The console every command prints to."""
    return SafeConsole(highlight=False, stderr=stderr)


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def summary_table(summary: dict[str, Any], title: str | None = None, lang: str = "en") -> Table:
    """Percentiles per segment of a stream-report summary, with errors as the caption."""
    table = Table(title=title, title_justify="left")
    table.add_column(say("view.segment", lang))
    for point in ("p50", "p90", "p99"):
        table.add_column(say("view.point_ms", lang, point=point), justify="right")
    for key, label in (
        ("ttft_ms", "TTFT"),
        ("tpot_ms", "TPOT"),
        ("itl_ms", "ITL"),
        ("e2e_ms", "E2E"),
    ):
        row = summary[key]
        table.add_row(label, *(_ms(row[p]) for p in ("p50", "p90", "p99")))
    errors = summary["errors"]
    if errors:
        table.caption = say("view.errors", lang, errors=", ".join(
            say("view.error_count", lang, kind=kind, count=count) for kind, count in errors.items()
        ))  # fmt: skip
    elif summary["output_tokens_estimated"]:
        table.caption = say("view.tokens_estimated", lang)
    return table


def _succeeded(summary: dict[str, Any], lang: str) -> str:
    return say("view.succeeded", lang, succeeded=summary["succeeded"], requests=summary["requests"])


def failures(
    stream: dict[str, Any], served_models: list[str] | None = None, lang: str = "en"
) -> list[Text]:
    """The first message of each kind of failure in a stream report, as the server put it; and,
    when the model was not found, the models the server serves."""
    first: dict[str, str] = {}
    for sample in stream["samples"]:
        if sample["error_kind"] and sample["error_kind"] not in first:
            first[sample["error_kind"]] = sample["error"]
    # The server's own message is quoted as it came, as code in a Chinese line.
    lines = [Text(say("view.failure", lang, kind=kind, message=message), style="red")
             for kind, message in first.items()]  # fmt: skip
    if served_models is not None:
        served = ", ".join(served_models) or say("view.none_listed", lang)
        lines.append(Text(say("view.served_models", lang, served=served)))
    return lines


def stream_table(report: dict[str, Any], lang: str = "en") -> Group:
    """A stream-probe report: heading, the percentile table and what failed."""
    summary = report["summary"]
    return Group(
        Text(say("view.heading", lang, target=report.get("target", ""), text=_succeeded(summary, lang))),
        *_measured(summary, summary_table(summary, lang=lang), lang),
        *failures(report, report.get("served_models"), lang),
    )  # fmt: skip


def _measured(summary: dict[str, Any], table: Table, lang: str) -> list[Any]:
    """A round's table, or, when every request failed, the line that says nothing was measured
    (a table of dashes would read as a measurement)."""
    if summary["succeeded"]:
        return [table]
    return [Text(say("view.nothing_measured", lang), style="bold yellow")]


def load_view(report: dict[str, Any], lang: str = "en") -> Group:
    """A load-probe report: steady state, cold requests apart, and the client's self-check."""
    steady = report["steady"]["summary"]
    parts: list[Any] = [
        Text(say("view.load_heading", lang, target=report.get("target", ""),
                 concurrency=report["concurrency"], succeeded=_succeeded(steady, lang),
                 rate=f"{report['output_tokens_per_s'] or 0:.0f}")),
        *_measured(steady, summary_table(steady, title=say("view.steady", lang), lang=lang), lang),
        *failures(report["steady"], report.get("served_models"), lang),
    ]  # fmt: skip
    if report.get("cold") and report["cold"]["summary"]["succeeded"]:
        parts.append(
            summary_table(report["cold"]["summary"], title=say("view.cold", lang), lang=lang)
        )
    client = report["client"]
    # Absent from reports written before the reason was kept in every language.
    reason = pick(client.get("reason_texts") or client.get("reason"), lang)
    if client["saturated"]:
        parts.append(Text(say("view.saturated", lang, reason=reason), style="bold red"))
    elif client.get("contended"):
        parts.append(Text(say("view.contended", lang, reason=reason), style="yellow"))
    else:
        parts.append(Text(say("view.client_ok", lang, lag=f"{client['loop_lag_p90_ms']:.1f}",
                              cpu=f"{client['cpu_fraction']:.0%}")))  # fmt: skip
    return Group(*parts)


class LoadProgressView:
    """Live progress of a load run: a rich Live line on a TTY, plain lines every few seconds otherwise."""

    def __init__(self, live: bool, lang: str = "en") -> None:
        self._lang = lang
        self._live = Live(console=console(stderr=True), transient=True) if live else None
        self._last_plain = 0.0
        self._last: Any = None

    def __enter__(self) -> LoadProgressView:
        if self._live is not None:
            self._live.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(kind, value, tb)
        elif self._last is not None:
            print(self._line(self._last, self._lang), file=sys.stderr, flush=True)

    def update(self, progress: Any) -> None:
        """Called by the load probe after every finished request."""
        self._last = progress
        if self._live is not None:
            self._live.update(Text(self._line(progress, self._lang)))
            return
        now = time.monotonic()
        if now - self._last_plain >= PLAIN_PROGRESS_INTERVAL_S:
            self._last_plain = now
            print(self._line(progress, self._lang), file=sys.stderr, flush=True)

    @staticmethod
    def _line(progress: Any, lang: str) -> str:
        total = f"/{progress.total}" if progress.total else ""
        return say("view.progress", lang, done=progress.done, total=total, failed=progress.failed,
                   ttft50=_ms(percentile(progress.ttft_ms, 50)), ttft99=_ms(percentile(progress.ttft_ms, 99)),
                   tpot50=_ms(percentile(progress.tpot_ms, 50)))  # fmt: skip


def validation_view(report: dict[str, Any], lang: str = "en") -> Group:
    """LoadGen runs: verdict, reasons, LoadGen's numbers and the client's."""
    parts: list[Any] = [
        Text(say("view.loadgen_logs", lang, target=report["target"], outdir=report["outdir"]))
    ]
    for run in report["runs"]:
        style = "bold green" if run["result"] == "VALID" else "bold red"
        rate = (say("view.at_qps", lang, qps=f"{run['spec']['target_qps']:g}")
                if run["scenario"] != "SingleStream" else "")  # fmt: skip
        counts = say("view.queries_ok", lang, succeeded=run["succeeded"], queries=run["queries"])
        parts.append(Text(say("view.run_result", lang, scenario=run["scenario"], rate=rate, result=run["result"],
                              counts=counts), style=style))  # fmt: skip
        reasons = run["reasons"] if lang == "en" else _loadgen_reasons(run, lang)
        parts.extend(Text(f"  - {reason}") for reason in reasons)
        if run["note"]:
            note = loadgen_note(run["scenario"], run["result"], run["failed"], lang)
            parts.append(Text("  " + say("view.note", lang, note=note), style="yellow"))
        table = Table(title=None if run["latency_evidence"] else say("view.not_evidence", lang),
                      title_justify="left")  # fmt: skip
        table.add_column("LoadGen")
        table.add_column(say("view.value", lang), justify="right")
        for key, value in run["loadgen"].items():
            label = key if lang == "en" else say(f"view.loadgen.{key}", lang)
            shown = (
                "-" if value is None else f"{value:.1f}" if isinstance(value, float) else str(value)
            )
            table.add_row(label, shown)
        parts.append(table)
    if report.get("peak_qps") is not None:
        parts.append(Text(say("view.peak", lang, qps=f"{report['peak_qps']:g}"), style="bold"))
    return Group(*parts)


def _loadgen_reasons(run: dict[str, Any], lang: str) -> list[str]:
    """A run's reasons, said again: the wizard's own (failed queries, recorded first) from the
    run's counts; LoadGen's quoted as LoadGen wrote them."""
    ours: list[str] = []
    if run["queries"] == 0:
        ours.append(say("view.no_query", lang))
    elif run["failed"]:
        kinds = say("comma", lang).join(
            f"`{kind}` {n}" for kind, n in sorted(run["errors"].items())
        )
        first = run.get("first_error") or {}
        message = first.get("message") or first.get("kind")
        ours.append(say("view.queries_failed", lang, failed=run["failed"], queries=run["queries"], kinds=kinds,
                        nothing=say("view.nothing_ok", lang) if run["failed"] >= run["queries"] else "",
                        first=say("view.first_error", lang, message=message) if message else ""))  # fmt: skip
    return ours + [
        say("view.loadgen_said", lang, reason=reason) for reason in run["reasons"][len(ours) :]
    ]


def proxy_view(report: dict[str, Any], lang: str = "en") -> Group:
    """Direct vs proxy: the two summaries and the verdict."""
    if report.get("nothing_measured"):
        empty = report["nothing_measured"]
        paths = say("comma", lang).join(say(f"view.{'direct' if p == 'direct' else 'via'}", lang)
                                        for p in empty["paths"])  # fmt: skip
        return Group(
            Text(say("view.proxy_nothing", lang, paths=paths), style="bold yellow"),
            *failures(report["direct"], None, lang), *failures(report["via"], None, lang),
        )  # fmt: skip
    style = "bold red" if report["buffering_suspected"] or report["truncated"] else "bold green"
    return Group(
        summary_table(report["direct"]["summary"], title=say("view.direct", lang), lang=lang),
        summary_table(report["via"]["summary"], title=say("view.via", lang), lang=lang),
        Text(proxy_verdict(report, lang), style=style),
    )


def nginx_config_view(report: dict[str, Any], lang: str = "en") -> Group:
    """Every proxied location's effective values, then the findings with their directive."""
    table = Table(title=say("view.nginx_title", lang), title_justify="left")
    for column in ("where", "location", "buffering", "x_accel", "timeouts", "http", "gzip"):
        table.add_column(say(f"view.nginx_col.{column}", lang))
    for loc in report["locations"]:
        table.add_row(
            f"{loc['file']}:{loc['line']}", loc["path"],
            paren(loc["proxy_buffering"], buffering_from(loc["proxy_buffering_from"], lang), lang),
            say("view.x_accel_ignored" if loc["ignores_x_accel_buffering"] else "view.x_accel_honoured", lang),
            f"{seconds(loc['proxy_read_timeout_s'])}/{seconds(loc['proxy_connect_timeout_s'])}",
            _with_source(loc["proxy_http_version"], loc.get("proxy_http_version_from"), lang),
            say("yes" if loc["gzip_event_stream"] else "no", lang).lower(),
        )  # fmt: skip
    parts: list[Any] = [table]
    for f in report["findings"]:
        message = _nginx_message(f, report["locations"], lang)
        parts.append(Text(say("view.nginx_finding", lang, file=f["file"], line=f["line"], code=f["code"],
                              severity=f["severity"] if lang == "en" else say(f"severity.{f['severity']}", lang),
                              cause=f["cause"], location=f["location"], message=message,
                              directive=pick(f.get("directive_texts") or f["directive"], lang))))  # fmt: skip
    if not report["findings"]:
        parts.append(Text(say("view.no_findings", lang), style="green"))
    for error in report.get("errors", []):
        parts.append(Text(say("view.nginx_error", lang, error=error["error"], included_from=error["included_from"]),
                          style="red"))  # fmt: skip
    for note in report.get("notes_texts") or report.get("notes", []):
        parts.append(Text(say("view.note", lang, note=pick(note, lang))))
    return Group(*parts)


def _nginx_message(finding: dict[str, Any], locations: list[dict[str, Any]], lang: str) -> str:
    """A finding's message, from the values it records; one recorded before it recorded them (an
    older transcript's) as recorded in English, else from its location's values."""
    if "values" in finding:
        return nginx_message(finding["code"], finding["values"], lang)
    if lang == "en":
        return str(finding["message"])
    location = next((loc for loc in locations if (loc["file"], loc["line"]) == (finding["file"], finding["line"])),
                    {})  # fmt: skip
    return nginx_message(finding["code"], {"source": location.get("proxy_buffering_from"),
                                           "read_s": location.get("proxy_read_timeout_s"),
                                           "connect_s": location.get("proxy_connect_timeout_s")}, lang)  # fmt: skip


def _with_source(value: str | None, source: str | None, lang: str = "en") -> str:
    """A value and, when nginx's default, that it is one."""
    if value is None:
        return "?"
    return paren(value, say("view.nginx_default", lang), lang) if source == "default" else value


def fleet_view(report: dict[str, Any], lang: str = "en") -> Group:
    """Every replica over the window (percentiles with their buckets), then who differs and why."""
    table = Table(title=say("view.fleet_title", lang, window=report["window"], n=report["replica_count"],
                            prometheus=report["prometheus"]), title_justify="left")  # fmt: skip
    for column in ("replica", "share", "waiting", "preempt", "kv", "ttft", "itl", "queue"):
        table.add_column(say(f"view.fleet_col.{column}", lang))

    def bucket(histogram: dict[str, Any]) -> str:
        p95 = histogram.get("p95")
        if not p95:
            return "-"
        return p95["text"].removeprefix("p95 ") if lang == "en" else bounds(p95, lang)

    def number(value: float | None, form: str) -> str:
        return "-" if value is None else format(value, form)

    for r in report["replicas"]:
        table.add_row(
            Text(r["instance"], style="bold red" if r["differs"] else ""),
            number(r["request_share"], ".0%"),
            f"{number(r['waiting_avg'], '.1f')}/{number(r['waiting_max'], '.0f')}",
            number(r["preemptions"], ".0f"), number(r["kv_peak"], ".0%"),
            bucket(r["ttft"]), bucket(r["itl"]), bucket(r["queue"]),
        )  # fmt: skip
    parts: list[Any] = [table]
    for r in report["replicas"]:
        if r["differs"]:
            causes = (
                say("view.fleet_causes", lang, causes=", ".join(r["causes"])) if r["causes"] else ""
            )
            texts = [difference(d, lang) for d in r["differs"]]
            parts.append(Text(say("view.fleet_differs", lang, instance=r["instance"], causes=causes,
                                  why=say("sep", lang).join(texts))))  # fmt: skip
    look_at = report["look_at"]
    if look_at:
        where = look_at["url"] or say("view.fleet_no_url", lang)
        parts.append(
            Text(
                say("view.fleet_look_at", lang, instance=look_at["instance"], where=where),
                style="bold",
            )
        )
    else:
        parts.append(Text(say("view.fleet_none_differs", lang), style="green"))
    for down in report["targets_down"]:
        parts.append(Text(say("view.fleet_down", lang, target=down), style="yellow"))
    if report.get("note"):
        note = (
            report["note"]
            if lang == "en"
            else say("view.fleet_no_series", lang, window=report["window"])
        )
        parts.append(Text(note, style="yellow"))
    return Group(*parts)


def replicas_view(report: dict[str, Any], lang: str = "en") -> Group:
    """Every replica measured directly, the balancer's share of requests, then what is wrong."""
    via = report.get("balancer_round") or {}
    shares = via.get("shares") or {}
    source = report["source"] if lang == "en" else replicas_source(report, lang)
    table = Table(title=say("view.replicas_title", lang, source=source), title_justify="left")
    for column in ("replica", "ttft", "tpot", "waiting", "preempt", "share"):
        table.add_column(say(f"view.replicas_col.{column}", lang))

    def ms(steady: dict[str, Any] | None, key: str) -> str:
        value = (steady or {}).get(key)
        return "-" if value is None else f"{value:.1f} ms"

    for r in report["replicas"]:
        server = r["server"] or {}
        share = shares.get(r["url"])
        table.add_row(
            Text(r["url"], style="bold red" if r["cause"] else ""),
            ms(r["steady"], "ttft_p50"), ms(r["steady"], "tpot_p50"),
            "-" if server.get("waiting_max") is None else f"{server['waiting_max']:.0f}",
            "-" if server.get("preemptions") is None else f"{server['preemptions']:.0f}",
            "-" if share is None else f"{share:.0%}",
        )  # fmt: skip
    parts: list[Any] = [table]
    for r in report["replicas"]:
        if r["error"]:
            parts.append(
                Text(
                    say("view.replica_error", lang, url=r["url"], error=r["error"]), style="yellow"
                )
            )
    if via:
        parts.append(Text(say("view.replicas_via", lang, balancer=report["balancer"],
                              ttft=ms(via.get("steady"), "ttft_p50"), tpot=ms(via.get("steady"), "tpot_p50"))))  # fmt: skip
    for cause, text in report["evidence"].items():
        shown = replica_evidence(report, cause, text, lang)
        parts.append(
            Text(say("view.replica_cause", lang, cause=cause, text=shown), style="bold red")
        )
    if not report["causes"]:
        parts.append(Text(say("view.replicas_fine", lang), style="green"))
    return Group(*parts)
