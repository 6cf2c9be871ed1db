"""The simulator's HTTP surface: vLLM 0.34's OpenAI-compatible routes on Starlette.

Routes: ``/health`` (503 until the engine is ready), ``/version``, ``/metrics``, ``/v1/models``,
``/v1/completions``, ``/v1/chat/completions``; plus ``/sim/trace`` (ground truth) and
``/sim/config``. The API key guards only ``/v1``-style prefixes and answers 401
``{"error": "Unauthorized"}``, exactly like vLLM's middleware.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import json
import time
import uuid
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from prometheus_client import CollectorRegistry, Counter, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from wizard.sim import protocol, text
from wizard.sim.engine import Engine, Stream
from wizard.sim.protocol import ApiError, ParsedRequest
from wizard.sim.scheduler import SimRequest
from wizard.sim.vllm_log import VLLM_VERSION

GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
MAX_BODY_BYTES = 8 * 1024 * 1024


class ApiKeyMiddleware:
    """vLLM's API-key check: constant-time SHA-256 comparison, only on guarded prefixes."""

    def __init__(self, app: ASGIApp, api_key: str) -> None:
        self.app = app
        self._digest = hashlib.sha256(api_key.encode()).digest()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] != "OPTIONS":
            path: str = scope["path"]
            if path.startswith(GUARDED_PREFIXES) and not self._authorized(scope):
                response = JSONResponse({"error": "Unauthorized"}, status_code=401)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        for name, value in scope["headers"]:
            if name == b"authorization":
                given = value.decode("latin-1")
                if given.startswith("Bearer "):
                    digest = hashlib.sha256(given[7:].encode()).digest()
                    return hmac.compare_digest(digest, self._digest)
        return False


class SseResponse(StreamingResponse):
    """A server-sent-event stream that frees its request as soon as the client goes away."""

    def __init__(
        self, engine: Engine, stream: Stream, events: AsyncIterator[bytes], headers: dict[str, str]
    ):
        super().__init__(events, media_type="text/event-stream; charset=utf-8", headers=headers)
        self._engine = engine
        self._stream = stream
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": self.raw_headers})
        await until_done_or_disconnected(self._engine, self._stream, self._produce(send), receive)

    async def _produce(self, send: Send) -> None:
        async for event in self._events:
            await send({"type": "http.response.body", "body": event, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


async def until_done_or_disconnected(
    engine: Engine, stream: Stream, work: Coroutine[Any, Any, None], receive: Receive
) -> None:
    """Run ``work`` unless the client hangs up first; either way, free the request."""

    async def watch_disconnect() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    producer = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(watch_disconnect())
    try:
        await asyncio.wait({producer, watcher}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (producer, watcher):
            task.cancel()
        await asyncio.gather(producer, watcher, return_exceptions=True)
        engine.abort(stream)  # a no-op when the request finished normally


async def _drain(stream: Stream) -> None:
    while not stream.done:
        await stream.next_tokens()


def sse(payload: dict[str, Any]) -> bytes:
    """One ``data: {json}`` event."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


class SimServer:
    """Builds the Starlette app around an engine."""

    def __init__(self, engine: Engine, api_key: str | None) -> None:
        self.engine = engine
        self.api_key = api_key
        self.http_registry = CollectorRegistry()
        self.http_requests = Counter(
            "http_requests", "Total number of requests by method, status and handler.",
            ["method", "status", "handler"], registry=self.http_registry,
        )  # fmt: skip

    def app(self) -> ASGIApp:
        """The ASGI application."""
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/version", self.version, methods=["GET"]),
            Route("/metrics", self.metrics, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/completions", self.completions, methods=["POST"]),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/sim/trace", self.trace, methods=["GET", "DELETE"]),
            Route("/sim/config", self.sim_config, methods=["GET"]),
        ]
        app: ASGIApp = Starlette(routes=routes, lifespan=self._lifespan)
        if self.api_key:
            app = ApiKeyMiddleware(app, self.api_key)
        return app

    @contextlib.asynccontextmanager
    async def _lifespan(self, app: Starlette) -> AsyncIterator[None]:
        self.engine.start()
        try:
            yield
        finally:
            await self.engine.stop()

    # -- plain routes ------------------------------------------------------------------------

    async def health(self, request: Request) -> Response:
        return Response(status_code=200 if self.engine.ready else 503)

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": VLLM_VERSION})

    async def metrics(self, request: Request) -> Response:
        body = generate_latest(self.http_registry)
        if not self.engine.config.disable_log_stats:
            body += self.engine.metrics.render()
        return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def models(self, request: Request) -> Response:
        config = self.engine.config
        created = int(time.time())
        return JSONResponse({
            "object": "list",
            "data": [{
                "id": config.model, "object": "model", "created": created, "owned_by": "vllm",
                "root": config.model, "parent": None, "max_model_len": config.max_model_len,
                "permission": [],
            }],
        })  # fmt: skip

    async def trace(self, request: Request) -> Response:
        if request.method == "DELETE":
            self.engine.clear_trace()
            return Response(status_code=204)
        return JSONResponse({"clock": "monotonic_ns", "requests": self.engine.trace()})

    async def sim_config(self, request: Request) -> Response:
        config = dataclasses.asdict(self.engine.config)
        return JSONResponse(
            {"config": config, "resolved": dataclasses.asdict(self.engine.resolved)}
        )

    # -- generation ----------------------------------------------------------------------------

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, chat=False)

    async def chat_completions(self, request: Request) -> Response:
        return await self._generate(request, chat=True)

    async def _generate(self, request: Request, *, chat: bool) -> Response:
        handler = request.url.path
        try:
            parsed = await self._parse(request, chat=chat)
        except ApiError as error:
            self.http_requests.labels("POST", str(error.status), handler).inc()
            return JSONResponse(error.body(), status_code=error.status)
        self.http_requests.labels("POST", "200", handler).inc()
        prefix = "chatcmpl" if chat else "cmpl"
        request_id = f"{prefix}-{uuid.uuid4().hex}"
        sim_request = SimRequest(request_id, parsed.prompt_tokens, parsed.max_tokens)
        stream = self.engine.submit(sim_request, parsed.finish_reason, parsed.max_tokens)
        if parsed.stream:
            headers = {"X-Accel-Buffering": "no"} if self.engine.config.x_accel_buffering_no else {}
            return SseResponse(
                self.engine, stream, self._events(stream, parsed, request_id), headers
            )
        await until_done_or_disconnected(self.engine, stream, _drain(stream), request.receive)
        if stream.aborted:
            return Response(status_code=499)  # nobody is listening any more
        content = "".join(text.token_text(i) for i in range(1, len(stream.emitted_ns) + 1))
        stream.mark_sent(len(stream.emitted_ns))
        used = protocol.usage(parsed.prompt_tokens, len(stream.emitted_ns))
        body = protocol.full_response(
            request_id,
            parsed.model,
            chat=chat,
            content=content,
            finish_reason=parsed.finish_reason,
            used=used,
        )
        return JSONResponse(body)

    async def _parse(self, request: Request, *, chat: bool) -> ParsedRequest:
        if not self.engine.ready:
            raise ApiError(503, "The server is starting up; retry when /health answers 200.",
                           "ServiceUnavailableError")  # fmt: skip
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > MAX_BODY_BYTES:
            raise ApiError(413, f"Request body too large: {length} bytes (limit {MAX_BODY_BYTES}).")
        raw = await request.body()
        if len(raw) > MAX_BODY_BYTES:
            raise ApiError(
                413, f"Request body too large: {len(raw)} bytes (limit {MAX_BODY_BYTES})."
            )
        body = protocol.parse_body(raw)
        config = self.engine.config
        parsed = protocol.parse_generation(
            body, chat=chat, served_model=config.model, max_model_len=config.max_model_len,
            chat_template=config.chat_template,
        )  # fmt: skip
        if parsed.ignored_fields:
            self.engine.log.ignored_fields(parsed.ignored_fields)
        return parsed

    async def _events(
        self, stream: Stream, parsed: ParsedRequest, request_id: str
    ) -> AsyncIterator[bytes]:
        created = int(time.time())
        chat, model = parsed.chat, parsed.model
        keep_alive = self.engine.config.sse_keep_alive_interval or None
        sent = 0
        while True:
            new = await stream.next_tokens(keep_alive)
            if new == 0:
                if stream.done:
                    break
                yield b": keep-alive\n\n"
                continue
            first, sent = sent + 1, sent + new
            finished = stream.done and sent == len(stream.emitted_ns)
            reason = parsed.finish_reason if finished else None
            out = b""
            if chat and first == 1:
                role = protocol.chunk(request_id, model, chat=True, created=created, delta_text=None,
                                      finish_reason=None, role=True)  # fmt: skip
                if parsed.continuous_usage:
                    role["usage"] = protocol.usage(parsed.prompt_tokens, 0)
                out += sse(role)
            delta = "".join(text.token_text(i) for i in range(first, sent + 1))
            payload = protocol.chunk(request_id, model, chat=chat, created=created, delta_text=delta,
                                     finish_reason=reason)  # fmt: skip
            if parsed.continuous_usage:
                payload["usage"] = protocol.usage(parsed.prompt_tokens, sent)
            out += sse(payload)
            stream.mark_sent(new)
            yield out
            if finished:
                break
        if parsed.include_usage:
            used = protocol.usage(parsed.prompt_tokens, sent)
            yield sse(
                protocol.usage_chunk(request_id, model, chat=chat, created=created, used=used)
            )
        yield b"data: [DONE]\n\n"
