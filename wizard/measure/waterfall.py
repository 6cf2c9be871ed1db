"""A slow first token split across its hops, from the evidence each hop leaves.

In the order a request meets them:

- ``proxy``: nginx's own time, ``$request_time - $upstream_response_time`` (reading the
  client's request, connecting, passing the answer on); whole-request, from the access log.
- ``api_server``: ``$upstream_header_time``: until vLLM's API server answered with headers. vLLM
  renders and tokenizes the prompt, then returns its streaming response; the engine sees the
  request (its ``arrival_time``, where its own TTFT starts) only when that response is iterated,
  after the headers went out (facts/vllm.md §1.1: the engine's times "include no nginx or
  network time"). So this is the API server's share before the engine.
- ``queue``: ``vllm:request_queue_time_seconds`` (first QUEUED to first SCHEDULED).
- ``prefill``: ``vllm:request_prefill_time_seconds`` (first SCHEDULED to first token).
- ``engine_other``: the engine's TTFT less queue and prefill (arrival to queued, and the
  output's way back to the API server; 0 where the engine stamps them on one clock); None when
  the means, taken over slightly different requests, leave less than nothing.
- ``unexplained``: a client-measured TTFT less every part above, when one is given (the walk
  measures it: ``walk_waterfall``; triage, sending nothing, has none). Straight to the server
  (no nginx), it is the API server's share and the network's: the TTFT outside the engine.

Each part is a mean over the requests its source saw (its ``requests``), in milliseconds.
"""

from __future__ import annotations

from typing import Any

# Below a microsecond a difference of histogram sums (floats of seconds) is rounding, not time.
FLOAT_NOISE_MS = 0.001
# nginx writes $request_time and $upstream_*_time "with a milliseconds resolution" (its docs).
NGINX_RESOLUTION_MS = 1.0


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000


def build(
    delta: dict[str, Any] | None,
    access: dict[str, Any] | None = None,
    client_ttft_ms: float | None = None,
) -> dict[str, Any]:
    """The waterfall from a /metrics window's deltas, an access log's means and a client TTFT."""
    delta = delta or {}
    engine = {"requests": delta.get("requests"), "ttft_ms": _ms(delta.get("server_ttft_mean_s")),
              "queue_ms": _ms(delta.get("server_queue_mean_s")),
              "prefill_ms": _ms(delta.get("server_prefill_mean_s"))}  # fmt: skip
    return from_means(engine, access, client_ttft_ms)


def from_means(
    engine: dict[str, Any],
    access: dict[str, Any] | None,
    client_ttft_ms: float | None,
    proxied: bool = True,
) -> dict[str, Any]:
    """The waterfall from the engine's means (``ttft_ms``, ``queue_ms``, ``prefill_ms``, over
    ``requests``), an access log's means and a client TTFT. ``proxied`` False: a client straight
    to the server, with no nginx hop to show or miss (its remainder holds the API server)."""
    parts: list[dict[str, Any]] = []
    missing: list[str] = []

    def part(hop: str, ms: float | None, source: str, requests: float | None) -> None:
        if ms is None:
            missing.append(hop)
        else:
            parts.append({"hop": hop, "ms": ms, "source": source, "requests": requests})

    access = access or {}
    if proxied:
        request_ms = access.get("request_time_ms")
        upstream_ms = access.get("upstream_response_time_ms")
        proxy = None if request_ms is None or upstream_ms is None else request_ms - upstream_ms
        if proxy is not None and -NGINX_RESOLUTION_MS <= proxy < 0:
            proxy = 0.0  # each time is rounded to nginx's millisecond: their difference is too
        part("proxy", proxy if proxy is None or proxy >= 0 else None, "nginx_access_log",
             access.get("request_time_count"))  # fmt: skip
        part("api_server", access.get("upstream_header_time_ms"), "nginx_access_log",
             access.get("upstream_header_time_count"))  # fmt: skip
    requests = engine.get("requests")
    ttft, queue, prefill = engine.get("ttft_ms"), engine.get("queue_ms"), engine.get("prefill_ms")
    part("queue", queue, "metrics", requests)
    part("prefill", prefill, "metrics", requests)
    other = None if None in (ttft, queue, prefill) else ttft - queue - prefill  # type: ignore[operator]
    if other is not None and -FLOAT_NOISE_MS < other < 0:
        other = 0.0  # the three sums' float error, not time
    part("engine_other", other if other is None or other >= 0 else None, "metrics", requests)
    explained = sum(p["ms"] for p in parts)
    unexplained = None if client_ttft_ms is None else client_ttft_ms - explained
    return {
        "parts": parts,
        "missing": missing,
        "engine_ttft_ms": ttft,
        "client_ttft_ms": client_ttft_ms,
        "explained_ms": explained if parts else None,
        "unexplained_ms": unexplained,
    }
