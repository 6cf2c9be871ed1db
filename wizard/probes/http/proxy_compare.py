"""The direct-vs-proxy signature: the same streamed request both ways, and what the proxy did.

A buffering proxy delivers many events per network read where the direct path delivers them one
by one, inflates TTFT by about (buffer bytes / event bytes) x ITL, and can hold even the response
headers until the first burst. Bursts through the proxy prove nothing on their own: a fast server
can deliver a whole answer in one read on the direct path too, so the verdict needs the direct
path smooth and the proxied one bursty (``proxy_bursts``). gzip on an event stream is told by its
own evidence, the proxied response's ``Content-Encoding`` (or the config). A read timeout
mid-stream shows as status 200 with a cut body, never as a 504.
"""

from __future__ import annotations

from typing import Any

import httpx

from wizard.i18n.proxy_words import proxy_verdict
from wizard.probes.http.lean_http import timing_client
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, first_error, measure_stream, stream_report

BURST_EVENTS = 4
INFLATION_MS = 20.0
# Bursty through the proxy means at least twice the direct path's events per read: the structural
# signature of a buffer (about 18 events per 4 KB read against about one), not a tuned threshold.
BURST_RATIO = 2.0


def proxy_bursts(direct_burst: dict[str, Any], via_burst: dict[str, Any]) -> bool:
    """True when the proxied stream's typical read carries bursts the direct one does not.

    The median read, not the mean: on a busy machine a proxy or client kept off the CPU for a
    moment delivers a few reads of many events (a real vLLM behind a stock nginx on 2 cores: mean
    5.9, max 64, median 1), while a buffer makes every read a burst (median ~17).
    """
    via, direct = via_burst.get("p50_events_per_read"), direct_burst.get("p50_events_per_read")
    if via is None or direct is None:
        return False
    return bool(via >= BURST_EVENTS and via >= BURST_RATIO * max(direct, 1.0))


async def compare_paths(
    direct: str, via: str, spec: RequestSpec, *, repeat: int = 3, headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> dict[str, Any]:  # fmt: skip
    """Measure ``repeat`` requests direct, then the same through the proxy; judge the difference."""
    async with timing_client(timeout=httpx.Timeout(timeout_s, connect=10.0)) as client:
        direct_samples = [
            await measure_stream(client, direct, spec, headers) for _ in range(repeat)
        ]
        via_samples = [await measure_stream(client, via, spec, headers) for _ in range(repeat)]
    return judge(stream_report(direct_samples), stream_report(via_samples), via_samples)


def judge(
    direct: dict[str, Any], via: dict[str, Any], via_samples: list[StreamSample]
) -> dict[str, Any]:
    """The verdict fields of ``probe proxy --json``; none when a path measured nothing."""
    d, v = direct["summary"], via["summary"]
    # A proxy that cuts every stream is a verdict of its own, from the direct path's good ones.
    cut = any(s.error_kind == "truncated" for s in via_samples)
    empty = [(path, report) for path, report in (("direct", direct), ("proxy", via))
             if not report["summary"]["succeeded"] and not (path == "proxy" and cut)]  # fmt: skip
    if empty:
        path, report = empty[0]
        error = first_error(report)
        return {
            "direct": direct, "via": via, "buffering_suspected": False, "whole_stream_held": False,
            "gzip": False, "ttft_inflation_ms": None, "max_events_per_read_via": None,
            "headers_delayed": False, "truncated": False,
            "nothing_measured": {"paths": [p for p, _ in empty], "first_error": error},
            "verdict": f"nothing could be measured: every request on the {path} path failed"
            + (f" (first error: {error})" if error else ""),
        }  # fmt: skip
    d_ttft, v_ttft = d["ttft_ms"]["p50"], v["ttft_ms"]["p50"]
    inflation = v_ttft - d_ttft if d_ttft is not None and v_ttft is not None else None
    events_per_read = v["burst"]["max_events_per_read"]
    v_headers, d_headers = v["burst"]["headers_ms"]["p50"], d["burst"]["headers_ms"]["p50"]
    after_headers = v["burst"]["first_output_after_headers_ms"]["p50"]
    headers_delayed = bool(
        v_headers is not None and d_headers is not None and after_headers is not None
        and v_headers > d_headers + INFLATION_MS and after_headers < 5
    )  # fmt: skip
    truncated = any(s.error_kind == "truncated" for s in via_samples)
    bursty = proxy_bursts(d["burst"], v["burst"])
    gzip = "gzip" in v["burst"].get("content_encodings", [])
    whole_stream = bursty and gzip
    buffering = bursty and not gzip
    judged = {
        "direct": direct, "via": via,
        "buffering_suspected": buffering or whole_stream,
        "whole_stream_held": whole_stream,
        "gzip": gzip,
        "ttft_inflation_ms": inflation,
        "max_events_per_read_via": events_per_read,
        "headers_delayed": headers_delayed,
        "truncated": truncated,
        "nothing_measured": None,
    }  # fmt: skip
    # Said from the one sentence each verdict has (proxy_words), which a view says in its language.
    return {**judged, "verdict": proxy_verdict(judged, "en")}
