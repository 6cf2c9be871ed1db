"""API keys: read from the environment only (never a flag value that lands in shell history)."""

from __future__ import annotations

import os
import re

DEFAULT_KEY_VARIABLES = ("VLLM_API_KEY", "OPENAI_API_KEY")
MASK = "***"

# Which occurrences of a known key are masked. A key of LONG_KEY characters or more is masked as a
# substring, anywhere: a string that long does not occur inside ordinary words by accident, and
# substring masking also catches the key glued to other text (URL-encoded after %3D, after a JSON
# escape such as \n). A shorter key ("wrong", "test", "demo-key") is often a word that ordinary
# text contains ("wrong" in the fact name wrong_base_path), so it is masked only where it stands
# as a token of its own: no letter, digit or underscore right before or after it. That still
# masks it wherever it is used as a key: `Bearer wrong`, `'Bearer wrong'`, `key=wrong`,
# `"wrong"`, `wrong\n`; and the header patterns in transcript.py mask any bearer token anyway.
LONG_KEY = 16
_WORD = "A-Za-z0-9_"
# Right before a short key, a JSON escape (\n, \t ...) or a URL escape (%3D) is a boundary too:
# the letter in it belongs to the escape, not to a word around the key.
_ESCAPE_BEFORE = r"(?<=\\[nrtbf])|(?<=%[0-9A-Fa-f]{2})"


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


def secret_pattern(secret: str) -> re.Pattern[str]:
    """The occurrences of ``secret`` to mask (see LONG_KEY for the rule)."""
    escaped = re.escape(secret)
    if len(secret) >= LONG_KEY:
        return re.compile(escaped)
    # The boundary is only needed on a side where the key itself ends in a word character: "-x"
    # inside "a-x" is still the key.
    before = rf"(?:(?<![{_WORD}])|{_ESCAPE_BEFORE})" if re.match(rf"[{_WORD}]", secret) else ""
    after = rf"(?![{_WORD}])" if re.search(rf"[{_WORD}]$", secret) else ""
    return re.compile(before + escaped + after)


# The userinfo of a URL (``http://user:KEY@host``): masked wherever a URL is written, whoever's.
USERINFO = r"(?i)(\b[a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>\\]+(?=@)"


def without_userinfo(url: str) -> str:
    """``url`` as it may be shown or recorded: ``http://***@host`` for ``http://user:KEY@host``."""
    return re.sub(USERINFO, lambda m: m.group(1) + MASK, url)


def url_secrets(*values: str | None) -> list[str]:
    """The secrets in the userinfo of every URL among ``values``: the password as given and
    decoded, or the user when there is no password (``http://KEY@host`` carries the key there)."""
    from urllib.parse import unquote, urlsplit

    secrets = []
    for value in filter(None, values):
        if "://" not in value or "@" not in value:
            continue
        try:
            userinfo = urlsplit(value).netloc.rpartition("@")[0]
        except ValueError:  # not a URL after all (an invalid IPv6 literal ...)
            continue
        user, has_password, password = userinfo.partition(":")
        secret = password if has_password else user
        secrets += [s for s in {secret, unquote(secret)} if s]
    return secrets


def mask(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` masked wherever it stands as a key (see LONG_KEY)."""
    return secret_pattern(secret).sub(lambda _: MASK, text) if secret else text
