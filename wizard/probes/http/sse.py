"""Server-sent events from an OpenAI-compatible stream, classified into a ``StreamSample``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from wizard.record import safejson

if TYPE_CHECKING:
    from wizard.probes.http.sample import StreamSample

# vLLM's largest event is one chunk of a few hundred bytes (a tool call's arguments at most a few
# KB); an event past this is a server writing garbage, and buffering it would take all memory.
MAX_EVENT_BYTES = 1024 * 1024
MAX_MESSAGE_CHARS = 300
# The SSE fields other than data (WHATWG HTML, server-sent events): valid, and nothing to measure.
OTHER_FIELDS = (b"event:", b"id:", b"retry:")


# Events a request may bring. vLLM sends one chunk per choice per engine step, and a step adds at
# least one token to each unfinished choice, so a stream has at most one output event per token
# asked for (twice that as a margin: a detokenizer may hold text back into an empty chunk),
# plus a few frames that are no tokens: the chat role chunk, a finish chunk, the usage chunk,
# [DONE]. A server sending far more is flooding the client (5.9 M tiny events grew one request
# to 877 MB before this bound).
EVENTS_PER_TOKEN = 2
FRAME_ALLOWANCE = 16
# A body without max_tokens: vLLM's default is the context left; 128 Ki tokens is a long-context
# model's whole context.
UNKNOWN_OUTPUT_LIMIT = 128 * 1024
# Frames that carry no data (keep-alive comments, blank events) per second of the request's
# deadline: vLLM's --sse-keep-alive-interval is seconds (for a proxy's read timeout), so 100 a
# second is far above any real stream, and a flood of them ends long before its deadline.
EMPTY_FRAMES_PER_S = 100


class OversizedEventError(Exception):
    """The server sent more than MAX_EVENT_BYTES without ending an event."""


class OversizedStreamError(Exception):
    """The server sent more events than the request can have (a one-line message)."""


def event_limit(max_tokens: int | None, choices: int = 1) -> int:
    """The most data events a request for ``max_tokens`` tokens in ``choices`` choices may bring."""
    tokens = max_tokens if max_tokens is not None else UNKNOWN_OUTPUT_LIMIT
    return EVENTS_PER_TOKEN * max(choices, 1) * max(tokens, 1) + FRAME_ALLOWANCE


class SseParser:
    """Splits a byte stream into SSE events and records each one in the sample.

    ``max_tokens`` is what the request asked for: a server claiming more completion tokens is not
    believed (the per-token ITL split would otherwise build one entry per claimed token), and
    more data events than ``event_limit`` allows, or more frames without data than
    EMPTY_FRAMES_PER_S over ``deadline_s``, stop the request (OversizedStreamError).
    """

    def __init__(
        self,
        sample: StreamSample,
        on_first_output: Callable[[], None] | None = None,
        max_tokens: int | None = None,
        choices: int = 1,
        deadline_s: float | None = None,
    ) -> None:
        self.sample = sample
        self._buffer = b""
        self._on_first_output = on_first_output
        self._max_tokens = max_tokens
        self._max_events = event_limit(max_tokens, choices)
        self._max_empty = (
            None if deadline_s is None else int(EMPTY_FRAMES_PER_S * deadline_s) + FRAME_ALLOWANCE
        )
        self._empty = 0
        # What was wrong with the first malformed event, for the request's error message.
        self.first_malformed: str | None = None

    def feed(self, data: bytes, now: int) -> int:
        """Consume one network read; return how many output events it completed."""
        self._buffer += data.replace(b"\r\n", b"\n")
        outputs = 0
        while b"\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            outputs += self._event(raw, now)
        if len(self._buffer) > MAX_EVENT_BYTES:
            raise OversizedEventError(f"an event longer than {MAX_EVENT_BYTES} bytes")
        return outputs

    def _event(self, raw: bytes, now: int) -> int:
        data_lines = []
        for line in raw.split(b"\n"):
            if line.startswith(b":"):
                self.sample.keep_alives += 1
            elif line.startswith(b"data:"):
                data_lines.append(line[5:].strip())
            elif line.strip() and not line.startswith(OTHER_FIELDS):
                self._malformed(f"a line that is no SSE field: {_quoted(line)}")
        if not data_lines:
            if self._empty == self._max_empty:
                raise OversizedStreamError(
                    f"more than {self._max_empty:,} frames without data (comments, blank events)"
                )
            self._empty += 1
            return 0
        if self.sample.events == self._max_events:
            asked = (
                "no max_tokens" if self._max_tokens is None else f"max_tokens {self._max_tokens}"
            )
            raise OversizedStreamError(f"more than {self._max_events:,} events for {asked}")
        self.sample.events += 1
        data = b"\n".join(data_lines)
        if data == b"[DONE]":
            self.sample.saw_done = True
            return 0
        try:
            payload = safejson.loads(data)
        except ValueError as exc:  # not JSON, not UTF-8, too deep or a number too long
            self._malformed(f"data that is no JSON chunk ({str(exc)[:80]}): {_quoted(data)}")
            return 0
        if not isinstance(payload, dict):
            self._malformed(f"data that is no JSON object: {_quoted(data)}")
            return 0
        return self._payload(payload, now)

    def _payload(self, payload: dict[str, Any], now: int) -> int:
        sample = self.sample
        if "error" in payload:
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else error
            sample.error_kind = sample.error_kind or "stream_error"
            sample.error = (
                sample.error or f"error event in stream: {str(message)[:MAX_MESSAGE_CHARS]}"
            )
            return 0
        if isinstance(request_id := payload.get("id"), str):
            sample.request_id = sample.request_id or request_id[:MAX_MESSAGE_CHARS]
        previous_tokens = sample.usage_tokens
        usage = payload.get("usage")
        if isinstance(usage, dict) and (tokens := usage.get("completion_tokens")) is not None:
            if self._believable(tokens):
                sample.usage_tokens = tokens
            else:
                asked = "" if self._max_tokens is None else f" of at most {self._max_tokens}"
                self._malformed(
                    f"usage.completion_tokens {_quoted(str(tokens).encode())} is no token "
                    f"count{asked}"
                )
                usage = None
        output = False
        choices = payload.get("choices")
        if choices is not None and not isinstance(choices, list):
            self._malformed(f"choices that is no list: {_quoted(str(choices).encode())}")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                self._malformed(f"a choice that is no object: {_quoted(str(choice).encode())}")
                continue
            if isinstance(reason := choice.get("finish_reason"), str) and reason:
                sample.finish_reason = reason[:MAX_MESSAGE_CHARS]
            output = output or carries_output(choice)
        if not output:
            return 0
        sample.output_times_ns.append(now)
        if len(sample.output_times_ns) == 1 and self._on_first_output is not None:
            self._on_first_output()
        # With continuous usage every chunk says how many tokens it carried.
        has_count = isinstance(usage, dict) and sample.usage_tokens is not None
        sample.output_event_tokens.append(
            sample.usage_tokens - (previous_tokens or 0) if has_count and sample.usage_tokens else 0
        )
        return 1

    def _malformed(self, what: str) -> None:
        self.sample.malformed_events += 1
        self.first_malformed = self.first_malformed or what

    def _believable(self, tokens: Any) -> bool:
        """A token count: a non-negative int no larger than the request allows."""
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 0:
            return False
        return self._max_tokens is None or tokens <= self._max_tokens


def _quoted(raw: bytes) -> str:
    """The start of what the server sent, printable on one line."""
    text = raw[:60].decode("utf-8", "replace")
    return repr(
        "".join(c if c.isprintable() else "?" for c in text) + ("..." if len(raw) > 60 else "")
    )


def carries_output(choice: dict[str, Any]) -> bool:
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
