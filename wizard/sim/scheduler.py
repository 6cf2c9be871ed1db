"""A pure model of vLLM V1's scheduler: one call plans one engine step, another applies it.

It follows vLLM 0.34 (``vllm/v1/core/sched/scheduler.py``) where latency is concerned:
running requests first (decodes and unfinished prefill chunks), then waiting requests with the
token budget left over, at most ``max_num_seqs`` running; prompts are chunked to the remaining
budget when chunked prefill is on; the KV cache is ``num_gpu_blocks`` blocks of ``block_size``
tokens; a new request is admitted only when its whole prompt fits (``scheduler_reserve_full_isl``);
when a running request needs a block and none is free, the newest running request is preempted in
RECOMPUTE mode (its blocks freed, its progress reset, back to the front of the queue). With prefix
caching on (vLLM V1's default), an admitted request first reuses the cached full blocks its prompt
begins with and prefills only the rest (``wizard/sim/prefix_cache.py``). With speculative decoding
(``num_speculative_tokens`` k), every decoding request is scheduled its last token plus k drafts,
within the budget (vLLM's ``num_tokens_with_spec``); the step verifies them, keeps the drafts up to
the first rejected one and adds the target's own token, so a step yields 1 + accepted tokens and
the rejected drafts' compute is lost.

No clocks and no I/O here: the engine loop supplies time and delivers tokens.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

from wizard.sim.prefix_cache import PrefixCache, block_hashes


@dataclass(eq=False)
class SimRequest:
    """One request as the scheduler sees it."""

    request_id: str
    prompt_tokens: int
    max_tokens: int
    num_output: int = 0
    num_computed: int = 0
    num_blocks: int = 0
    num_preemptions: int = 0
    finished: bool = False
    # The prompt's tokens (the simulator's words), which the prefix cache hashes; empty: uncached.
    prompt: tuple[str, ...] = ()
    block_hashes: list[int] | None = None
    # The leading blocks this request holds through the prefix cache (shared, counted once).
    cached_blocks: list[int] = field(default_factory=list)
    # Its structured-output constraint's size in characters (wizard.sim.structured); 0: none.
    grammar_chars: int = 0

    @property
    def num_tokens(self) -> int:
        """Prompt plus every token generated so far (what a recompute must prefill again)."""
        return self.prompt_tokens + self.num_output


@dataclass
class StepPlan:
    """What one engine step computes: tokens per request, and which of them are plain decodes."""

    scheduled: list[tuple[SimRequest, int]] = field(default_factory=list)
    prefill_tokens: int = 0
    decode_seqs: int = 0
    preempted: list[SimRequest] = field(default_factory=list)
    # Requests taken from the waiting queue in this step, with the tokens they looked up in the
    # prefix cache (the prompt, plus what they had generated before a preemption) and the tokens
    # it had cached; empty with prefix caching off (vLLM then looks nothing up).
    admitted: list[tuple[SimRequest, int, int]] = field(default_factory=list)
    # Speculative drafts scheduled per decoding request, and (filled in when the step completes)
    # each verification's (drafted, accepted) for the server's spec-decode counters.
    drafts: dict[SimRequest, int] = field(default_factory=dict)
    verified: list[tuple[int, int]] = field(default_factory=list)
    # KV-cache tokens the step's attention reads: each scheduled request's context up to the end
    # of its new tokens (what decode steps at a long context spend their time on).
    context_tokens: int = 0

    @property
    def empty(self) -> bool:
        """True when the step would compute nothing."""
        return not self.scheduled

    @property
    def total_tokens(self) -> int:
        """Tokens computed in the step (the ``vllm:iteration_tokens_total`` observation)."""
        return self.prefill_tokens + self.decode_seqs + self.draft_tokens

    @property
    def draft_tokens(self) -> int:
        """Speculative tokens the step verifies."""
        return sum(self.drafts.values())


@dataclass(frozen=True)
class TokenOutput:
    """A token produced by a step for one request."""

    request: SimRequest
    index: int
    finished: bool


class Scheduler:
    """The waiting queue, the running list and the KV-block pool."""

    def __init__(
        self,
        *,
        max_num_batched_tokens: int,
        max_num_seqs: int,
        num_gpu_blocks: int,
        block_size: int,
        enable_chunked_prefill: bool,
        enable_prefix_caching: bool = False,
        num_speculative_tokens: int = 0,
        draft_acceptance_rate: float = 0.0,
    ) -> None:
        self.max_num_batched_tokens = max_num_batched_tokens
        self.max_num_seqs = max_num_seqs
        self.num_gpu_blocks = num_gpu_blocks
        self.block_size = block_size
        self.enable_chunked_prefill = enable_chunked_prefill
        self.free_blocks = num_gpu_blocks
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.preemptions_total = 0
        self.prefix_cache = PrefixCache() if enable_prefix_caching else None
        self.num_speculative_tokens = num_speculative_tokens
        self.draft_acceptance_rate = draft_acceptance_rate
        # Seeded: a run's acceptances repeat; no clock, no global state.
        self._random = random.Random(0)

    # -- queue management -------------------------------------------------------------------

    def add(self, request: SimRequest) -> None:
        """Queue a new request behind the others (FCFS)."""
        self.waiting.append(request)

    def abort(self, request: SimRequest) -> None:
        """Drop a request wherever it is (client went away) and free its blocks."""
        if request in self.running:
            self.running.remove(request)
        elif request in self.waiting:
            self.waiting.remove(request)
        self._free(request)
        request.finished = True

    @property
    def has_work(self) -> bool:
        """True while any request is waiting or running."""
        return bool(self.waiting or self.running)

    @property
    def kv_usage(self) -> float:
        """Fraction of KV blocks in use, 0..1 (``vllm:kv_cache_usage_perc``)."""
        return 1.0 - self.free_blocks / self.num_gpu_blocks

    # -- one step ---------------------------------------------------------------------------

    def schedule(self) -> StepPlan:
        """Plan the next step: running requests first, then admissions from the waiting queue."""
        plan = StepPlan()
        budget = self.max_num_batched_tokens
        index = 0
        while index < len(self.running) and budget > 0:
            request = self.running[index]
            new_tokens = min(request.num_tokens - request.num_computed, budget)
            if self._is_decode(request):
                new_tokens += min(self.num_speculative_tokens, budget - new_tokens)
            if not self._allocate_or_preempt(request, new_tokens, plan):
                break  # the request preempted itself; nothing after it is scheduled
            self._add_to_plan(plan, request, new_tokens)
            budget -= new_tokens
            index += 1
        if plan.preempted:
            # vLLM schedules no new request in a step that had to preempt.
            return plan
        while self.waiting and len(self.running) < self.max_num_seqs and budget > 0:
            request = self.waiting[0]
            hit = self._cache_hit(request)
            remaining = request.num_tokens - len(hit) * self.block_size
            if not self.enable_chunked_prefill and remaining > budget:
                break
            new_tokens = min(remaining, budget)
            # The whole prompt must fit before the request is admitted; a cached block it reuses
            # while free stops being free.
            reused_free = sum(1 for block in hit if self._is_free_cached(block))
            needed = math.ceil(request.num_tokens / self.block_size) - len(hit)
            if needed > self.free_blocks - reused_free:
                break
            if self.prefix_cache is not None:
                plan.admitted.append((request, request.num_tokens, len(hit) * self.block_size))
                self._reuse(request, hit)
            self._take_blocks(request, new_tokens)
            self.waiting.popleft()
            self.running.append(request)
            self._add_to_plan(plan, request, new_tokens)
            budget -= new_tokens
        return plan

    def complete(self, plan: StepPlan) -> list[TokenOutput]:
        """Apply a planned step: advance progress and emit a token for every finished forward pass."""
        outputs: list[TokenOutput] = []
        for request, new_tokens in plan.scheduled:
            if request.finished:
                continue  # aborted while the step ran
            drafts = plan.drafts.get(request, 0)
            accepted = self._accepted(drafts)
            if drafts:
                plan.verified.append((drafts, accepted))
            # Rejected drafts are not computed tokens: the next step starts after the accepted.
            request.num_computed += new_tokens - drafts + accepted
            self._cache_computed_blocks(request)
            if request.num_computed < request.num_tokens:
                continue  # a prefill chunk; the prompt is not complete yet
            for _ in range(1 + accepted):  # the accepted drafts and the target's own token
                request.num_output += 1
                done = request.num_output >= request.max_tokens
                outputs.append(TokenOutput(request, request.num_output, done))
                if done:
                    self.running.remove(request)
                    self._free(request)
                    request.finished = True
                    break
        return outputs

    def _accepted(self, drafts: int) -> int:
        """Drafts kept: each accepted with the configured chance, up to the first rejected."""
        accepted = 0
        while accepted < drafts and self._random.random() < self.draft_acceptance_rate:
            accepted += 1
        return accepted

    # -- helpers ----------------------------------------------------------------------------

    def _add_to_plan(self, plan: StepPlan, request: SimRequest, new_tokens: int) -> None:
        plan.scheduled.append((request, new_tokens))
        plan.context_tokens += request.num_computed + new_tokens
        if self._is_decode(request):
            plan.decode_seqs += 1
            if new_tokens > 1:
                plan.drafts[request] = new_tokens - 1
        else:
            plan.prefill_tokens += new_tokens

    @staticmethod
    def _is_decode(request: SimRequest) -> bool:
        return request.num_output > 0 and request.num_tokens - request.num_computed == 1

    def _blocks_needed(self, request: SimRequest, new_tokens: int) -> int:
        total = math.ceil((request.num_computed + new_tokens) / self.block_size)
        return max(0, total - request.num_blocks)

    def _take_blocks(self, request: SimRequest, new_tokens: int) -> None:
        needed = self._blocks_needed(request, new_tokens)
        if self.prefix_cache is not None:
            # Free blocks without a cached prefix go first; then the oldest cached ones are evicted.
            blank = self.free_blocks - self.prefix_cache.evictable
            self.prefix_cache.evict(needed - blank)
        self.free_blocks -= needed
        request.num_blocks += needed

    # -- prefix cache -------------------------------------------------------------------------

    def _hashes(self, request: SimRequest) -> list[int]:
        if request.block_hashes is None:
            request.block_hashes = block_hashes(request.prompt, self.block_size)
        return request.block_hashes

    def _cache_hit(self, request: SimRequest) -> list[int]:
        """The cached blocks a waiting request can start from (none with caching off)."""
        if self.prefix_cache is None:
            return []
        # At least one token is computed, for its logits: a fully cached prompt recomputes its
        # last block (vLLM caps the hit at num_tokens - 1, in whole blocks).
        most = (request.num_tokens - 1) // self.block_size
        return self.prefix_cache.longest_hit(self._hashes(request), most)

    def _is_free_cached(self, block: int) -> bool:
        return self.prefix_cache is not None and self.prefix_cache.is_free(block)

    def _reuse(self, request: SimRequest, hit: list[int]) -> None:
        assert self.prefix_cache is not None
        for block in hit:
            if self.prefix_cache.acquire(block):
                self.free_blocks -= 1
        request.cached_blocks = list(hit)
        request.num_blocks = len(hit)
        request.num_computed = len(hit) * self.block_size

    def _cache_computed_blocks(self, request: SimRequest) -> None:
        """Every prompt block the step completed joins the cache, in order from the start."""
        if self.prefix_cache is None:
            return
        hashes = self._hashes(request)
        full = min(request.num_computed // self.block_size, len(hashes))
        for index in range(len(request.cached_blocks), full):
            if not self.prefix_cache.register(hashes[index]):
                return
            request.cached_blocks.append(hashes[index])

    def _allocate_or_preempt(self, request: SimRequest, new_tokens: int, plan: StepPlan) -> bool:
        """Find blocks for a running request, preempting the newest running ones if needed."""
        while self._blocks_needed(request, new_tokens) > self.free_blocks:
            victim = self.running[-1]
            self._preempt(victim, plan)
            if victim is request:
                return False
        self._take_blocks(request, new_tokens)
        return True

    def _preempt(self, victim: SimRequest, plan: StepPlan) -> None:
        # The victim is the newest running request, so it was not scheduled earlier in this step.
        self.running.remove(victim)
        self._free(victim)
        victim.num_computed = 0
        victim.num_preemptions += 1
        self.preemptions_total += 1
        self.waiting.appendleft(victim)
        plan.preempted.append(victim)

    def _free(self, request: SimRequest) -> None:
        own = request.num_blocks - len(request.cached_blocks)
        released = 0
        if self.prefix_cache is not None:
            released = sum(1 for block in request.cached_blocks if self.prefix_cache.release(block))
        self.free_blocks += own + released
        request.num_blocks = 0
        request.cached_blocks = []
