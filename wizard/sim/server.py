"""The simulator's HTTP surface: vLLM's OpenAI-compatible routes on Starlette.

Routes: ``/health`` (503 until the engine is ready), ``/version``, ``/metrics``, ``/v1/models``,
``/v1/completions``, ``/v1/chat/completions``; plus ``/sim/trace`` (ground truth) and
``/sim/config``. The API key guards only ``/v1``-style prefixes and answers 401
``{"error": "Unauthorized"}``, exactly like vLLM's middleware. Headers, bodies and SSE chunks are
shaped as a real vLLM 0.32 writes them: lowercase headers with ``vary: Origin`` (not on a 401,
which vLLM's auth middleware answers before CORS), ``{"detail": ...}`` for unknown routes, the
chat role chunk as a write of its own, ids of 16 hex digits, ``system_fingerprint`` on the last
chunk, and the instrumentator's ``http_*`` series on ``/metrics``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from wizard.sim import protocol, text
from wizard.sim.api_server import ApiServers
from wizard.sim.config import SimConfig
from wizard.sim.engine import Engine, Stream
from wizard.sim.metrics import HttpMetrics
from wizard.sim.protocol import ApiError, ParsedRequest
from wizard.sim.scheduler import SimRequest

GUARDED_PREFIXES = ("/v1", "/v2", "/inference", "/cohere")
MAX_BODY_BYTES = 8 * 1024 * 1024
# vLLM's EngineDeadError text (0.32's v1/engine/exceptions.py), answered as HTTP 500.
ENGINE_DEAD = "EngineCore encountered an issue. See stack trace (above) for the root cause."


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


def vary_origin(app: ASGIApp) -> ASGIApp:
    """Add ``vary: Origin`` to every response, as vLLM's CORS middleware does."""

    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def send_with_vary(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {
                    **message,
                    "headers": [*message.get("headers", []), (b"vary", b"Origin")],
                }
            await send(message)

        await app(scope, receive, send_with_vary)

    return middleware


async def not_found_or_not_allowed(request: Request, exc: Exception) -> Response:
    """FastAPI's ``{"detail": ...}`` for unknown routes and wrong methods."""
    assert isinstance(exc, HTTPException)
    return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)


def system_fingerprint(config: SimConfig) -> str:
    """``vllm-<version>[-tpN][-ppN]-<hash8>``, vLLM's default fingerprint of the configuration."""
    parts = [f"vllm-{config.vllm_version}"]
    if config.tensor_parallel_size > 1:
        parts.append(f"tp{config.tensor_parallel_size}")
    if config.pipeline_parallel_size > 1:
        parts.append(f"pp{config.pipeline_parallel_size}")
    digest = hashlib.sha256(repr(dataclasses.asdict(config)).encode()).hexdigest()
    return "-".join([*parts, digest[:8]])


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
        self.fingerprint = system_fingerprint(engine.config)
        self.http_metrics: HttpMetrics | None = None
        self.api_servers = ApiServers(
            engine.config.api_server_count, engine.config.api_server_costs
        )

    def app(self) -> ASGIApp:
        """The ASGI application."""
        routes = [
            Route("/health", self.health, methods=["GET"]),
            Route("/version", self.version, methods=["GET"]),
            Route("/metrics", self.metrics, methods=["GET"]),
            Route("/v1/models", self.models, methods=["GET"]),
            *(
                [Route("/v1/completions", self.completions, methods=["POST"])]
                if self.engine.config.completions_api
                else []
            ),
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/sim/trace", self.trace, methods=["GET", "DELETE"]),
            Route("/sim/config", self.sim_config, methods=["GET"]),
        ]
        handlers = {404: not_found_or_not_allowed, 405: not_found_or_not_allowed}
        app: ASGIApp = vary_origin(
            Starlette(routes=routes, lifespan=self._lifespan, exception_handlers=handlers)
        )
        if self.api_key:
            app = ApiKeyMiddleware(app, self.api_key)
        self.http_metrics = HttpMetrics(
            frozenset(r.path for r in routes if not r.path.startswith("/sim/")),
            self.api_servers.cpu_seconds, self.api_servers.count,
        )  # fmt: skip
        return self.http_metrics.wrap(app)

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
        return JSONResponse({"version": self.engine.config.vllm_version})

    async def metrics(self, request: Request) -> Response:
        assert self.http_metrics is not None
        body = self.http_metrics.render_process()
        if not self.engine.config.disable_log_stats:
            body += self.engine.metrics.render()
        body += self.http_metrics.render()
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    async def models(self, request: Request) -> Response:
        config = self.engine.config
        created = int(time.time())
        permission = {
            "id": f"modelperm-{secrets.token_hex(8)}", "object": "model_permission",
            "created": created, "allow_create_engine": False, "allow_sampling": True,
            "allow_logprobs": True, "allow_search_indices": False, "allow_view": True,
            "allow_fine_tuning": False, "organization": "*", "group": None, "is_blocking": False,
        }  # fmt: skip
        return JSONResponse({
            "object": "list",
            "data": [{
                "id": config.served_name, "object": "model", "created": created,
                "owned_by": "vllm", "root": config.model, "parent": None,
                "max_model_len": config.max_model_len, "permission": [permission],
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
        try:
            parsed = await self._parse(request, chat=chat)
        except ApiError as error:
            if error.status == 404:
                self.engine.log.request_error(error.message, error.kind, error.param, error.status)
            return JSONResponse(error.body(), status_code=error.status)
        prefix = "chatcmpl" if chat else "cmpl"
        request_id = f"{prefix}-{secrets.token_hex(8)}"
        sim_request = SimRequest(
            request_id, parsed.prompt_tokens, parsed.max_tokens, prompt=parsed.prompt,
            grammar_chars=parsed.grammar_chars,
        )  # fmt: skip
        # The API server renders and tokenizes the request before the engine sees it.
        process = self.api_servers.assign()
        await self.api_servers.request(process)
        stream = self.engine.submit(sim_request, parsed.finish_reason, parsed.max_tokens)
        if parsed.stream:
            headers = {"X-Accel-Buffering": "no"} if self.engine.config.x_accel_buffering_no else {}
            return SseResponse(
                self.engine, stream, self._events(stream, parsed, request_id, process), headers
            )
        await until_done_or_disconnected(self.engine, stream, _drain(stream), request.receive)
        if stream.failed:
            dead = ApiError(500, ENGINE_DEAD, "InternalServerError")
            return JSONResponse(dead.body(), status_code=500)
        if stream.aborted:
            return Response(status_code=499)  # nobody is listening any more
        await self.api_servers.tokens(process, len(stream.emitted_ns))
        content = "".join(text.token_text(i) for i in range(1, len(stream.emitted_ns) + 1))
        stream.mark_sent(len(stream.emitted_ns))
        used = protocol.full_usage(parsed.prompt_tokens, len(stream.emitted_ns))
        body = protocol.full_response(
            request_id, parsed.model, chat=chat, content=content,
            finish_reason=parsed.finish_reason, used=used, fingerprint=self.fingerprint,
        )  # fmt: skip
        return JSONResponse(body)

    async def _parse(self, request: Request, *, chat: bool) -> ParsedRequest:
        if (self.engine.ready and not self.engine.admit()) or self.engine.dead:
            raise ApiError(500, ENGINE_DEAD, "InternalServerError")
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
            body, chat=chat, served_model=config.served_name, max_model_len=config.max_model_len,
            chat_template=config.chat_template,
        )  # fmt: skip
        if parsed.ignored_fields:
            self.engine.log.ignored_fields(parsed.ignored_fields)
        return parsed

    async def _events(
        self, stream: Stream, parsed: ParsedRequest, request_id: str, process: int
    ) -> AsyncIterator[bytes]:
        """The SSE body: one event per delivery (several tokens if the writer fell behind).

        Every event is its own write, so each becomes an HTTP chunk of its own, the chat role
        chunk included; ``system_fingerprint`` rides on the stream's last chunk before ``[DONE]``.
        The API server's process detokenizes and serializes the tokens before each event (a busy
        process holds it back: ``wizard.sim.api_server``).
        """
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
            if chat and first == 1:
                opening = (
                    protocol.running_usage(parsed.prompt_tokens, 0)
                    if parsed.continuous_usage
                    else None
                )
                yield sse(protocol.role_chunk(request_id, model, created=created, used=opening))
            delta = "".join(text.token_text(i) for i in range(first, sent + 1))
            payload = protocol.chunk(request_id, model, chat=chat, created=created, delta_text=delta,
                                     finish_reason=reason)  # fmt: skip
            if parsed.continuous_usage:
                payload["usage"] = protocol.running_usage(parsed.prompt_tokens, sent)
            if finished and not parsed.include_usage:
                payload["system_fingerprint"] = self.fingerprint
            await self.api_servers.tokens(process, new)
            stream.mark_sent(new)
            yield sse(payload)
            if finished:
                break
        if stream.failed:  # vLLM sends the error as the stream's next event
            yield sse(ApiError(500, ENGINE_DEAD, "InternalServerError").body())
            yield b"data: [DONE]\n\n"
            return
        if parsed.include_usage:
            used = protocol.usage(parsed.prompt_tokens, sent)
            closing = protocol.usage_chunk(request_id, model, chat=chat, created=created, used=used)
            closing["system_fingerprint"] = self.fingerprint
            yield sse(closing)
        yield b"data: [DONE]\n\n"
