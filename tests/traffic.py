"""Closed-loop completion traffic a test drives itself, on a thread, counted as it is sent; and
triage run under it, checked to add no completion request of its own."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import threading
import time
from typing import Any

import httpx

from tests.conftest import wizard_command

COMPLETION_ROUTES = re.compile(
    r'^http_requests_total\{[^}]*handler="/v1/(?:chat/)?completions"[^}]*\} (\S+)$', re.M
)


class Traffic:
    """``streams`` closed-loop completion requests per server in ``urls`` (each prompt starts with
    a word of its own, so no prefix cache shares them). ``sent`` counts every request sent;
    ``retry``: a request the server refuses (it is restarting) is retried after a pause instead
    of ending the loop."""

    def __init__(self, urls: list[str], streams: int, prompt_words: int, max_tokens: int,
                 retry: bool = False) -> None:  # fmt: skip
        self.urls, self.streams, self.retry = urls, streams, retry
        self.prompt_words, self.max_tokens = prompt_words, max_tokens
        self.sent = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        async with httpx.AsyncClient(timeout=60) as client:
            model = (await client.get(self.urls[0] + "/v1/models")).json()["data"][0]["id"]

            async def worker(url: str, index: int) -> None:
                for n in range(100_000):
                    if self.stop.is_set():
                        return
                    body = {"model": model, "max_tokens": self.max_tokens, "ignore_eos": True,
                            "prompt": f"s{index}n{n} " + "word " * self.prompt_words}  # fmt: skip
                    self.sent += 1
                    try:
                        await client.post(url + "/v1/completions", json=body)
                    except httpx.HTTPError:
                        if not self.retry:
                            raise
                        await asyncio.sleep(0.1)

            await asyncio.gather(
                *(worker(url, i) for url in self.urls for i in range(self.streams))
            )

    def __enter__(self) -> Traffic:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=120)
        assert not self.thread.is_alive()


def completions_served(url: str) -> float:
    """The server's own count of completion requests it answered (every status)."""
    text = httpx.get(url + "/metrics", timeout=10).text
    return sum(float(v) for v in COMPLETION_ROUTES.findall(text))


def triage(*args: str) -> tuple[int, dict[str, Any]]:
    """``triage ... --json`` as a subprocess: its exit code and report."""
    result = subprocess.run(
        wizard_command("triage", *args, "--json"), capture_output=True, text=True, timeout=120
    )
    assert result.returncode in (0, 3), result.stderr
    return result.returncode, json.loads(result.stdout)


def triage_under(
    url: str, streams: int, prompt_words: int, max_tokens: int, *args: str
) -> tuple[int, dict[str, Any]]:
    """Triage while the test's own traffic runs; asserts triage added no completion request."""
    before = completions_served(url)
    with Traffic([url], streams, prompt_words, max_tokens) as traffic:
        while traffic.sent < 2 * streams:  # every stream past its first request: the load is on
            time.sleep(0.1)
        code, report = triage("--target", url, "--interval", "1.5", *args)  # later flags win
    after = completions_served(url)
    assert after - before == traffic.sent, (before, after, traffic.sent)
    assert report["completion_requests_sent"] == 0
    return code, report
