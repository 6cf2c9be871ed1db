"""API keys: read from the environment only (never a flag value that lands in shell history)."""

from __future__ import annotations

import os

DEFAULT_KEY_VARIABLES = ("VLLM_API_KEY", "OPENAI_API_KEY")
MASK = "***"


def api_key_from_env(variable: str | None = None) -> str | None:
    """The key from ``variable``, or else from $VLLM_API_KEY then $OPENAI_API_KEY."""
    names = (variable,) if variable else DEFAULT_KEY_VARIABLES
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def auth_headers(api_key: str | None) -> dict[str, str]:
    """``Authorization: Bearer ...`` when there is a key."""
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def mask(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by a mask."""
    return text.replace(secret, MASK) if secret else text
