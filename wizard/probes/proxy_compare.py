"""The direct-vs-proxy signature: the same streamed request both ways, and what the proxy did.

A buffering proxy inflates TTFT by about (buffer bytes / event bytes) x ITL, delivers many events
per network read, and holds even the response headers until the first burst. gzip on an event
stream with buffering holds the whole stream (TTFT ~ E2E). A read timeout mid-stream shows as
status 200 with a cut body, never as a 504.
"""

from __future__ import annotations

from typing import Any

import httpx

from wizard.probes.stream import RequestSpec, StreamSample, measure_stream, stream_report

BURST_EVENTS = 4
INFLATION_MS = 20.0


async def compare_paths(
    direct: str, via: str, spec: RequestSpec, *, repeat: int = 3, headers: dict[str, str] | None = None,
    timeout_s: float = 60.0,
) -> dict[str, Any]:  # fmt: skip
    """Measure ``repeat`` requests direct, then the same through the proxy; judge the difference."""
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s, connect=10.0)) as client:
        direct_samples = [
            await measure_stream(client, direct, spec, headers) for _ in range(repeat)
        ]
        via_samples = [await measure_stream(client, via, spec, headers) for _ in range(repeat)]
    return judge(stream_report(direct_samples), stream_report(via_samples), via_samples)


def judge(
    direct: dict[str, Any], via: dict[str, Any], via_samples: list[StreamSample]
) -> dict[str, Any]:
    """The verdict fields of ``probe proxy --json``."""
    d, v = direct["summary"], via["summary"]
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
    e2e = v["e2e_ms"]["p50"]
    whole_stream = bool(
        v_ttft is not None
        and e2e is not None
        and v_ttft > 0.9 * e2e
        and events_per_read > BURST_EVENTS
    )
    buffering = bool(
        inflation is not None and inflation > INFLATION_MS and events_per_read >= BURST_EVENTS
    )
    if truncated:
        verdict = (
            "the proxy cuts streams (status 200, no [DONE]): a read timeout shorter than a silence"
        )
    elif whole_stream:
        verdict = "the proxy holds the whole stream: gzip on text/event-stream with buffering on"
    elif buffering:
        verdict = (
            f"the proxy buffers: TTFT +{inflation:.0f} ms, up to {events_per_read} events per read"
        )
    else:
        verdict = "the proxy passes events through as they come"
    return {
        "direct": direct, "via": via,
        "buffering_suspected": buffering or whole_stream,
        "whole_stream_held": whole_stream,
        "ttft_inflation_ms": inflation,
        "max_events_per_read_via": events_per_read,
        "headers_delayed": headers_delayed,
        "truncated": truncated,
        "verdict": verdict,
    }  # fmt: skip
