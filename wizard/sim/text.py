"""The simulator's synthetic tokenizer and output text.

One whitespace-separated word is one token, so a client can build a prompt of an exact length
("word " * N) and every output token is one word with a leading space. The chat template adds a
fixed number of tokens per message, like Llama 3's header and end-of-turn tokens do.
"""

from __future__ import annotations

import hashlib

CHAT_BOS_TOKENS = 1
CHAT_TOKENS_PER_MESSAGE = 5
CHAT_GENERATION_PROMPT_TOKENS = 3

_VOCABULARY = (
    "the", "latency", "of", "a", "token", "stream", "is", "measured", "from", "first",
    "byte", "to", "last", "and", "every", "gap", "between", "events", "counts", "here",
)  # fmt: skip


def text_tokens(text: str) -> tuple[str, ...]:
    """The tokens of ``text`` under the simulator's tokenizer (its words)."""
    return tuple(text.split())


def chat_tokens(messages: list[tuple[str, str]]) -> tuple[str, ...]:
    """The prompt tokens of a chat request's ``(role, content)`` messages, template included.

    The template's own tokens name the role, so the same words from another role are another
    prompt (and another prefix in the prefix cache).
    """
    tokens: list[str] = ["<|begin_of_text|>"] * CHAT_BOS_TOKENS
    for role, content in messages:
        tokens += [f"<|{role}|>"] * CHAT_TOKENS_PER_MESSAGE
        tokens += text_tokens(content)
    tokens += ["<|assistant|>"] * CHAT_GENERATION_PROMPT_TOKENS
    return tuple(tokens)


def token_text(index: int) -> str:
    """The text of output token number ``index`` (1-based)."""
    return " " + _VOCABULARY[(index - 1) % len(_VOCABULARY)]


def natural_length(seed_text: str, low: int = 16, high: int = 512) -> int:
    """How many tokens the "model" would write before its end-of-sequence token.

    Deterministic per prompt, so the same request stops at the same place every time; requests
    with ``ignore_eos`` never stop early.
    """
    digest = hashlib.sha256(seed_text.encode("utf-8", "replace")).digest()
    return low + int.from_bytes(digest[:4], "big") % (high - low + 1)
