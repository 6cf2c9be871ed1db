"""Server-sent events from an OpenAI-compatible stream, classified into a ``StreamSample``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from wizard.probes.stream import StreamSample


class SseParser:
    """Splits a byte stream into SSE events and records each one in the sample."""

    def __init__(
        self, sample: StreamSample, on_first_output: Callable[[], None] | None = None
    ) -> None:
        self.sample = sample
        self._buffer = b""
        self._on_first_output = on_first_output

    def feed(self, data: bytes, now: int) -> int:
        """Consume one network read; return how many output events it completed."""
        self._buffer += data.replace(b"\r\n", b"\n")
        outputs = 0
        while b"\n\n" in self._buffer:
            raw, self._buffer = self._buffer.split(b"\n\n", 1)
            outputs += self._event(raw, now)
        return outputs

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
        self.sample.event_times_ns.append(now)
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
        previous_tokens = sample.usage_tokens
        usage = payload.get("usage")
        if isinstance(usage, dict) and isinstance(usage.get("completion_tokens"), int):
            sample.usage_tokens = usage["completion_tokens"]
        output = False
        for choice in payload.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            if choice.get("finish_reason"):
                sample.finish_reason = choice["finish_reason"]
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
