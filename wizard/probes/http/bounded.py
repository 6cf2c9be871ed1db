"""Requests to a server that may be hostile: a total deadline and a bounded body.

httpx's read timeout restarts with every byte, so a server that trickles (its headers a byte a
second, SSE keep-alive comments forever, a body that never ends) could hold a request, and the
walk, for ever; and ``response.text`` keeps whatever the server sends in memory.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from wizard.probes.http.lean_http import tls_context

DEADLINE_READ_TIMEOUTS = 5  # a request's whole deadline, in read timeouts
DEFAULT_READ_TIMEOUT_S = 60.0
# /metrics of a many-engine vLLM is a few hundred KB; a model list or an error body far less.
MAX_BODY_BYTES = 8 * 1024 * 1024


class BoundedRequestError(Exception):
    """The request ran past its deadline or its body past MAX_BODY_BYTES (a one-line message)."""


def request_deadline_s(client: httpx.AsyncClient) -> float:
    """The whole request's deadline: DEADLINE_READ_TIMEOUTS read timeouts of ``client``."""
    read = client.timeout.read
    return DEADLINE_READ_TIMEOUTS * (read if read is not None else DEFAULT_READ_TIMEOUT_S)


async def fetch(client: httpx.AsyncClient, method: str, url: str, **kwargs: Any) -> tuple[int, str]:
    """Status and body text; httpx.HTTPError or BoundedRequestError when it fails."""
    deadline_s = request_deadline_s(client)
    body = bytearray()
    try:
        async with asyncio.timeout(deadline_s), client.stream(method, url, **kwargs) as response:
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise BoundedRequestError(f"{url} sent a body over {MAX_BODY_BYTES} bytes")
    except TimeoutError:
        raise BoundedRequestError(
            f"no complete response from {url} within its {deadline_s:g} s deadline"
        ) from None
    return response.status_code, body.decode(response.encoding or "utf-8", "replace")


async def headers_within_deadline(url: str, timeout_s: float) -> int:
    """GET ``url`` and return its status once the headers came (the body is not read)."""
    async with httpx.AsyncClient(verify=tls_context(), timeout=timeout_s) as client:
        deadline_s = request_deadline_s(client)
        try:
            async with asyncio.timeout(deadline_s), client.stream("GET", url) as response:
                return response.status_code
        except TimeoutError:
            raise BoundedRequestError(
                f"no response headers from {url} within {deadline_s:g} s"
            ) from None
