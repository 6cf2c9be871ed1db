"""A loopback listener that keeps every request's headers: where a request (and a key) went; and
answers each with one fixed response (a 404 by default)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class Recorder(ThreadingHTTPServer):
    """A loopback listener that keeps every request's headers (the forger's host)."""

    def __init__(
        self, status: int = 404, body: bytes = b'{"error": "not here"}',
        content_type: str = "application/json",
    ) -> None:  # fmt: skip
        self.seen: list[dict[str, str]] = []
        self.answer = (status, body, content_type)
        super().__init__(("127.0.0.1", 0), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def _answer(self) -> None:
        self.server.seen.append(dict(self.headers.items()))
        status, body, content_type = self.server.answer
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args: Any) -> None:  # quiet
        pass
