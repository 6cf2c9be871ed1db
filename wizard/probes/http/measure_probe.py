"""Walk probe ``measure``: one measurement round (closed-loop load) with the server watched.

While the load runs, ``/metrics`` of the direct target is scraped a few times a second so that the
facts carry what the server saw: the most requests waiting and running, the peak KV-cache usage,
the preemptions during the round and the server-side TTFT (which excludes proxy and network).

Every request's own words begin with a word of its own, so no request (and no later round) is
served from the prefix cache another one filled: a round measures prefill as it is, and a repeat
after a change is not faster for a reason that is not the change. A round with
``shared_prefix_tokens`` gives its requests that many words in common first (a system prompt,
its first word the round's own), which is what the prefix cache is for.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from dataclasses import asdict
from typing import Any

import httpx

from wizard.errors import WizardError
from wizard.measure import MeasurementSpec
from wizard.measure.contention import timings_doubtful
from wizard.measure.sequential import Progress as LookProgress
from wizard.measure.sequential import Question
from wizard.probes.http.endpoints import served_model
from wizard.probes.http.lean_http import tls_context
from wizard.probes.http.load import Progress, run_load, sample_values
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec
from wizard.probes.readers.metrics import MetricsSnapshot, delta, scrape
from wizard.probes.runner import report_progress
from wizard.workload import body_sha256, prompt_words

WATCH_INTERVAL_S = 0.2
DEFAULTS: dict[str, Any] = {
    "path": "direct", "endpoint": "completions", "input_tokens": 64, "max_tokens": 64,
    "concurrency": 4, "requests": 16, "warmup": 2, "stagger_ms": 0, "shared_prefix_tokens": 0,
    "vary_part": "",
}  # fmt: skip
# ``vary_part`` of a replayed body: its per-request part fresh in every request, where it stands
# or moved after the prompt (the prefix cache then sees the request's own shape).
VARY_PARTS = {"in_place": False, "at_end": True}
# How a round none of whose requests succeeded is reported (engine_state reads it back).
ALL_FAILED = "every request of this round failed"
# The fewest words of its own a shared-prefix request keeps once its length is clamped.
MIN_OWN_TOKENS = 64


def budget_estimate(input_tokens: int, stall_ms: Any, prefill_ms: Any) -> int | None:
    """The server's prefill tokens per step, estimated from the round's own timing.

    With chunked prefill, a prompt of P tokens is prefilled in steps of the budget B, and a stream
    decoding meanwhile waits one step per gap: its longest gap is one step of B tokens, the
    prompt's prefill about P / B of them. So P x longest gap / prefill time is about B, and never
    more than P (one step holds the whole prompt). It is an estimate, not a bound (the longest gap
    is a tail, a step's fixed costs lengthen it): a rule claims a direction from it only with a
    wide margin. Only a round of long prompts sent while others decode (the batch stage's) says
    much: elsewhere it is a small number, true and useless.
    """
    if not stall_ms or not prefill_ms:
        return None
    return int(min(input_tokens, input_tokens * float(stall_ms) / float(prefill_ms)))


def flat_summary(summary: dict[str, Any]) -> dict[str, Any]:
    """``{"ttft_p50": ..., "tpot_p99": ..., "succeeded": ...}`` from a stream-report summary."""
    flat: dict[str, Any] = {}
    for segment in ("ttft", "tpot", "itl", "e2e"):
        for point, value in summary[f"{segment}_ms"].items():
            flat[f"{segment}_{point}"] = value
    flat.update(
        succeeded=summary["succeeded"], requests=summary["requests"], errors=summary["errors"]
    )
    return flat


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Measure one round and return its facts (the values too, so rounds can be compared later)."""
    settings = {**DEFAULTS, **params}
    url = ctx.url_for(settings["path"])
    async with httpx.AsyncClient(
        verify=tls_context(), timeout=httpx.Timeout(ctx.timeout_s, connect=10.0)
    ) as client:
        model = ctx.model or await served_model(client, ctx.target, ctx.headers)
        request = request_spec(ctx, settings, model)
        watcher = _ServerWatch(client, ctx.target)
        before = await watcher.snapshot()
        watching = asyncio.create_task(watcher.run())
        began = time.monotonic()

        def progress(now: Progress) -> None:
            report_progress(ctx, now.done, now.total, now.failed, began)

        concurrency, requests = int(settings["concurrency"]), int(settings["requests"])
        looks = _Looks(ctx.question, requests, concurrency) if ctx.question is not None else None
        try:
            result = await run_load(
                url, request, concurrency=concurrency, requests=requests,
                warmup=int(settings["warmup"]), headers=ctx.headers, timeout_s=ctx.timeout_s,
                stagger_s=float(settings["stagger_ms"]) / 1000, on_progress=progress,
                looks=looks.progress.looks if looks else (), until=looks.until if looks else None,
            )  # fmt: skip
        finally:
            watching.cancel()
        after = await watcher.snapshot()
    if not result.ok_samples:
        errors = result.to_dict()["steady"]["summary"]["errors"]
        first = next((s.error for s in result.samples if s.error), "no samples")
        counts = ", ".join(f"{kind} x{n}" for kind, n in errors.items())
        raise WizardError(f"{ALL_FAILED} ({counts}): {first}")
    spec = MeasurementSpec(
        model=model, endpoint=request.endpoint, input_tokens=request.input_tokens,
        output_tokens=request.max_tokens, concurrency=result.concurrency, access_path=url,
        warm_state="steady",
        request_body=body_sha256(request.template) if request.template else body_hash(ctx),
    )  # fmt: skip
    report = result.to_dict()
    measurement = result.measurement(spec)
    steady = flat_summary(report["steady"]["summary"])
    server = watcher.summary(before, after, [s for s in (*result.warmup, *result.samples) if s.ok])
    # The engine's own prefill time leaves the queue and the network out; without it, TTFT.
    prefill_ms = server.get("prefill_mean_ms") or steady["ttft_p50"]
    client = report["client"]
    client["timings_doubtful"] = timings_doubtful(
        client, server.get("itl_mean_ms") or steady["tpot_p50"]
    )
    return {
        "path": settings["path"],
        "shared_prefix_tokens": request.shared_prefix_tokens,
        "url": url,
        "model": model,
        "spec": asdict(spec),
        # What the KV cache must hold for the round: every stream's prompt and output at once.
        "demand_tokens": spec.concurrency * (spec.input_tokens + spec.output_tokens),
        "fingerprint": spec.fingerprint(),
        "steady": steady,
        # Prompt words a prefix cache may have served are not counted.
        "budget_estimate": budget_estimate(
            request.input_tokens - request.shared_prefix_tokens, steady["itl_p99"], prefill_ms
        ),
        "cold": flat_summary(report["cold"]["summary"]) if report["cold"] else None,
        "burst": report["steady"]["summary"]["burst"],
        "client": client,
        "client_saturated": report["client"]["saturated"],
        "wall_s": result.wall_s,
        "values": measurement.values,
        "server": server,
        # A round that stopped once it had answered its question: after how many of its budget.
        "sequential": looks.progress.to_dict(len(result.samples)) if looks else None,
    }


class _Looks:
    """A round's sequential looks (sequential.py): what each found, and whether to stop."""

    def __init__(self, question: Question, requests: int, concurrency: int) -> None:
        self.question = question
        plan = question.plan(requests, concurrency)
        self.progress = LookProgress(question.about, requests, plan, budget_s=question.max_s)
        self.began = time.monotonic()

    def until(self, samples: list[StreamSample]) -> bool:
        self.progress.taken.append(len(samples))
        self.progress.answered = self.question.answered(
            sample_values(samples), len(self.progress.looks)
        )
        spent = time.monotonic() - self.began
        self.progress.out_of_time = (
            not self.progress.answered and self.question.max_s is not None
            and spent > self.question.max_s
        )  # fmt: skip
        return self.progress.answered or self.progress.out_of_time


def request_spec(ctx: Any, settings: dict[str, Any], model: str) -> RequestSpec:
    """What one round sends: its own synthetic prompt, or the incident's body (``replay_body``)."""
    workload = ctx.workload
    template: dict[str, Any] | None = workload.body if workload is not None else None
    if settings.get("unconstrained") and workload is not None:
        template = workload.unconstrained_body()  # the contrast round: no output constraint
    max_tokens = int(settings["max_tokens"])
    input_tokens = int(settings["input_tokens"])
    replay = bool(settings.get("replay_body"))
    if replay and template is not None:
        # Recorded as the spec: the body's prompt in words, its own output limit (0: none set).
        input_tokens = prompt_words(template)
        limit = template.get("max_completion_tokens", template.get("max_tokens"))
        max_tokens = limit if isinstance(limit, int) and not isinstance(limit, bool) else 0
    elif ctx.max_model_len:  # a long-prompt round must still fit the server's context
        input_tokens = max(1, min(input_tokens, int(ctx.max_model_len) - max_tokens - 64))
    shared = (
        0
        if replay and template is not None
        else max(0, min(int(settings["shared_prefix_tokens"]), input_tokens - MIN_OWN_TOKENS))
    )
    varying = None
    if replay and template is not None and settings.get("vary_part") in VARY_PARTS:
        from wizard.prompt_shape import find_varying

        varying = find_varying(template)
    return RequestSpec(
        model=model,
        endpoint=settings["endpoint"],
        input_tokens=input_tokens,
        max_tokens=max_tokens,
        distinct=varying is None,
        varying=varying,
        varying_at_end=VARY_PARTS.get(settings.get("vary_part", ""), False),
        shared_prefix_tokens=shared,
        round_tag=secrets.token_hex(4) if shared else "",
        template=template,
        replay_prompt=replay and template is not None,
    )


def itl_median_facts(window: dict[str, Any]) -> dict[str, float | None]:
    """``itl_p50_low_ms`` < the round's median gap <= ``itl_p50_high_ms`` (None: above the last)."""
    low, high = window["server_itl_p50_low_s"], window["server_itl_p50_high_s"]
    return {"itl_p50_low_ms": None if low is None else low * 1000,
            "itl_p50_high_ms": None if low is None or high is None else high * 1000}  # fmt: skip


def body_hash(ctx: Any) -> str | None:
    """The incident body's hash for the spec (rounds of two bodies never compare)."""
    return ctx.workload.body_sha256 if ctx.workload is not None else None


class _ServerWatch:
    """Scrapes ``/metrics`` during a round; a server without metrics just yields nothing."""

    def __init__(self, client: httpx.AsyncClient, base_url: str) -> None:
        self.client = client
        self.base_url = base_url
        self.samples: list[MetricsSnapshot] = []

    async def snapshot(self) -> MetricsSnapshot | None:
        try:
            snap = await scrape(self.client, self.base_url)
        except WizardError:
            return None
        self.samples.append(snap)
        return snap

    async def run(self) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            await self.snapshot()

    def summary(
        self, before: MetricsSnapshot | None, after: MetricsSnapshot | None, samples: list[Any]
    ) -> dict[str, Any]:
        usable = [s for s in self.samples if not s.stats_disabled]
        if before is None or after is None or not usable:
            return {"available": False}

        def peak(values: list[float | None]) -> float | None:
            present = [v for v in values if v is not None]
            return max(present) if present else None

        change = delta(before, after)
        server_ttft = change["server_ttft_mean_s"]
        queried, hits = change["prefix_cache_queries"], change["prefix_cache_hits"]
        # The server's TTFT starts when the engine sees the request; the client's includes the
        # proxy, the network and the API server (facts §1.1). Both are means over the round's
        # requests, its cold ones too (the server's histogram counts every request of the round;
        # those a round that answered its question dropped on their way are in the server's
        # count, ``engine_requests``, and not the client's).
        client_ttft = [s.ttft_ms for s in samples if s.ttft_ms is not None]
        outside_ms = (
            sum(client_ttft) / len(client_ttft) - server_ttft * 1000
            if client_ttft and server_ttft is not None
            else None
        )
        waiting = [s.waiting for s in usable if s.waiting is not None]
        queue, prefill = change["server_queue_mean_s"], change["server_prefill_mean_s"]
        return {
            "available": True,
            "generation": after.generation,
            # Requests the server had answered before this round (its lifetime TTFT count): a
            # server that served before is past its cold start, whatever its first samples say.
            "requests_before": before.ttft_s.get("count", 0.0),
            # The requests the engine gave a first token during the round (its TTFT count).
            "engine_requests": after.ttft_s.get("count", 0.0) - before.ttft_s.get("count", 0.0),
            # The engine's own word on queueing: how much of its TTFT requests spent waiting.
            "queue_mean_ms": queue * 1000 if queue is not None else None,
            "queue_share_of_ttft": queue / server_ttft
            if queue is not None and server_ttft
            else None,
            "waiting_max": peak([s.waiting for s in usable]),
            # Arrivals wait a step for admission: only waiting seen in most scrapes is a queue.
            "waiting_share": sum(1 for w in waiting if w > 0) / len(waiting) if waiting else None,
            "running_max": peak([s.running for s in usable]),
            "kv_usage_max": peak([s.kv_cache_usage for s in usable]),
            "preemptions": change["preemptions"],
            "server_ttft_mean_ms": server_ttft * 1000 if server_ttft is not None else None,
            # The API server process's CPU over the round, in cores (None with several of them).
            "api_server_cpu_cores": change["api_server_cpu_cores"],
            # The engine's prefill time (scheduled to first token): no queue, no network.
            "prefill_mean_ms": prefill * 1000 if prefill is not None else None,
            "ttft_outside_engine_ms": outside_ms,
            # The engine's own mean gap between tokens over the round: the pace of the stream,
            # which a starved client cannot corrupt (its own TPOT reads ~0 when a whole stream
            # arrives in one read).
            "itl_mean_ms": itl * 1000 if (itl := change["server_itl_mean_s"]) is not None else None,
            "itl_note": change["itl_note"],
            # The engine's own median gap between tokens, as the bucket that holds it: the round's
            # plain decode step, with no client lag and no prefill stall in it.
            **itl_median_facts(change),
            "kv_cache_tokens": after.kv_cache_tokens,
            "num_gpu_blocks": after.num_gpu_blocks,
            "block_size": after.block_size,
            "num_gpu_blocks_override": after.num_gpu_blocks_override,
            "gpu_memory_utilization": after.gpu_memory_utilization,
            "enable_prefix_caching": after.enable_prefix_caching,
            "enable_extensible_kv_cache": after.enable_extensible_kv_cache,
            # Prompt tokens of this round the server looked up in its prefix cache, and found.
            "prefix_cache_queries": queried,
            "prefix_cache_hits": hits,
            "prefix_cache_hit_rate": hits / queried if queried and hits is not None else None,
            # Speculative decoding over this round (all None when the server does not speculate).
            **{key: value for key, value in change.items() if key.startswith("spec_")},
        }
