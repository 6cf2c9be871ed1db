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

from wizard.measure import percentile
from wizard.terminal import printable

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


def _seconds(value: float | None) -> str:
    """A timeout that did not parse shows as unknown."""
    return "?" if value is None else f"{value:g}"


def summary_table(summary: dict[str, Any], title: str | None = None) -> Table:
    """Percentiles per segment of a stream-report summary, with errors as the caption."""
    table = Table(title=title, title_justify="left")
    table.add_column("segment")
    for point in ("p50", "p90", "p99"):
        table.add_column(f"{point} (ms)", justify="right")
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
        table.caption = "errors: " + ", ".join(f"{kind} x{count}" for kind, count in errors.items())
    elif summary["output_tokens_estimated"]:
        table.caption = "output tokens estimated from events (the server sent no usage)"
    return table


def _succeeded(summary: dict[str, Any]) -> str:
    return f"{summary['succeeded']}/{summary['requests']} requests succeeded"


def failures(stream: dict[str, Any], served_models: list[str] | None = None) -> list[Text]:
    """The first message of each kind of failure in a stream report, as the server put it; and,
    when the model was not found, the models the server serves."""
    first: dict[str, str] = {}
    for sample in stream["samples"]:
        if sample["error_kind"] and sample["error_kind"] not in first:
            first[sample["error_kind"]] = sample["error"]
    lines = [Text(f"{kind}: {message}", style="red") for kind, message in first.items()]
    if served_models is not None:
        served = ", ".join(served_models) or "none listed"
        lines.append(Text(f"models this server serves: {served} (pass one with --model)"))
    return lines


def stream_table(report: dict[str, Any]) -> Group:
    """A stream-probe report: heading, the percentile table and what failed."""
    summary = report["summary"]
    return Group(
        Text(f"{report.get('target', '')}: {_succeeded(summary)}"),
        summary_table(summary),
        *failures(report, report.get("served_models")),
    )


def load_view(report: dict[str, Any]) -> Group:
    """A load-probe report: steady state, cold requests apart, and the client's self-check."""
    steady = report["steady"]["summary"]
    parts: list[Any] = [
        Text(
            f"{report.get('target', '')}: concurrency {report['concurrency']}, {_succeeded(steady)}, "
            f"{report['output_tokens_per_s'] or 0:.0f} output tokens/s"
        ),
        summary_table(steady, title="steady state"),
        *failures(report["steady"], report.get("served_models")),
    ]
    if report.get("cold"):
        parts.append(summary_table(report["cold"]["summary"], title="cold (warm-up, kept apart)"))
    client = report["client"]
    if client["saturated"]:
        parts.append(Text(f"client_saturated: {client['reason']}", style="bold red"))
    elif client.get("contended"):
        parts.append(Text(f"client contended: {client['reason']}", style="yellow"))
    else:
        parts.append(
            Text(
                f"client self-check ok: loop lag p90 {client['loop_lag_p90_ms']:.1f} ms, "
                f"CPU {client['cpu_fraction']:.0%} of a core"
            )
        )
    return Group(*parts)


class LoadProgressView:
    """Live progress of a load run: a rich Live line on a TTY, plain lines every few seconds otherwise."""

    def __init__(self, live: bool) -> None:
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
            print(self._line(self._last), file=sys.stderr, flush=True)

    def update(self, progress: Any) -> None:
        """Called by the load probe after every finished request."""
        self._last = progress
        if self._live is not None:
            self._live.update(Text(self._line(progress)))
            return
        now = time.monotonic()
        if now - self._last_plain >= PLAIN_PROGRESS_INTERVAL_S:
            self._last_plain = now
            print(self._line(progress), file=sys.stderr, flush=True)

    @staticmethod
    def _line(progress: Any) -> str:
        total = f"/{progress.total}" if progress.total else ""
        return (
            f"{progress.done}{total} requests, {progress.failed} failed; "
            f"TTFT p50 {_ms(percentile(progress.ttft_ms, 50))} ms p99 {_ms(percentile(progress.ttft_ms, 99))} ms; "
            f"TPOT p50 {_ms(percentile(progress.tpot_ms, 50))} ms"
        )


def validation_view(report: dict[str, Any]) -> Group:
    """LoadGen runs: verdict, reasons, LoadGen's numbers and the client's."""
    parts: list[Any] = [Text(f"{report['target']}: LoadGen logs in {report['outdir']}")]
    for run in report["runs"]:
        style = "bold green" if run["result"] == "VALID" else "bold red"
        rate = f" at {run['spec']['target_qps']:g} qps" if run["scenario"] != "SingleStream" else ""
        counts = f" ({run['succeeded']} of {run['queries']} queries succeeded)"
        parts.append(Text(f"{run['scenario']}{rate}: {run['result']}{counts}", style=style))
        parts.extend(Text(f"  - {reason}") for reason in run["reasons"])
        if run["note"]:
            parts.append(Text(f"  note: {run['note']}", style="yellow"))
        table = Table(
            title=None if run["latency_evidence"] else "not latency evidence", title_justify="left"
        )
        table.add_column("LoadGen")
        table.add_column("value", justify="right")
        for key, value in run["loadgen"].items():
            table.add_row(
                key,
                "-"
                if value is None
                else f"{value:.1f}"
                if isinstance(value, float)
                else str(value),
            )
        parts.append(table)
    if report.get("peak_qps") is not None:
        parts.append(
            Text(f"highest VALID Server rate found: {report['peak_qps']:g} qps", style="bold")
        )
    return Group(*parts)


def proxy_view(report: dict[str, Any]) -> Group:
    """Direct vs proxy: the two summaries and the verdict."""
    style = "bold red" if report["buffering_suspected"] or report["truncated"] else "bold green"
    return Group(
        summary_table(report["direct"]["summary"], title="direct"),
        summary_table(report["via"]["summary"], title="through the proxy"),
        Text(report["verdict"], style=style),
    )


def nginx_config_view(report: dict[str, Any]) -> Group:
    """Every proxied location's effective values, then the findings with their directive."""
    table = Table(title="proxied locations", title_justify="left")
    for column in (
        "where",
        "location",
        "buffering",
        "X-Accel",
        "read/connect s",
        "http ver",
        "gzip SSE",
    ):
        table.add_column(column)
    for loc in report["locations"]:
        table.add_row(
            f"{loc['file']}:{loc['line']}", loc["path"], f"{loc['proxy_buffering']} ({loc['proxy_buffering_from']})",
            "ignored" if loc["ignores_x_accel_buffering"] else "honoured",
            f"{_seconds(loc['proxy_read_timeout_s'])}/{_seconds(loc['proxy_connect_timeout_s'])}",
            _with_source(loc["proxy_http_version"], loc.get("proxy_http_version_from")),
            "yes" if loc["gzip_event_stream"] else "no",
        )  # fmt: skip
    parts: list[Any] = [table]
    for f in report["findings"]:
        parts.append(Text(f"{f['file']}:{f['line']} {f['code']} {f['severity']} ({f['cause']}) {f['location']}: "
                          f"{f['message']}\n    change: {f['directive']}"))  # fmt: skip
    if not report["findings"]:
        parts.append(Text("no findings", style="green"))
    for error in report.get("errors", []):
        parts.append(
            Text(f"error: {error['error']} (included from {error['included_from']})", style="red")
        )
    for note in report.get("notes", []):
        parts.append(Text(f"note: {note}"))
    return Group(*parts)


def _with_source(value: str | None, source: str | None) -> str:
    """A value and, when nginx's default, that it is one."""
    if value is None:
        return "?"
    return f"{value} (default)" if source == "default" else value


def fleet_view(report: dict[str, Any]) -> Group:
    """Every replica over the window (percentiles with their buckets), then who differs and why."""
    table = Table(
        title=f"fleet over the last {report['window']} ({report['replica_count']} replicas, "
        f"{report['prometheus']})", title_justify="left",
    )  # fmt: skip
    for column in ("replica", "share", "waiting avg/max", "preempt", "KV peak", "TTFT p95",
                   "ITL p95", "queue p95"):  # fmt: skip
        table.add_column(column)

    def bucket(histogram: dict[str, Any]) -> str:
        p95 = histogram.get("p95")
        return p95["text"].removeprefix("p95 ") if p95 else "-"

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
            causes = f" -> {', '.join(r['causes'])}" if r["causes"] else ""
            why = "; ".join(d["text"] for d in r["differs"])
            parts.append(Text(f"{r['instance']} differs{causes}: {why}"))
    look_at = report["look_at"]
    if look_at:
        where = look_at["url"] or "its URL is unknown to Prometheus' targets"
        parts.append(Text(f"look at {look_at['instance']} ({where})", style="bold"))
    else:
        parts.append(Text("no replica differs from the rest", style="green"))
    for down in report["targets_down"]:
        parts.append(Text(f"target {down} is down in Prometheus", style="yellow"))
    if report.get("note"):
        parts.append(Text(report["note"], style="yellow"))
    return Group(*parts)


def replicas_view(report: dict[str, Any]) -> Group:
    """Every replica measured directly, the balancer's share of requests, then what is wrong."""
    via = report.get("balancer_round") or {}
    shares = via.get("shares") or {}
    table = Table(title=f"replicas from {report['source']}", title_justify="left")
    for column in (
        "replica",
        "TTFT p50",
        "TPOT p50",
        "waiting max",
        "preempt",
        "share via balancer",
    ):
        table.add_column(column)

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
            parts.append(Text(f"{r['url']}: {r['error']}", style="yellow"))
    if via:
        parts.append(Text(f"through the balancer {report['balancer']}: TTFT p50 "
                          f"{ms(via.get('steady'), 'ttft_p50')}, TPOT p50 "
                          f"{ms(via.get('steady'), 'tpot_p50')}"))  # fmt: skip
    for cause, text in report["evidence"].items():
        parts.append(Text(f"{cause}: {text}", style="bold red"))
    if not report["causes"]:
        parts.append(Text("no replica is slower than the others; the balancer spreads the load",
                          style="green"))  # fmt: skip
    return Group(*parts)
