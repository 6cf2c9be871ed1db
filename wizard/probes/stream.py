"""The streaming probe: one streamed generation request, timed event by event.

Definitions (named here because peer tools disagree, see docs/measurement.md):
- TTFT: send -> first SSE event that carries output (content, reasoning or a tool-call delta).
  The role-only first chat chunk and usage-only chunks never count.
- TPOT: (last output event - first output event) / (output tokens - 1).
- ITL: each gap between consecutive output events (an event may carry several tokens).
- E2E: send -> last output event (the usage chunk and ``[DONE]`` are not output).
Output tokens come from ``usage`` (the probe asks for ``stream_options.include_usage``); without it
the probe counts output events and marks the count as an estimate. It never reports the requested
length as the output length.

Errors are data: every failure becomes a sample with ``error_kind`` and a one-line ``error``.
"""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

Endpoint = Literal["chat", "completions"]
ENDPOINT_PATHS: dict[str, str] = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


@dataclass(frozen=True)
class RequestSpec:
    """What to send: a fixed-length, greedy request so that runs compare."""

    model: str
    endpoint: Endpoint = "completions"
    input_tokens: int = 32
    max_tokens: int = 64
    ignore_eos: bool = True  # vLLM-specific: generate exactly max_tokens
    temperature: float = 0.0
    prompt: str | None = None

    def body(self) -> dict[str, Any]:
        """The JSON body of the request."""
        prompt = self.prompt if self.prompt is not None else " ".join(["word"] * self.input_tokens)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body


@dataclass
class StreamSample:
    """Timestamps (monotonic ns) and counts of one streamed request."""

    send_ns: int
    status: int | None = None
    error_kind: str | None = None
    error: str | None = None
    request_id: str | None = None
    connected_ns: int | None = None
    request_sent_ns: int | None = None
    headers_ns: int | None = None
    done_ns: int | None = None
    saw_done: bool = False
    output_times_ns: list[int] = field(default_factory=list)
    read_times_ns: list[int] = field(default_factory=list)
    read_events: list[int] = field(default_factory=list)
    usage_tokens: int | None = None
    finish_reason: str | None = None
    keep_alives: int = 0
    malformed_events: int = 0

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
    def ttft_ms(self) -> float | None:
        """Send -> first output event."""
        return _ms(self.output_times_ns[0] - self.send_ns) if self.output_times_ns else None

    @property
    def e2e_ms(self) -> float | None:
        """Send -> last output event."""
        return _ms(self.output_times_ns[-1] - self.send_ns) if self.output_times_ns else None

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
    def max_events_per_read(self) -> int:
        """The largest number of output events that arrived in one network read."""
        return max(self.read_events, default=0)

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
            "headers_ms": _ms(self.headers_ns - self.send_ns) if self.headers_ns else None,
            "connect_ms": _ms(self.connected_ns - self.send_ns) if self.connected_ns else None,
            "max_events_per_read": self.max_events_per_read,
            "keep_alives": self.keep_alives,
            "malformed_events": self.malformed_events,
        }


def _ms(ns: int) -> float:
    return ns / 1_000_000


class _SseParser:
    """Splits a byte stream into SSE events and classifies each one into the sample."""

    def __init__(self, sample: StreamSample) -> None:
        self.sample = sample
        self._buffer = b""

    def feed(self, data: bytes, now: int) -> int:
        """Consume one network read; return how many output events it completed."""
        self._buffer += data.replace(b"\r\n", b"\n")
        outputs = 0
        while b"\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            outputs += self._event(raw, now)
        return outputs

    @property
    def leftover(self) -> bytes:
        """Bytes of an event that never completed (a body cut short)."""
        return self._buffer.strip()

    def _event(self, raw: bytes, now: int) -> int:
        data_lines = []
        for line in raw.split(b"\n"):
            if line.startswith(b":"):
                self.sample.keep_alives += 1
            elif line.startswith(b"data:"):
                data_lines.append(line[5:].strip())
            elif line.strip():
                self.sample.malformed_events += 1
        if not data_lines:
            return 0
        data = b"\n".join(data_lines)
        if data == b"[DONE]":
            self.sample.saw_done = True
            return 0
        try:
            payload = json.loads(data)
        except (UnicodeDecodeError, json.JSONDecodeError):
            self.sample.malformed_events += 1
            return 0
        if not isinstance(payload, dict):
            self.sample.malformed_events += 1
            return 0
        return self._payload(payload, now)

    def _payload(self, payload: dict[str, Any], now: int) -> int:
        sample = self.sample
        if "error" in payload:
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else str(error)
            sample.error_kind = sample.error_kind or "stream_error"
            sample.error = sample.error or f"error event in stream: {message}"
            return 0
        sample.request_id = sample.request_id or payload.get("id")
        usage = payload.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            sample.usage_tokens = usage["completion_tokens"]
        choices = payload.get("choices") or []
        output = False
        for choice in choices:
            if not isinstance(choice, dict):
                continue
            if choice.get("finish_reason"):
                sample.finish_reason = choice["finish_reason"]
            if _carries_output(choice):
                output = True
        if not output:
            return 0
        sample.output_times_ns.append(now)
        return 1


def _carries_output(choice: dict[str, Any]) -> bool:
    """True for content, reasoning or tool-call output; false for the role-only chat chunk."""
    text = choice.get("text")
    if isinstance(text, str) and text:
        return True
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return False
    for key in ("content", "reasoning", "reasoning_content"):
        value = delta.get(key)
        if isinstance(value, str) and value:
            return True
    return bool(delta.get("tool_calls"))


async def measure_stream(
    client: httpx.AsyncClient,
    base_url: str,
    spec: RequestSpec,
    headers: dict[str, str] | None = None,
) -> StreamSample:
    """Send one streamed request and time it; every failure is returned as a sample."""
    sample = StreamSample(send_ns=time.monotonic_ns())

    async def trace(event: str, info: dict[str, Any]) -> None:
        now = time.monotonic_ns()
        if event == "connection.connect_tcp.complete":
            sample.connected_ns = now
        elif event == "http11.send_request_body.complete":
            sample.request_sent_ns = now

    url = base_url.rstrip("/") + ENDPOINT_PATHS[spec.endpoint]
    parser = _SseParser(sample)
    try:
        async with client.stream(
            "POST", url, json=spec.body(), headers=headers, extensions={"trace": trace}
        ) as response:
            sample.headers_ns = time.monotonic_ns()
            sample.status = response.status_code
            if response.status_code >= 400:
                body = (await response.aread())[:300].decode("utf-8", "replace")
                sample.error_kind = f"http_{response.status_code}"
                sample.error = f"HTTP {response.status_code}: {_error_message(body)}"
                return sample
            async for data in response.aiter_raw():
                now = time.monotonic_ns()
                sample.read_times_ns.append(now)
                sample.read_events.append(parser.feed(data, now))
    except httpx.ConnectError as exc:
        sample.error_kind, sample.error = "connection_refused", f"cannot connect to {url}: {exc}"
    except httpx.ReadTimeout:
        sample.error_kind, sample.error = (
            "read_timeout",
            f"no data from {url} within the read timeout",
        )
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        sample.error_kind, sample.error = (
            "connection_reset",
            f"connection broke mid-response: {exc}",
        )
    except httpx.HTTPError as exc:
        sample.error_kind, sample.error = "http_error", f"{type(exc).__name__}: {exc}"
    sample.done_ns = time.monotonic_ns()
    if sample.error_kind is None and not sample.saw_done:
        sample.error_kind = "truncated"
        sample.error = "stream ended without [DONE] (body cut short)"
    return sample


def _error_message(body: str) -> str:
    """The message inside vLLM's error bodies (nested, flat or 401), else the raw text."""
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return body.strip().splitlines()[0] if body.strip() else "(empty body)"
    if isinstance(payload, dict):
        error = payload.get("error", payload.get("message"))
        if isinstance(error, dict):
            return str(error.get("message", error))
        if error is not None:
            return str(error)
    return body.strip()


def stream_report(samples: list[StreamSample]) -> dict[str, Any]:
    """The ``probe stream --json`` object: samples, percentiles over successful ones, error counts."""
    from wizard.measure import summarize

    ok = [s for s in samples if s.ok]
    errors: dict[str, int] = {}
    for sample in samples:
        if sample.error_kind:
            errors[sample.error_kind] = errors.get(sample.error_kind, 0) + 1
    return {
        "samples": [s.to_dict() for s in samples],
        "summary": {
            "ttft_ms": summarize([s.ttft_ms for s in ok if s.ttft_ms is not None]),
            "tpot_ms": summarize([s.tpot_ms for s in ok if s.tpot_ms is not None]),
            "itl_ms": summarize([gap for s in ok for gap in s.itl_ms]),
            "e2e_ms": summarize([s.e2e_ms for s in ok if s.e2e_ms is not None]),
            "requests": len(samples),
            "succeeded": len(ok),
            "errors": errors,
            "output_tokens_estimated": any(s.tokens_estimated for s in ok),
        },
        "definitions": DEFINITIONS,
    }


DEFINITIONS = {
    "ttft_ms": "send -> first SSE event carrying output (role-only and usage-only chunks excluded)",
    "tpot_ms": "(last output event - first output event) / (output tokens - 1)",
    "itl_ms": "gaps between consecutive output events (an event may carry several tokens)",
    "e2e_ms": "send -> last output event",
    "output_tokens": "usage.completion_tokens; else output events, flagged output_tokens_estimated",
}
