"""A real loopback HTTP server that misbehaves on purpose, one behaviour per path prefix.

The stream probe appends ``/v1/completions`` to its target, so a target of ``{url}/garbage`` gets
the ``garbage`` behaviour. Responses are close-delimited HTTP/1.1, written by hand on a raw socket so
that resets, hangs and cut bodies are real.

``{url}/cycle`` is a server whose completions take every behaviour in turn (MODES, one request
after another) while its model list, health and version answer: one walk meets every fault.
``{url}/endless`` answers the same, and never finishes a completion.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import ssl
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

HEADERS = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"


def event(payload: Any) -> bytes:
    return (
        b"data: "
        + (payload if isinstance(payload, bytes) else json.dumps(payload).encode())
        + b"\n\n"
    )


def text_chunk(text: str, finish: str | None = None, usage: int | None = None) -> bytes:
    payload: dict[str, Any] = {
        "id": "cmpl-fault", "object": "text_completion",
        "choices": [{"index": 0, "text": text, "finish_reason": finish}],
    }  # fmt: skip
    if usage is not None:
        payload["usage"] = {"completion_tokens": usage}
    return event(payload)


def chat_chunk(delta: dict[str, Any]) -> bytes:
    return event({"id": "chatcmpl-fault", "object": "chat.completion.chunk",
                  "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})  # fmt: skip


def usage_chunk(tokens: int) -> bytes:
    return event({"id": "cmpl-fault", "choices": [], "usage": {"completion_tokens": tokens}})


async def behave(name: str, writer: asyncio.StreamWriter) -> None:
    """Write the response of one behaviour."""
    write = writer.write
    if name in TRICKLES:
        await trickle(name, writer)
        return
    if name in FLOODS:
        await flood(name, writer)
        return
    if name.startswith("status"):
        code = int(name.removeprefix("status"))
        body = json.dumps(
            {"error": {"message": f"simulated {code}", "type": "X", "code": code}}
        ).encode()
        write(f"HTTP/1.1 {code} Oops\r\ncontent-type: application/json\r\n".encode())
        write(f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
        return
    write(HEADERS)
    if name == "garbage":
        write(b"data: {not json\n\n" + b"hello world\n\n" + event(b"[1, 2]"))
        write(text_chunk(" ok", "length") + usage_chunk(1) + event(b"[DONE]"))
    elif name == "errorevent":
        write(
            text_chunk(" a") + event({"error": {"message": "boom", "code": 500}}) + event(b"[DONE]")
        )
    elif name == "nodone":
        write(text_chunk(" a") + text_chunk(" b"))
    elif name == "reset":
        write(text_chunk(" a"))
        await writer.drain()
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()
        return
    elif name == "hang":
        write(text_chunk(" a"))
        await writer.drain()
        await asyncio.sleep(30)
    elif name == "roleearly":
        write(chat_chunk({"role": "assistant", "content": ""}))
        await writer.drain()
        await asyncio.sleep(0.2)
        for word in (" one", " two"):
            write(chat_chunk({"content": word}))
            await writer.drain()
            await asyncio.sleep(0.05)
        write(usage_chunk(2) + event(b"[DONE]"))
    elif name == "multitoken":  # continuous usage: the first event carries three tokens
        write(text_chunk(" a b c", usage=3))
        await writer.drain()
        await asyncio.sleep(0.05)
        write(text_chunk(" d", "length", usage=4) + usage_chunk(4) + event(b"[DONE]"))
    elif name == "burst":  # what a buffering proxy does: ten events held, then one write
        await asyncio.sleep(0.1)
        write(b"".join(text_chunk(f" w{i}", usage=i + 1) for i in range(10)))
        await writer.drain()
        await asyncio.sleep(0.1)
        write(text_chunk(" z", "length", usage=11) + usage_chunk(11) + event(b"[DONE]"))
    elif name == "deepjson":  # a RecursionError in json.loads
        write(event(b"[" * 100_000 + b"]" * 100_000) + text_chunk(" ok", "length", usage=1))
        write(event(b"[DONE]"))
    elif name == "bigint":  # past int's 4,300-digit conversion limit
        write(event(b'{"choices": [], "usage": {"completion_tokens": ' + b"9" * 5000 + b"}}"))
        write(text_chunk(" ok", "length", usage=1) + event(b"[DONE]"))
    elif name == "badchoices":  # choices that are not a list, usage that is not a count
        write(event({"id": 7, "choices": 5, "usage": {"completion_tokens": "many"}}))
        write(event({"choices": [{"text": " ok", "finish_reason": ["x"]}], "usage": []}))
        write(text_chunk(" ok", "length", usage=2) + event(b"[DONE]"))
    elif name == "usagejump":  # 200 bytes claiming a trillion tokens (3.9 GB in the ITL split)
        write(text_chunk(" a", usage=1) + text_chunk(" b", usage=10**12))
        write(usage_chunk(10**12) + event(b"[DONE]"))
    elif name == "hugeline":  # 10 MB without an event's end, then silence
        write(b"data: " + b"x" * 10_000_000)
        await writer.drain()
        await asyncio.sleep(30)
    elif name == "nousage":  # asked for 16, stops after 5, says nothing about usage
        for i in range(5):
            write(text_chunk(f" w{i}", "stop" if i == 4 else None))
            await writer.drain()
            await asyncio.sleep(0.01)
        write(event(b"[DONE]"))
    await writer.drain()


# Each byte comes within any read timeout, so only a total deadline ends these.
TRICKLES = ("slowheaders", "keepalive", "trickle")
TRICKLE_GAP_S = 0.2


async def trickle(name: str, writer: asyncio.StreamWriter) -> None:
    """Never finish: the headers a byte at a time, keep-alive comments, or an endless body."""
    if name == "slowheaders":
        data, repeat = HEADERS + text_chunk(" a", "length", usage=1) + event(b"[DONE]"), False
    elif name == "keepalive":
        writer.write(HEADERS)
        data, repeat = b": keep-alive\n\n", True
    else:
        writer.write(HEADERS)
        data, repeat = text_chunk(" a"), True
    while True:
        for i in range(len(data)):
            writer.write(data[i : i + 1] if name != "keepalive" else data)
            await writer.drain()
            await asyncio.sleep(TRICKLE_GAP_S)
            if name == "keepalive":
                break
        if not repeat:
            return


# Tiny events as fast as the socket takes them, until the client leaves (or FLOOD_EVENTS were
# sent): output events, or keep-alive comments.
FLOODS = ("flood", "keepaliveflood")
FLOOD_EVENTS = 20_000_000
FLOOD_FRAMES = {"flood": event(b'{"choices":[{"text":"a"}]}'), "keepaliveflood": b":\n\n"}


async def flood(name: str, writer: asyncio.StreamWriter) -> None:
    writer.write(HEADERS)
    batch = FLOOD_FRAMES[name] * 1000
    for _ in range(FLOOD_EVENTS // 1000):
        writer.write(batch)
        await writer.drain()


# Every behaviour, faults and well-formed streams alike (the floods apart: a client without a
# bound on events reads them for its whole deadline).
MODES = ("status500", "status404", "status429", "garbage", "errorevent", "nodone", "reset", "hang",
         "roleearly", "multitoken", "burst", "deepjson", "bigint", "badchoices", "usagejump",
         "hugeline", "nousage", *TRICKLES)  # fmt: skip
CYCLE = "cycle"
ENDLESS = "endless"  # the same answering server, whose every completion never finishes
_turns = itertools.count()
MODEL_LIST = {"object": "list", "data": [{"id": "m", "object": "model", "max_model_len": 4096}]}


async def cycle(path: str, writer: asyncio.StreamWriter, endless: bool = False) -> None:
    """The next behaviour for a completion (``endless``: an endless body, every time); a model
    list, health and version that answer."""
    if path.endswith("/completions"):
        await behave("trickle" if endless else MODES[next(_turns) % len(MODES)], writer)
        return
    known = {"/v1/models": MODEL_LIST, "/version": {"version": "0.0.0"}, "/health": {}}
    body = json.dumps(known[path]).encode() if path in known else b""
    status = b"200 OK" if path in known else b"404 Not Found"
    writer.write(b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\n")
    writer.write(f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
    await writer.drain()


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        mode, _, rest = head.split(b" ")[1].decode().strip("/").partition("/")
        if mode in (CYCLE, ENDLESS):
            await cycle("/" + rest, writer, endless=mode == ENDLESS)
        else:
            await behave(mode, writer)
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass  # the client left, or the server is shutting down
    finally:
        if not writer.transport.is_closing():
            writer.close()


@contextmanager
def fault_server(tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve on a free loopback port in a background thread (https with ``tls``); yield the base URL."""
    loop = asyncio.new_event_loop()
    ready: list[asyncio.Server] = []

    async def start() -> asyncio.Server:
        return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)

    async def shutdown() -> None:
        ready[0].close()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    ready.append(asyncio.run_coroutine_threadsafe(start(), loop).result(5))
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{ready[0].sockets[0].getsockname()[1]}"
    finally:
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
