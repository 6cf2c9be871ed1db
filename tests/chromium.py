"""Headless Chromium (Debian's ``chromium``) driven over the DevTools protocol: load a page and
report its console errors, uncaught exceptions, every request it made, and a script's value."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

LOAD_GUARD_S = 120  # a hang guard, not a timing assertion


def chromium_or_skip() -> str:
    """The browser's path; skip with the reason when it is missing (fail under REQUIRE)."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("WIZARD_REQUIRE_CHROMIUM") == "1":
        pytest.fail("WIZARD_REQUIRE_CHROMIUM=1 but no chromium on PATH (apt-get install chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium; .ci/run installs it)")


def load(page: Path, script: str) -> dict[str, Any]:
    """Open ``page`` in a fresh headless Chromium; return errors, requests and ``script``'s value."""
    return asyncio.run(asyncio.wait_for(_load(chromium_or_skip(), page, script), LOAD_GUARD_S))


async def _load(binary: str, page: Path, script: str) -> dict[str, Any]:
    profile = tempfile.mkdtemp(prefix="wizard-chromium-")
    process = await asyncio.create_subprocess_exec(
        binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
        f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank",
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await _devtools_port(process)
        async with httpx.AsyncClient() as client:
            targets = (await client.get(f"http://127.0.0.1:{port}/json/list")).json()
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        async with websockets.connect(url, max_size=None) as socket:
            return await _session(socket, page.resolve().as_uri(), script)
    finally:
        process.terminate()
        await process.wait()
        shutil.rmtree(profile, ignore_errors=True)


async def _devtools_port(process: asyncio.subprocess.Process) -> int:
    assert process.stderr is not None
    while line := await process.stderr.readline():
        found = re.search(rb"DevTools listening on ws://[^:]+:(\d+)/", line)
        if found:
            return int(found.group(1))
    raise AssertionError("chromium exited before its DevTools endpoint listened")


async def _session(socket: Any, url: str, script: str) -> dict[str, Any]:
    errors: list[str] = []
    requests: list[str] = []
    ids = iter(range(1, 1_000_000))

    async def call(method: str, **params: Any) -> dict[str, Any]:
        number = next(ids)
        await socket.send(json.dumps({"id": number, "method": method, "params": params}))
        while True:
            message = json.loads(await socket.recv())
            if message.get("id") == number:
                assert "error" not in message, message
                result: dict[str, Any] = message["result"]
                return result
            _observe(message, errors, requests)

    for domain in ("Runtime", "Log", "Network", "Page"):
        await call(f"{domain}.enable")
    await call("Page.navigate", url=url)
    while True:
        message = json.loads(await socket.recv())
        if message.get("method") == "Page.loadEventFired":
            break
        _observe(message, errors, requests)
    value = await call("Runtime.evaluate", expression=script, returnByValue=True)
    return {"errors": errors, "requests": requests, "value": value["result"].get("value")}


def _observe(message: dict[str, Any], errors: list[str], requests: list[str]) -> None:
    method, params = message.get("method"), message.get("params") or {}
    if method == "Runtime.exceptionThrown":
        errors.append(json.dumps(params["exceptionDetails"])[:500])
    elif method == "Runtime.consoleAPICalled" and params["type"] in ("error", "assert"):
        errors.append(json.dumps(params["args"])[:500])
    elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
        errors.append(params["entry"]["text"])
    elif method == "Network.requestWillBeSent":
        requests.append(params["request"]["url"])
