"""One streamed request, as the client saw it: timestamps (monotonic ns) and counts, and the
latencies they give (TTFT, TPOT, gaps). The stream probe fills it; the SSE parser adds to it."""

from __future__ import annotations

import itertools
from array import array
from dataclasses import dataclass, field
from typing import Any


@dataclass
class StreamSample:
    """Timestamps (monotonic ns) and counts of one streamed request.

    ``send_ns`` is when the client began the request; ``wire_ns`` when its first byte left and
    ``body_write_ns`` its body (the origin of every latency); the ``*_started_ns`` / ``*_ns``
    pairs bracket connect and TLS.
    """

    send_ns: int
    status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    request_id: str | None = None
    first_trace_ns: int | None = None
    connect_started_ns: int | None = None
    connected_ns: int | None = None
    tls_started_ns: int | None = None
    tls_done_ns: int | None = None
    wire_ns: int | None = None
    body_write_ns: int | None = None
    request_sent_ns: int | None = None
    headers_ns: int | None = None
    done_ns: int | None = None
    saw_done: bool = False
    # Per output event, and per network read that completed any: compact arrays (8 bytes an
    # entry, not a Python int's 36), as a long stream has thousands.
    output_times_ns: array[int] = field(default_factory=lambda: array("q"))
    output_event_tokens: array[int] = field(default_factory=lambda: array("q"))
    read_events: array[int] = field(default_factory=lambda: array("q"))
    events: int = 0  # data events of every kind (the flood bound counts them)
    usage_tokens: int | None = None
    finish_reason: str | None = None
    keep_alives: int = 0
    malformed_events: int = 0
    # How the body came (gzip from a proxy compressing the event stream is evidence of LAT002).
    content_encoding: str | None = None

    @property
    def ok(self) -> bool:
        """True when the request streamed to ``[DONE]`` without an error."""
        return self.error_kind is None

    @property
    def output_tokens(self) -> int:
        """Output tokens: from usage when the server sent it, else the number of output events."""
        if self.usage_tokens is not None:
            return self.usage_tokens
        return len(self.output_times_ns)

    @property
    def tokens_estimated(self) -> bool:
        """True when the server sent no usage and the count is the number of output events."""
        return self.usage_tokens is None

    @property
    def origin_ns(self) -> int:
        """Where latencies start: the request written out (the request start if never traced)."""
        for ns in (self.body_write_ns, self.wire_ns):
            if ns is not None:
                return ns
        return self.send_ns

    @property
    def cold(self) -> bool:
        """True when this request opened its connection (its own connect and TLS, a fresh server side)."""
        return self.connect_started_ns is not None

    @property
    def ttft_ms(self) -> float | None:
        """Send (the request written out) -> first output event."""
        return _ms(self.output_times_ns[0] - self.origin_ns) if self.output_times_ns else None

    @property
    def e2e_ms(self) -> float | None:
        """Send (the request written out) -> last output event."""
        return _ms(self.output_times_ns[-1] - self.origin_ns) if self.output_times_ns else None

    @property
    def pool_wait_ms(self) -> float | None:
        """Request start -> the pool handed over a connection (its first traced step)."""
        return _span_ms(self.send_ns, self.first_trace_ns)

    @property
    def connect_ms(self) -> float | None:
        """The TCP connect alone; None on a reused connection."""
        return _span_ms(self.connect_started_ns, self.connected_ns)

    @property
    def tls_ms(self) -> float | None:
        """The TLS handshake alone; None without TLS or on a reused connection."""
        return _span_ms(self.tls_started_ns, self.tls_done_ns)

    @property
    def send_delay_ms(self) -> float | None:
        """Request start -> request written out, less connect and TLS: the client's own delay."""
        total = _span_ms(self.send_ns, self.body_write_ns)
        if total is None:
            return None
        return total - (self.connect_ms or 0.0) - (self.tls_ms or 0.0)

    @property
    def tpot_ms(self) -> float | None:
        """(last output - first output) / (output tokens - 1); None with fewer than 2 tokens."""
        if len(self.output_times_ns) < 1 or self.output_tokens < 2:
            return None
        return _ms(self.output_times_ns[-1] - self.output_times_ns[0]) / (self.output_tokens - 1)

    @property
    def itl_ms(self) -> list[float]:
        """Gaps between consecutive output events."""
        times = self.output_times_ns
        return [_ms(b - a) for a, b in itertools.pairwise(times)]

    @property
    def itl_per_token_ms(self) -> list[float] | None:
        """Each event gap spread over the tokens the later event carried; None when counts are unknown."""
        counts = self.output_event_tokens
        if not counts or any(count < 1 for count in counts):
            return None
        return [
            gap / count
            for gap, count in zip(self.itl_ms, counts[1:], strict=True)
            for _ in range(count)
        ]

    @property
    def max_events_per_read(self) -> int:
        """The largest number of output events that arrived in one network read."""
        return max(self.read_events, default=0)

    def since_send_ms(self, ns: int | None) -> float | None:
        """Milliseconds from send (the request written out) to ``ns``."""
        return _ms(ns - self.origin_ns) if ns is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of one sample (design §5 contract keys first)."""
        return {
            "ttft_ms": self.ttft_ms,
            "tpot_ms": self.tpot_ms,
            "e2e_ms": self.e2e_ms,
            "itl_ms": self.itl_ms,
            "output_tokens": self.output_tokens,
            "output_tokens_estimated": self.tokens_estimated,
            "output_events": len(self.output_times_ns),
            "error": self.error,
            "error_kind": self.error_kind,
            "status": self.status,
            "finish_reason": self.finish_reason,
            "request_id": self.request_id,
            "itl_per_token_ms": self.itl_per_token_ms,
            "connect_ms": self.connect_ms,
            "tls_ms": self.tls_ms,
            "pool_wait_ms": self.pool_wait_ms,
            "send_delay_ms": self.send_delay_ms,
            "cold": self.cold,
            "request_sent_ms": self.since_send_ms(self.request_sent_ns),
            "headers_ms": self.since_send_ms(self.headers_ns),
            "max_events_per_read": self.max_events_per_read,
            "keep_alives": self.keep_alives,
            "malformed_events": self.malformed_events,
            "content_encoding": self.content_encoding,
        }


def _ms(ns: int) -> float:
    return ns / 1_000_000


def _span_ms(start_ns: int | None, end_ns: int | None) -> float | None:
    return _ms(end_ns - start_ns) if start_ns is not None and end_ns is not None else None
