"""Why a request never got an HTTP answer, in words an on-call engineer can act on.

httpx reports the transport's own words: ``[SSL: WRONG_VERSION_NUMBER] wrong version number`` for
https against a plain-HTTP port, an empty ``ReadError`` for a port that accepts a connection and
closes it (an SSH or database port), ``All connection attempts failed`` where nothing listens.
``explain`` says what that means for the URL given and what to try instead.
"""

from __future__ import annotations

import ast
import re
import socket
import ssl
from collections.abc import Iterator
from urllib.parse import SplitResult, urlsplit

import httpx

from wizard.i18n.words import texts
from wizard.record.terminal import printable

# h11's words for a first line that is no HTTP status line: "illegal status line: bytearray(b'...')"
_SENT = re.compile(r"illegal status line: bytearray\((b'.*'|b\".*\")\)")
_PREVIEW_CHARS = 40


def explain(exc: BaseException, url: str) -> str:
    """What the failure of a request to ``url`` means, and what to do (the caller names the URL)."""
    return explain_texts(exc, url)["en"]


def explain_texts(exc: BaseException, url: str) -> dict[str, str]:
    """``explain`` in every language."""
    parts = urlsplit(url)
    chain = list(_causes(exc))
    tls = next((e for e in chain if isinstance(e, ssl.SSLError)), None)
    if tls is not None:
        if "WRONG_VERSION_NUMBER" in str(tls) or "record layer failure" in str(tls):
            return texts("reach.not_tls", url=_with_scheme(parts, "http"))
        reason = getattr(tls, "verify_message", None) or getattr(tls, "reason", None) or tls
        return texts("reach.tls_failed", reason=printable(str(reason)))
    if any(isinstance(e, socket.gaierror) for e in chain):
        return texts("reach.no_name", host=repr(parts.hostname))
    if isinstance(exc, httpx.ConnectTimeout):
        return texts("reach.connect_timeout")
    if isinstance(exc, httpx.ReadTimeout):
        return texts("reach.read_timeout")
    if isinstance(exc, httpx.ConnectError) and any(
        isinstance(e, ConnectionRefusedError) or "All connection attempts failed" in str(e)
        for e in chain
    ):
        return texts("reach.refused")
    sent = _sent(chain)
    if sent is not None:
        preview = printable(sent[:_PREVIEW_CHARS].decode("ascii", "replace"))
        return texts("reach.not_http", preview=repr(preview))
    if isinstance(exc, httpx.ReadError | httpx.ConnectError | httpx.RemoteProtocolError):
        return texts("reach.closed")
    raw = printable(f"{type(exc).__name__}: {exc}")
    return {"en": raw, "zh": raw}


def server_down(exc: BaseException) -> bool:
    """Whether the failure is one the server's log can explain: nothing listens (it did not start
    or died), or it took the connection and closed it or went silent (it died or hangs). DNS, TLS,
    a connect timeout or another protocol on the port are about the address, not the server."""
    chain = list(_causes(exc))
    if any(isinstance(e, ssl.SSLError | socket.gaierror) for e in chain) or _sent(chain):
        return False
    return isinstance(exc, httpx.ReadTimeout | httpx.ReadError | httpx.RemoteProtocolError) or (
        isinstance(exc, httpx.ConnectError) and not isinstance(exc, httpx.ConnectTimeout)
        and any(isinstance(e, ConnectionRefusedError) or "All connection attempts failed" in str(e)
                for e in chain)
    )  # fmt: skip


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and the exceptions it was raised from (httpx wraps httpcore, which wraps the OS)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def _sent(chain: list[BaseException]) -> bytes | None:
    """The bytes a server sent instead of a status line, when h11 quoted them."""
    for error in chain:
        match = _SENT.search(str(error))
        if match is not None:
            try:
                value = ast.literal_eval(match.group(1))
            except (ValueError, SyntaxError):
                return None
            return value if isinstance(value, bytes) else None
    return None


def _with_scheme(parts: SplitResult, scheme: str) -> str:
    """The same host and port with the other scheme (the base URL the flags take)."""
    return f"{scheme}://{parts.netloc.rpartition('@')[2]}"
