"""Request validation and response shapes of vLLM's OpenAI-compatible API.

Errors use vLLM's nested body ``{"error": {"message", "type", "param", "code"}}`` with the texts a
real vLLM 0.32 answers (``facts/real-vllm.md``; captured from a running server): field-type errors
are pydantic's (type ``"Bad Request"``, param ``"body.<field>"``, the message lists the error as
FastAPI reports it), vLLM's own checks end in ``(parameter=..., value=...)``. Fields are coerced as
pydantic's lax mode does (``"stream": "yes"`` is true, ``"max_tokens": "12"`` is 12). Unknown
request fields are ignored. Chunk and response shapes, field order included, are the real ones.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from wizard.sim import text
from wizard.sim.structured import CONSTRAINT_FIELDS, grammar_chars

COMPLETION_FIELDS = frozenset({
    "model", "prompt", "max_tokens", "stream", "stream_options", "ignore_eos", "temperature",
    "top_p", "top_k", "n", "user", "suffix", "seed", "stop", "echo", "logprobs",
    "presence_penalty", "frequency_penalty", "min_tokens", *CONSTRAINT_FIELDS,
})  # fmt: skip
CHAT_FIELDS = (COMPLETION_FIELDS - {"prompt", "suffix", "echo"}) | {
    "messages", "max_completion_tokens", "add_generation_prompt", "tools", "tool_choice",
}  # fmt: skip
NO_CHAT_TEMPLATE = (
    "As of transformers v4.44, default chat template is no longer allowed, so you must provide a "
    "chat template if the tokenizer does not define one."
)
# vLLM's CompletionRequest.max_tokens default; chat requests default to what the context leaves.
COMPLETION_DEFAULT_MAX_TOKENS = 16
TRUE_STRINGS = frozenset({"1", "on", "t", "true", "y", "yes"})
FALSE_STRINGS = frozenset({"0", "off", "f", "false", "n", "no"})


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
        """vLLM's error body."""
        return {
            "error": {
                "message": self.message,
                "type": self.kind,
                "param": self.param,
                "code": self.status,
            }
        }


def validation_error(
    error_type: str, loc: str, msg: str, value: Any, ctx: dict[str, str] | None = None
) -> ApiError:
    """A pydantic validation error as vLLM's RequestValidationError handler answers it."""
    detail: dict[str, Any] = {"type": error_type, "loc": loc, "msg": msg, "input": _summary(value)}
    if ctx is not None:
        detail["ctx"] = ctx
    return ApiError(400, f"1 validation error:\n  {detail}", "Bad Request", loc)


def vllm_error(message: str, parameter: str, value: Any = None) -> ApiError:
    """vLLM's own VLLMValidationError: the message ends in ``(parameter=..., value=...)``."""
    extras = [f"parameter={parameter}"] + ([f"value={value}"] if value is not None else [])
    return ApiError(400, f"{message} ({', '.join(extras)})", param=parameter)


def _summary(value: Any) -> Any:
    """vLLM's bounded stand-in for a validation error's ``input``."""
    if isinstance(value, str):
        return value if len(value) <= 200 else value[:200] + "...[truncated]"
    if isinstance(value, list | tuple | set | frozenset | dict):
        return f"<{type(value).__name__} of {len(value)} items>"
    return str(value)


@dataclass
class ParsedRequest:
    """A validated generation request."""

    chat: bool
    model: str
    prompt_tokens: int
    # The prompt's tokens as the simulator's tokenizer sees them (the prefix cache hashes them).
    prompt: tuple[str, ...]
    max_tokens: int
    finish_reason: str
    stream: bool
    include_usage: bool
    continuous_usage: bool
    ignored_fields: list[str] = field(default_factory=list)
    # The size of the request's structured-output constraint (``wizard.sim.structured``); 0: none.
    grammar_chars: int = 0


def parse_body(raw: bytes) -> dict[str, Any]:
    """Decode a JSON object body or raise a 400 like FastAPI's request validation does."""
    try:
        body = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise validation_error(
            "json_invalid", f"body.{exc.pos}", "JSON decode error", {}, {"error": exc.msg}
        ) from None
    except UnicodeDecodeError as exc:
        raise validation_error(
            "json_invalid", f"body.{exc.start}", "JSON decode error", {}, {"error": exc.reason}
        ) from None
    if not isinstance(body, dict):
        raise validation_error(
            "model_attributes_type", "body",
            "Input should be a valid dictionary or object to extract fields from", body,
        )  # fmt: skip
    return body


def parse_generation(
    body: dict[str, Any], *, chat: bool, served_model: str, max_model_len: int, chat_template: bool
) -> ParsedRequest:
    """Validate a completions or chat body against the served model and its limits."""
    known = CHAT_FIELDS if chat else COMPLETION_FIELDS
    ignored = sorted(key for key in body if key not in known)
    model = _lax(body, "model", str, None)
    stream = _lax(body, "stream", bool, False)
    options = body.get("stream_options")
    include_usage = continuous = False
    if options is not None:
        if not isinstance(options, dict):
            raise validation_error(
                "model_type", "body.stream_options",
                "Input should be a valid dictionary or instance of StreamOptions", options,
            )  # fmt: skip
        include_usage = _lax(options, "include_usage", bool, False, "body.stream_options")
        continuous = _lax(options, "continuous_usage_stats", bool, False, "body.stream_options")
        continuous = continuous and include_usage
    _lax(body, "temperature", float, None)
    _lax(body, "user", str, None)
    n = _lax(body, "n", int, 1)
    ignore_eos = _lax(body, "ignore_eos", bool, False)
    if chat:
        messages = body.get("messages")
        if not isinstance(messages, list):
            if messages is None:
                raise validation_error("missing", "body.messages", "Field required", body)
            raise validation_error("list_type", "body.messages", "Input should be a valid list",
                                   messages)  # fmt: skip
        param = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
        requested = _lax(body, param, int, None)
    else:
        param = "max_tokens"
        requested = _lax(body, "max_tokens", int, COMPLETION_DEFAULT_MAX_TOKENS)
    # The request model's own validators, then the handler's checks.
    if options is not None and not stream:
        raise vllm_error("Stream options can only be defined when `stream=True`.", "stream_options")
    if not chat:
        prompt, seed, exact = _completion_prompt(body)
    if model is not None and model != served_model:
        raise ApiError(
            404,
            f"The model `{model}` does not exist. Valid aliases: {served_model}.",
            "NotFoundError",
            "model",
        )
    if n != 1:
        raise ApiError(400, "The simulator serves n=1 only.", param="n")
    if requested is not None and requested > max_model_len:
        raise vllm_error(
            f"{param}={requested} cannot be greater than max_model_len={max_model_len}. "
            "Please request fewer output tokens.",
            param,
            requested,
        )
    if chat:
        if not chat_template:
            raise ApiError(400, NO_CHAT_TEMPLATE)
        prompt, seed, exact = _chat_prompt(body["messages"])
    else:
        if body.get("suffix") is not None:
            raise ApiError(
                400, "suffix is only supported for models with FIM completion rendering",
                param="suffix",
            )  # fmt: skip
    prompt_tokens = len(prompt)
    if prompt_tokens > max_model_len:
        # The tokenizer truncates a text prompt to max_model_len + 1 tokens: "at least" that many.
        count = prompt_tokens if exact else max_model_len + 1
        qualifier = "at least " if count == max_model_len + 1 else ""
        raise vllm_error(
            f"This model's maximum context length is {max_model_len} tokens. However, your "
            f"prompt contains {qualifier}{count} input tokens, which exceeds this limit even "
            "without any output tokens. Please reduce the length of the input prompt.",
            "input_tokens",
            count,
        )
    # vLLM clamps the output to what the context leaves (get_max_tokens), then checks it.
    room = max_model_len - prompt_tokens
    max_tokens = room if requested is None else min(requested, room)
    if max_tokens < 1:
        raise vllm_error(f"max_tokens must be at least 1, got {max_tokens}.", "max_tokens",
                         max_tokens)  # fmt: skip
    natural = text.natural_length(seed)
    if ignore_eos or natural >= max_tokens:
        finish_reason = "length"
    else:
        max_tokens, finish_reason = natural, "stop"
    return ParsedRequest(
        chat=chat, model=served_model, prompt_tokens=prompt_tokens, prompt=prompt,
        max_tokens=max_tokens,
        finish_reason=finish_reason, stream=stream, include_usage=include_usage,
        continuous_usage=continuous, ignored_fields=ignored, grammar_chars=grammar_chars(body),
    )  # fmt: skip


def _lax(body: dict[str, Any], name: str, kind: type, default: Any, where: str = "body") -> Any:
    """Read a field the way pydantic's lax mode coerces it; None means the default."""
    value = body.get(name)
    if value is None:
        return default
    loc = f"{where}.{name}"
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.lower() in TRUE_STRINGS | FALSE_STRINGS:
            return value.lower() in TRUE_STRINGS
        raise validation_error(
            "bool_parsing" if isinstance(value, str | int | float) else "bool_type", loc,
            "Input should be a valid boolean, unable to interpret input"
            if isinstance(value, str | int | float) else "Input should be a valid boolean", value,
        )  # fmt: skip
    if kind is int:
        if isinstance(value, int):
            return int(value)
        if isinstance(value, float):
            if value.is_integer():
                return int(value)
            raise validation_error(
                "int_from_float", loc,
                "Input should be a valid integer, got a number with a fractional part", value,
            )  # fmt: skip
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise validation_error(
                    "int_parsing", loc,
                    "Input should be a valid integer, unable to parse string as an integer", value,
                ) from None  # fmt: skip
        raise validation_error("int_type", loc, "Input should be a valid integer", value)
    if kind is float:
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                raise validation_error(
                    "float_parsing", loc,
                    "Input should be a valid number, unable to parse string as a number", value,
                ) from None  # fmt: skip
        raise validation_error("float_type", loc, "Input should be a valid number", value)
    if not isinstance(value, str):
        raise validation_error("string_type", loc, "Input should be a valid string", value)
    return value


def _completion_prompt(body: dict[str, Any]) -> tuple[tuple[str, ...], str, bool]:
    """(prompt tokens, seed text, whether the count is exact rather than a tokenizer's)."""
    prompt = body.get("prompt")
    empty = "Either prompt or prompt_embeds must be provided and non-empty."
    if isinstance(prompt, str):
        tokens, seed, exact = text.text_tokens(prompt), prompt, False
    elif (
        isinstance(prompt, list)
        and prompt
        and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt)
    ):
        tokens, seed, exact = tuple(str(t) for t in prompt), str(prompt[:64]), True
    elif prompt is None or prompt == []:
        raise vllm_error(empty, "prompt")
    else:
        raise ApiError(
            400,
            "The simulator accepts one prompt: a string or a list of token ids.",
            param="prompt",
        )
    if not tokens:
        raise vllm_error(empty, "prompt")
    return tokens, seed, exact


def _chat_prompt(messages: list[Any]) -> tuple[tuple[str, ...], str, bool]:
    contents: list[tuple[str, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise validation_error(
                "missing", f"body.messages.{index}.role", "Field required", message
            )
        content = message.get("content", "")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        if not isinstance(content, str):
            raise validation_error(
                "string_type", f"body.messages.{index}.content", "Input should be a valid string",
                content,
            )  # fmt: skip
        contents.append((message["role"], content))
    return text.chat_tokens(contents), "\n".join(c for _, c in contents), False


# -- response shapes (field order as a real vLLM 0.32 writes them) ------------------------------


def usage(prompt_tokens: int, completion_tokens: int) -> dict[str, int]:
    """The ``usage`` object of the final usage chunk."""
    return {
        "prompt_tokens": prompt_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "completion_tokens": completion_tokens,
    }


def running_usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The ``usage`` of a chunk under ``continuous_usage_stats``."""
    return {**usage(prompt_tokens, completion_tokens), "completion_tokens_details": None}


def full_usage(prompt_tokens: int, completion_tokens: int) -> dict[str, Any]:
    """The ``usage`` of a non-streamed response."""
    return {
        **usage(prompt_tokens, completion_tokens),
        "prompt_tokens_details": None,
        "completion_tokens_details": None,
    }


def role_chunk(
    request_id: str, model: str, *, created: int, used: dict[str, Any] | None
) -> dict[str, Any]:
    """The chat stream's opening chunk: the role and an empty content, nothing generated."""
    payload: dict[str, Any] = {
        "id": request_id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                     "finish_reason": None}],
    }  # fmt: skip
    if used is not None:
        payload["usage"] = used
    payload["prompt_token_ids"] = None
    payload["prompt_text"] = None
    return payload


def chunk(
    request_id: str, model: str, *, chat: bool, created: int, delta_text: str,
    finish_reason: str | None,
) -> dict[str, Any]:  # fmt: skip
    """One streamed chunk with a single choice carrying generated text."""
    choice: dict[str, Any]
    if chat:
        choice = {"index": 0, "delta": {"content": delta_text}, "logprobs": None,
                  "finish_reason": finish_reason}  # fmt: skip
        if finish_reason is not None:
            choice["stop_reason"] = None
        choice["token_ids"] = None
        obj = "chat.completion.chunk"
    else:
        choice = {"index": 0, "text": delta_text, "logprobs": None,
                  "finish_reason": finish_reason, "stop_reason": None, "prompt_token_ids": None,
                  "token_ids": None}  # fmt: skip
        obj = "text_completion"
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
    """The final ``choices: []`` chunk carrying usage (``system_fingerprint`` is added by the caller)."""
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
    used: dict[str, Any],
    fingerprint: str,
) -> dict[str, Any]:
    """A non-streamed response."""
    created = int(time.time())
    head = {"id": request_id, "object": "chat.completion" if chat else "text_completion",
            "created": created, "model": model}  # fmt: skip
    if chat:
        message = {"role": "assistant", "content": content, "refusal": None, "annotations": None,
                   "audio": None, "function_call": None, "reasoning": None}  # fmt: skip
        choice: dict[str, Any] = {
            "index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason,
            "stop_reason": None, "token_ids": None, "routed_experts": None,
        }  # fmt: skip
        tail = {"prompt_logprobs": None, "prompt_token_ids": None, "prompt_text": None}
    else:
        choice = {"index": 0, "text": content, "logprobs": None, "finish_reason": finish_reason,
                  "stop_reason": None, "token_ids": None, "prompt_logprobs": None,
                  "prompt_token_ids": None, "routed_experts": None}  # fmt: skip
        tail = {}
    return {
        **head, "choices": [choice], "service_tier": None, "system_fingerprint": fingerprint,
        "usage": used, **tail, "kv_transfer_params": None, "ec_transfer_params": None,
        "metrics": None,
    }  # fmt: skip
