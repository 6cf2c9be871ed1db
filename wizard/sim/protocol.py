"""Request validation and response shapes of vLLM 0.34's OpenAI-compatible API.

Errors use vLLM's nested body ``{"error": {"message", "type", "param", "code"}}`` and its texts.
Unknown request fields are ignored and logged, as vLLM does.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from wizard.sim import text

COMPLETION_FIELDS = frozenset({
    "model", "prompt", "max_tokens", "stream", "stream_options", "ignore_eos", "temperature",
    "top_p", "top_k", "n", "user", "suffix", "seed", "stop", "echo", "logprobs",
    "presence_penalty", "frequency_penalty", "min_tokens",
})  # fmt: skip
CHAT_FIELDS = (COMPLETION_FIELDS - {"prompt", "suffix", "echo"}) | {
    "messages", "max_completion_tokens", "add_generation_prompt", "tools", "tool_choice",
}  # fmt: skip
NO_CHAT_TEMPLATE = (
    "As of transformers v4.44, default chat template is no longer allowed, so you must provide a "
    "chat template if the tokenizer does not define one."
)


class ApiError(Exception):
    """An HTTP error answered with vLLM's error body."""

    def __init__(
        self, status: int, message: str, kind: str = "BadRequestError", param: str | None = None
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.kind = kind
        self.param = param

    def body(self) -> dict[str, Any]:
        """vLLM 0.34's error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.status,
            }
        }


@dataclass
class ParsedRequest:
    """A validated generation request."""

    chat: bool
    model: str
    prompt_tokens: int
    max_tokens: int
    finish_reason: str
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignored_fields: list[str] = field(default_factory=list)


def parse_body(raw: bytes) -> dict[str, Any]:
    """Decode a JSON object body or raise a 400 like vLLM's request validation does."""
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ApiError(400, f"JSON decode error: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "Input should be a valid dictionary or object to extract fields from")
    return body


def parse_generation(
    body: dict[str, Any], *, chat: bool, served_model: str, max_model_len: int, chat_template: bool
) -> ParsedRequest:
    """Validate a completions or chat body against the served model and its limits."""
    known = CHAT_FIELDS if chat else COMPLETION_FIELDS
    ignored = sorted(key for key in body if key not in known)
    model = body.get("model", served_model)
    if not isinstance(model, str):
        raise _type_error("model", "a valid string")
    if model != served_model:
        raise ApiError(404, f"The model `{model}` does not exist.", "NotFoundError", "model")
    stream = _optional(body, "stream", bool, False)
    options = body.get("stream_options")
    include_usage = continuous = False
    if options is not None:
        if not isinstance(options, dict):
            raise _type_error("stream_options", "a valid dictionary")
        if not stream:
            raise ApiError(400, "Stream options can only be defined when `stream=True`.")
        include_usage = _optional(options, "include_usage", bool, False)
        continuous = include_usage and _optional(options, "continuous_usage_stats", bool, False)
    _optional(body, "temperature", (int, float), 1.0)
    _optional(body, "user", str, None)
    n = _optional(body, "n", int, 1)
    if n != 1:
        raise ApiError(400, "The simulator serves n=1 only.", param="n")
    if chat:
        if not chat_template:
            raise ApiError(400, NO_CHAT_TEMPLATE)
        prompt_tokens, seed = _chat_prompt(body)
        requested = body.get("max_completion_tokens", body.get("max_tokens"))
    else:
        if body.get("suffix") is not None:
            raise ApiError(400, "suffix is only supported for models with FIM completion rendering")
        prompt_tokens, seed = _completion_prompt(body)
        requested = body.get("max_tokens")
    max_tokens = _max_tokens(requested, prompt_tokens, max_model_len)
    ignore_eos = _optional(body, "ignore_eos", bool, False)
    natural = text.natural_length(seed)
    if ignore_eos or natural >= max_tokens:
        finish_reason = "length"
    else:
        max_tokens, finish_reason = natural, "stop"
    return ParsedRequest(
        chat=chat, model=model, prompt_tokens=prompt_tokens, max_tokens=max_tokens,
        finish_reason=finish_reason, stream=stream, include_usage=include_usage,
        continuous_usage=continuous, ignored_fields=ignored,
    )  # fmt: skip


def _optional(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any) -> Any:
    value = body.get(name, default)
    if value is None:
        return default
    # bool is an int in Python; vLLM's pydantic models reject true for an integer field.
    if isinstance(value, bool) and kind is not bool:
        raise _type_error(name, _describe(kind))
    if not isinstance(value, kind):
        raise _type_error(name, _describe(kind))
    return value


def _describe(kind: type | tuple[type, ...]) -> str:
    names = {bool: "a valid boolean", int: "a valid integer", str: "a valid string"}
    if isinstance(kind, tuple):
        return "a valid number"
    return names.get(kind, f"a valid {kind.__name__}")


def _type_error(name: str, expected: str) -> ApiError:
    return ApiError(400, f"1 validation error: {name}: Input should be {expected}", param=name)


def _completion_prompt(body: dict[str, Any]) -> tuple[int, str]:
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        tokens = text.count_text_tokens(prompt)
        seed = prompt
    elif (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        tokens = len(prompt)
        seed = str(prompt[:64])
    elif prompt is None:
        raise ApiError(400, "1 validation error: prompt: Field required", param="prompt")
    else:
        raise ApiError(
            400,
            "The simulator accepts one prompt: a string or a list of token ids.",
            param="prompt",
        )
    if tokens == 0:
        raise ApiError(400, "The decoder prompt cannot be empty", param="prompt")
    return tokens, seed


def _chat_prompt(body: dict[str, Any]) -> tuple[int, str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(400, "1 validation error: messages: Field required", param="messages")
    contents: list[str] = []
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise ApiError(
                400, "1 validation error: messages: each message needs a role", param="messages"
            )
        content = message.get("content", "")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            raise _type_error("messages.content", "a valid string")
        contents.append(content)
    return text.count_chat_tokens(contents), "\n".join(contents)


def _max_tokens(requested: Any, prompt_tokens: int, max_model_len: int) -> int:
    if prompt_tokens >= max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, your "
            f"request has {prompt_tokens} input tokens. Please reduce the length of the input "
            "messages.",
        )
    if requested is None:
        return max_model_len - prompt_tokens
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise _type_error("max_tokens", "a valid integer")
    if requested < 1:
        raise ApiError(400, f"max_tokens must be at least 1, got {requested}.", param="max_tokens")
    if prompt_tokens + requested > max_model_len:
        raise ApiError(
            400,
            f"This model's maximum context length is {max_model_len} tokens. However, you "
            f"requested {prompt_tokens + requested} tokens ({prompt_tokens} in the messages, "
            f"{requested} in the completion). Please reduce the length of the messages or "
            "completion.",
        )
    return int(requested)


# -- response shapes --------------------------------------------------------------------------


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The ``usage`` object."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def chunk(
    request_id: str, model: str, *, chat: bool, created: int, delta_text: str | None,
    finish_reason: str | None, role: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One streamed chunk with a single choice."""
    if chat:
        delta: dict[str, Any] = (
            {"role": "assistant", "content": ""} if role else {"content": delta_text}
        )
        choice: dict[str, Any] = {
            "index": 0,
            "delta": delta,
            "logprobs": None,
            "finish_reason": finish_reason,
        }
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": delta_text, "logprobs": None, "finish_reason": finish_reason}
        obj = "text_completion"
    if finish_reason is not None:
        choice["stop_reason"] = None
    return {
        "id": request_id,
        "object": obj,
        "created": created,
        "model": model,
        "choices": [choice],
    }


def usage_chunk(
    request_id: str, model: str, *, chat: bool, created: int, used: dict[str, int]
) -> dict[str, Any]:
    """The final ``choices: []`` chunk carrying usage."""
    obj = "chat.completion.chunk" if chat else "text_completion"
    return {
        "id": request_id,
        "object": obj,
        "created": created,
        "model": model,
        "choices": [],
        "usage": used,
    }


def full_response(
    request_id: str,
    model: str,
    *,
    chat: bool,
    content: str,
    finish_reason: str,
    used: dict[str, int],
) -> dict[str, Any]:
    """A non-streamed response."""
    created = int(time.time())
    if chat:
        choice: dict[str, Any] = {
            "index": 0, "message": {"role": "assistant", "content": content, "tool_calls": []},
            "logprobs": None, "finish_reason": finish_reason, "stop_reason": None,
        }  # fmt: skip
        obj = "chat.completion"
    else:
        choice = {"index": 0, "text": content, "logprobs": None, "finish_reason": finish_reason,
                  "stop_reason": None, "prompt_logprobs": None}  # fmt: skip
        obj = "text_completion"
    return {
        "id": request_id,
        "object": obj,
        "created": created,
        "model": model,
        "choices": [choice],
        "usage": used,
    }
