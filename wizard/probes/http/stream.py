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

"Send" is the moment the whole request has left: its body handed to the socket (httpcore's trace
of the body write starting: anyio writes at once and yields to the loop only after the write, so
the write's "complete" comes a loop turn late under load), the point from which a server can start (vLLM's own TTFT starts when it
has the body). Not the moment the client began the request: waiting for a pooled connection,
connecting, TLS, and building and writing the request (h11 takes 0.5 ms for it on the reference
machine) are the client's and the network's, reported apart (``pool_wait_ms``, ``connect_ms``,
``tls_ms``, ``send_delay_ms``), never inside TTFT or E2E. A sample is ``cold`` when
it opened its own connection.

Errors are data: every failure becomes a sample with ``error_kind`` and a one-line ``error``.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import secrets
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import httpx

from wizard.probes.http.bounded import request_deadline_s
from wizard.probes.http.lean_http import open_stream
from wizard.probes.http.protocol_backend import arrival_clock
from wizard.probes.http.reach import explain
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.sse import OversizedEventError, OversizedStreamError, SseParser
from wizard.record import safejson

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
    continuous_usage: bool = True  # vLLM-specific: usage on every chunk gives tokens per event
    # Every request's own words begin with a word of its own (no prefix cache serves it).
    distinct: bool = False
    # Words every request of the round shares first (a system prompt), beginning with round_tag.
    shared_prefix_tokens: int = 0
    round_tag: str = ""
    # The incident's own body (``run --request-body``): its fields are sent as given; with
    # ``replay_prompt`` its prompt too (else the round's own synthetic prompt replaces it).
    template: dict[str, Any] | None = field(default=None, compare=False)
    replay_prompt: bool = False
    # The replayed prompt's per-request part (``prompt_shape.VaryingPart``): each request carries
    # a fresh value of it, where it stands or (``varying_at_end``) after the whole prompt; no
    # word of its own then, so the prefix cache sees the prompt's shape and nothing else.
    varying: Any = field(default=None, compare=False)
    varying_at_end: bool = False

    @property
    def output_limit(self) -> int | None:
        """The most output tokens the request asks for (None: a replayed body that sets none)."""
        if self.template is not None and self.replay_prompt:
            limit = self.template.get("max_completion_tokens", self.template.get("max_tokens"))
            return limit if isinstance(limit, int) and not isinstance(limit, bool) else None
        return self.max_tokens

    @property
    def choices(self) -> int:
        """The choices each request asks for: a replayed body's ``n``, else one."""
        n = (self.template or {}).get("n", 1)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 1

    def synthetic_prompt(self) -> str:
        """``input_tokens`` filler words, shaped by ``distinct`` and the shared prefix."""
        words = ["word"] * self.input_tokens
        if self.shared_prefix_tokens and self.round_tag:
            words[0] = self.round_tag
        own = min(self.shared_prefix_tokens, self.input_tokens - 1)
        if self.distinct and own >= 0:
            words[own] = secrets.token_hex(4)
        return " ".join(words)

    def body(self) -> dict[str, Any]:
        """The JSON body of the request."""
        if self.template is not None:
            return self._replayed()
        prompt = self.prompt if self.prompt is not None else self.synthetic_prompt()
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": True,
            "stream_options": {
                "include_usage": True,
                "continuous_usage_stats": self.continuous_usage,
            },
        }
        if self.ignore_eos:
            body["ignore_eos"] = True
        if self.endpoint == "chat":
            body["messages"] = [{"role": "user", "content": prompt}]
        else:
            body["prompt"] = prompt
        return body

    def _replayed(self) -> dict[str, Any]:
        """The incident's body: streamed with usage (to time and count), its prompt begun with a
        word of its own when ``distinct``, or the round's synthetic prompt in its place."""
        body = copy.deepcopy(self.template or {})
        own = secrets.token_hex(4) + " " if self.distinct else ""
        if self.varying is not None and self.replay_prompt:
            from wizard.prompt_shape import with_fresh_part

            body, own = with_fresh_part(body, self.varying, self.varying_at_end), ""
        if not self.replay_prompt:
            body.pop("max_completion_tokens", None)
            body["max_tokens"] = self.max_tokens
            body.pop("prompt" if self.endpoint == "chat" else "messages", None)
            if self.endpoint == "chat":
                body["messages"] = [{"role": "user", "content": self.synthetic_prompt()}]
            else:
                body["prompt"] = self.synthetic_prompt()
        elif isinstance(body.get("prompt"), str):
            body["prompt"] = own + body["prompt"]
        else:
            _begin_messages_with(body.get("messages"), own)
        body.setdefault("model", self.model)
        body["stream"] = True
        options = body.get("stream_options")
        body["stream_options"] = {
            **(options if isinstance(options, dict) else {}),
            "include_usage": True,
            "continuous_usage_stats": self.continuous_usage,
        }
        return body


def _begin_messages_with(messages: Any, word: str) -> None:
    """Put ``word`` before the first message's text (a string, or its first text part)."""
    if not word or not isinstance(messages, list) or not messages:
        return
    first = messages[0]
    if not isinstance(first, dict):
        return
    content = first.get("content")
    if isinstance(content, str):
        first["content"] = word + content
    elif isinstance(content, list):
        part = next((p for p in content if isinstance(p, dict) and p.get("type") == "text"), None)
        if part is not None and isinstance(part.get("text"), str):
            part["text"] = word + part["text"]


# httpcore's trace events, by what they stamp on a sample.
_TRACE_FIELDS = {
    "connection.connect_tcp.started": "connect_started_ns",
    "connection.connect_tcp.complete": "connected_ns",
    "connection.start_tls.started": "tls_started_ns",
    "connection.start_tls.complete": "tls_done_ns",
    "http11.send_request_headers.started": "wire_ns",
    "http2.send_request_headers.started": "wire_ns",
    "http11.send_request_body.started": "body_write_ns",
    "http2.send_request_body.started": "body_write_ns",
    "http11.send_request_body.complete": "request_sent_ns",
    "http2.send_request_body.complete": "request_sent_ns",
}


async def measure_stream(
    client: httpx.AsyncClient,
    base_url: str,
    spec: RequestSpec,
    headers: dict[str, str] | None = None,
    on_first_output: Callable[[], None] | None = None,
) -> StreamSample:
    """Send one streamed request and time it; every failure is returned as a sample.

    ``on_first_output`` runs the moment the first output event is parsed (MLPerf LoadGen's
    ``FirstTokenComplete`` hook).
    """
    await prepare(base_url)
    url = base_url.rstrip("/") + ENDPOINT_PATHS[spec.endpoint]
    body = spec.body()
    sample = StreamSample(send_ns=time.monotonic_ns())

    async def trace(event: str, info: dict[str, Any]) -> None:
        # The lean path hands over when the loop saw a step done, where it knows it (``when_ns``).
        now = info.get("when_ns") or time.monotonic_ns()
        if sample.first_trace_ns is None:
            sample.first_trace_ns = now
        name = _TRACE_FIELDS.get(event)
        if name is not None:
            setattr(sample, name, now)

    deadline_s = request_deadline_s(client)
    parser = SseParser(sample, on_first_output, spec.output_limit, spec.choices, deadline_s)
    try:
        async with (
            asyncio.timeout(deadline_s),
            open_stream(
                client,
                client.build_request(
                    "POST", url, json=body, headers=headers, extensions={"trace": trace}
                ),
            ) as response,
        ):
            sample.headers_ns = time.monotonic_ns()
            sample.status = response.status_code
            sample.content_encoding = response.headers.get("content-encoding")
            if response.status_code >= 400:
                text = (await response.aread())[:300].decode("utf-8", "replace")
                sample.error_kind = f"http_{response.status_code}"
                sample.error = f"HTTP {response.status_code}: {_error_message(text)}"
                return sample
            # Decoded bytes, one chunk per network read (a gzip-encoded stream is decompressed),
            # stamped when they arrived where the connection knows it (the timing client's).
            clock = arrival_clock(response)
            async for data in response.aiter_bytes():
                if outputs := parser.feed(data, clock()):
                    sample.read_events.append(outputs)
    except TimeoutError:
        sample.error_kind = "deadline"
        sample.error = f"no complete response from {url} within its {deadline_s:g} s deadline"
    except OversizedEventError as exc:
        sample.error_kind, sample.error = "oversized_event", f"{url} sent {exc}"
    except OversizedStreamError as exc:
        sample.error_kind, sample.error = "oversized_stream", f"{url} sent {exc}: stopped"
    except httpx.ConnectError as exc:
        sample.error_kind = "connection_refused"
        sample.error = f"cannot connect to {url}: {explain(exc, url)}"
    except httpx.ReadTimeout:
        sample.error_kind, sample.error = (
            "read_timeout",
            f"no data from {url} within the read timeout",
        )
    except httpx.RemoteProtocolError as exc:
        if sample.status is not None:
            # Headers came, then the body stopped without its end: what a proxy read timeout
            # mid-stream looks like (status 200, never a 504).
            sample.error_kind = "truncated"
            sample.error = f"body cut short after status {sample.status}: {exc}"
        else:
            sample.error_kind, sample.error = "connection_reset", f"{url}: {explain(exc, url)}"
    except httpx.ReadError as exc:
        sample.error_kind = "connection_reset"
        sample.error = (
            f"connection broke mid-response: {exc}"
            if sample.status
            else f"{url}: {explain(exc, url)}"
        )
    except httpx.HTTPError as exc:
        sample.error_kind, sample.error = "http_error", f"{url}: {explain(exc, url)}"
    sample.done_ns = time.monotonic_ns()
    if sample.error_kind is None and not sample.saw_done:
        sample.error_kind = "truncated"
        sample.error = "stream ended without [DONE] (body cut short)"
    elif sample.error_kind is None and sample.malformed_events:
        # Events that are no completion chunk make the response no valid completion: its
        # tokens and times cannot be trusted, and LoadGen must not count it as answered.
        sample.error_kind = "malformed"
        sample.error = (
            f"{url} sent {sample.malformed_events} event(s) that are no completion chunk; "
            f"the first: {parser.first_malformed}"
        )
    return sample


# Event loops whose one-time costs are paid (a new loop has a new resolver thread pool).
_prepared: weakref.WeakSet[asyncio.AbstractEventLoop] = weakref.WeakSet()


async def prepare(url: str) -> None:
    """Pay the client's one-time costs before any request is stamped.

    httpcore picks its network backend on the first connect, and anyio then imports its asyncio
    backend (18-35 ms); the first name lookup starts the loop's resolver threads (~1.5 ms). Both
    would otherwise land inside the first request's connect.
    """
    loop = asyncio.get_running_loop()
    if loop in _prepared:
        return
    await anyio.sleep(0)
    parsed = httpx.URL(url)
    with contextlib.suppress(OSError):  # an unknown host fails later, as the request's own error
        await loop.getaddrinfo(parsed.host, parsed.port or 0)
    _prepared.add(loop)


def _error_message(body: str) -> str:
    """The message inside vLLM's error bodies (nested, flat or 401), else the raw text."""
    try:
        payload = safejson.loads(body)
    except ValueError:
        return body.strip().splitlines()[0] if body.strip() else "(empty body)"
    if isinstance(payload, dict):
        error = payload.get("error", payload.get("message"))
        if isinstance(error, dict):
            return str(error.get("message", error))
        if error is not None:
            return str(error)
    return body.strip()


def first_error(report: dict[str, Any]) -> str | None:
    """The first failed request's kind and message in a stream report (``kind: message``)."""
    for sample in report["samples"]:
        if sample.get("error_kind"):
            message = sample.get("error")
            return f"{sample['error_kind']}: {message}" if message else str(sample["error_kind"])
    return None


def stream_report(samples: list[StreamSample]) -> dict[str, Any]:
    """The ``probe stream --json`` object: samples, percentiles over successful ones, error counts."""
    from wizard.measure import summarize

    ok = [s for s in samples if s.ok]
    errors: dict[str, int] = {}
    for sample in samples:
        if sample.error_kind:
            errors[sample.error_kind] = errors.get(sample.error_kind, 0) + 1
    per_token = [s.itl_per_token_ms for s in ok]
    return {
        "samples": [s.to_dict() for s in samples],
        "summary": {
            "ttft_ms": summarize([s.ttft_ms for s in ok if s.ttft_ms is not None]),
            "tpot_ms": summarize([s.tpot_ms for s in ok if s.tpot_ms is not None]),
            "itl_ms": summarize([gap for s in ok for gap in s.itl_ms]),
            "itl_basis": "event",
            "itl_per_token_ms": (
                summarize([gap for gaps in per_token if gaps for gap in gaps])
                if ok and all(gaps is not None for gaps in per_token)
                else None
            ),
            "e2e_ms": summarize([s.e2e_ms for s in ok if s.e2e_ms is not None]),
            "requests": len(samples),
            "succeeded": len(ok),
            "errors": errors,
            "output_tokens_estimated": any(s.tokens_estimated for s in ok),
            "burst": burst_evidence(ok),
        },
        "definitions": DEFINITIONS,
    }


GAP_BINS_MS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def burst_evidence(samples: list[StreamSample]) -> dict[str, Any]:
    """What a buffering proxy leaves behind: several events per read, bimodal gaps, late headers."""
    from wizard.measure import percentile, summarize

    reads = [n for s in samples for n in s.read_events if n > 0]
    histogram = dict.fromkeys([f"<{edge}" for edge in GAP_BINS_MS] + [f">={GAP_BINS_MS[-1]}"], 0)
    for gap in (gap for s in samples for gap in s.itl_ms):
        label = next((f"<{edge}" for edge in GAP_BINS_MS if gap < edge), f">={GAP_BINS_MS[-1]}")
        histogram[label] += 1
    headers = [s.since_send_ms(s.headers_ns) for s in samples]
    return {
        "max_events_per_read": max(reads, default=0),
        "mean_events_per_read": sum(reads) / len(reads) if reads else None,
        # A buffer makes the typical read carry many events; a client or proxy that was kept off
        # the CPU for a moment makes a few reads carry many. The median tells the two apart.
        "p50_events_per_read": percentile(reads, 50),
        "headers_ms": summarize([h for h in headers if h is not None]),
        "first_output_after_headers_ms": summarize(
            [
                (s.output_times_ns[0] - s.headers_ns) / 1e6
                for s in samples
                if s.output_times_ns and s.headers_ns is not None
            ]
        ),
        "gap_histogram_ms": histogram,
        "content_encodings": sorted({s.content_encoding for s in samples if s.content_encoding}),
    }


DEFINITIONS = {
    "ttft_ms": "send -> first SSE event carrying output (role-only and usage-only chunks excluded)",
    "tpot_ms": "(last output event - first output event) / (output tokens - 1)",
    "itl_ms": "gaps between consecutive output events (an event may carry several tokens)",
    "itl_per_token_ms": "each event gap divided among the tokens that event carried (needs usage per chunk)",
    "e2e_ms": "send -> last output event",
    "output_tokens": "usage.completion_tokens; else output events, flagged output_tokens_estimated",
}
