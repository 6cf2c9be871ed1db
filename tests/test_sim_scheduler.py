"""The pure scheduler and the step-time model (no server involved)."""

from __future__ import annotations

import pytest

from wizard.errors import ConfigError
from wizard.sim.config import SimConfig, StartupError, resolve
from wizard.sim.scheduler import Scheduler, SimRequest
from wizard.sim.steptime import step_time_ms


def make(blocks: int = 1000, budget: int = 512, seqs: int = 8, block_size: int = 16,
         chunked: bool = True) -> Scheduler:  # fmt: skip
    return Scheduler(max_num_batched_tokens=budget, max_num_seqs=seqs, num_gpu_blocks=blocks,
                     block_size=block_size, enable_chunked_prefill=chunked)  # fmt: skip


def run_to_end(scheduler: Scheduler, limit: int = 10_000) -> int:
    steps = 0
    while scheduler.has_work and steps < limit:
        scheduler.complete(scheduler.schedule())
        steps += 1
    return steps


def test_prefill_then_one_token_per_decode_step() -> None:
    scheduler = make()
    request = SimRequest("a", prompt_tokens=100, max_tokens=3)
    scheduler.add(request)
    plan = scheduler.schedule()
    assert plan.prefill_tokens == 100 and plan.decode_seqs == 0
    outputs = scheduler.complete(plan)
    assert [o.index for o in outputs] == [1]  # the prefill step samples the first token
    plan = scheduler.schedule()
    assert plan.prefill_tokens == 0 and plan.decode_seqs == 1
    scheduler.complete(plan)
    outputs = scheduler.complete(scheduler.schedule())
    assert outputs[0].finished and outputs[0].index == 3
    assert not scheduler.has_work
    assert scheduler.free_blocks == 1000  # everything returned


def test_long_prompt_is_chunked_to_the_budget() -> None:
    scheduler = make(budget=256)
    scheduler.add(SimRequest("a", prompt_tokens=1000, max_tokens=1))
    chunks = []
    while scheduler.has_work:
        plan = scheduler.schedule()
        chunks.append(plan.prefill_tokens)
        scheduler.complete(plan)
    assert chunks == [256, 256, 256, 232]


def test_running_requests_are_scheduled_before_waiting_prefills() -> None:
    scheduler = make(budget=300)
    decoding = SimRequest("old", prompt_tokens=10, max_tokens=50)
    scheduler.add(decoding)
    scheduler.complete(scheduler.schedule())
    scheduler.add(SimRequest("new", prompt_tokens=1000, max_tokens=5))
    plan = scheduler.schedule()
    assert plan.scheduled[0][0] is decoding
    assert plan.decode_seqs == 1
    assert plan.prefill_tokens == 299  # the new prompt gets what is left of the budget


def test_chunked_prefill_off_waits_for_a_budget_that_fits() -> None:
    scheduler = make(budget=300, chunked=False)
    scheduler.add(SimRequest("a", prompt_tokens=200, max_tokens=20))
    scheduler.complete(scheduler.schedule())
    scheduler.add(SimRequest("b", prompt_tokens=299, max_tokens=5))
    plan = scheduler.schedule()  # 1 decode + 299 would be 300: fits exactly
    assert plan.prefill_tokens == 299
    scheduler.add(SimRequest("c", prompt_tokens=299, max_tokens=5))
    plan = scheduler.schedule()  # 2 decodes leave 298: c must wait, not be chunked
    assert all(r.request_id != "c" for r, _ in plan.scheduled)


def test_max_num_seqs_caps_running() -> None:
    scheduler = make(seqs=2)
    for name in "abcd":
        scheduler.add(SimRequest(name, prompt_tokens=5, max_tokens=10))
    scheduler.schedule()
    assert len(scheduler.running) == 2 and len(scheduler.waiting) == 2


def test_preemption_evicts_the_newest_running_request_and_recomputes_it() -> None:
    # 6 blocks of 16 tokens = 96 tokens; two requests of 40 prompt tokens grow until one must go.
    scheduler = make(blocks=6, block_size=16)
    first = SimRequest("first", prompt_tokens=40, max_tokens=40)
    second = SimRequest("second", prompt_tokens=40, max_tokens=40)
    scheduler.add(first)
    scheduler.add(second)
    preempted = []
    outputs_of_second = 0
    for _ in range(200):
        if not scheduler.has_work:
            break
        plan = scheduler.schedule()
        preempted.extend(r.request_id for r in plan.preempted)
        outputs_of_second += sum(1 for o in scheduler.complete(plan) if o.request is second)
    assert preempted and set(preempted) == {"second"}
    assert second.num_preemptions >= 1 and first.num_preemptions == 0
    assert scheduler.preemptions_total == len(preempted)
    assert outputs_of_second == 40  # recompute does not repeat or lose tokens
    assert first.finished and second.finished
    assert scheduler.free_blocks == 6


def test_admission_requires_the_whole_prompt_to_fit() -> None:
    scheduler = make(blocks=4, block_size=16, budget=16)
    scheduler.add(SimRequest("big", prompt_tokens=80, max_tokens=1))  # needs 5 blocks > 4
    assert scheduler.schedule().empty


def test_abort_frees_blocks_and_slots() -> None:
    scheduler = make()
    request = SimRequest("a", prompt_tokens=100, max_tokens=100)
    scheduler.add(request)
    plan = scheduler.schedule()
    scheduler.abort(request)
    assert scheduler.complete(plan) == []
    assert not scheduler.has_work and scheduler.free_blocks == 1000


def test_step_time_model() -> None:
    base = SimConfig()
    decode = step_time_ms(base, 0, 1)
    assert 10 <= decode <= 20  # tens of ms per decode step (8B on one data-centre GPU)
    assert 4000 <= 100 / base.costs.per_prefill_token_ms <= 10000  # thousands of tokens / 100 ms
    pcie = base.replace(tensor_parallel_size=4, interconnect="pcie")
    nvlink = base.replace(tensor_parallel_size=4, interconnect="nvlink")
    assert step_time_ms(pcie, 0, 8) > step_time_ms(nvlink, 0, 8) + 10
    pipeline = base.replace(pipeline_parallel_size=4, interconnect="pcie")
    assert step_time_ms(pipeline, 0, 8) < step_time_ms(pcie, 0, 8)
    eager = base.replace(enforce_eager=True)
    assert step_time_ms(eager, 0, 8) > step_time_ms(base, 0, 8)


def test_decode_steps_read_the_kv_cache_at_the_memory_bandwidth() -> None:
    """The same batch decodes slower at a longer context, the more so the less bandwidth."""
    h100 = SimConfig()
    l4 = h100.replace(gpu_memory_bandwidth_gbps=300.0)
    short, long = 4 * 100, 4 * 12_000  # four sequences' contexts
    assert step_time_ms(h100, 0, 4, context_tokens=long) - step_time_ms(h100, 0, 4) < 2
    kv_read = step_time_ms(l4, 0, 4, context_tokens=long) - step_time_ms(l4, 0, 4)
    assert kv_read == pytest.approx(long * 131072 / 300e9 * 1000)  # 6.3 GB at 300 GB/s
    assert step_time_ms(l4, 0, 4, context_tokens=short) < step_time_ms(l4, 0, 4) + 0.2
    # Tensor parallelism splits the KV heads: each rank reads its share.
    tp2 = l4.replace(tensor_parallel_size=2)
    assert step_time_ms(tp2, 0, 4, context_tokens=long) - step_time_ms(tp2, 0, 4) == pytest.approx(
        kv_read / 2
    )


def test_a_step_reads_each_scheduled_sequences_context() -> None:
    scheduler = make(block_size=16)
    for name in "ab":
        scheduler.add(SimRequest(name, prompt_tokens=100, max_tokens=5))
    first = scheduler.schedule()
    assert first.context_tokens == 200  # two prompts' prefill: their own 100 tokens each
    scheduler.complete(first)
    assert scheduler.schedule().context_tokens == 2 * 101  # each decode reads its whole context


def test_step_time_of_multi_node_layouts() -> None:
    """TP across nodes pays the network on every all-reduce; tp = GPUs per node, pp = nodes
    (the documented multi-node layout) keeps the all-reduce on NVLink and crosses once a step."""
    base = SimConfig(interconnect="nvlink")
    across = base.replace(tensor_parallel_size=4, nodes=2)
    documented = base.replace(tensor_parallel_size=2, pipeline_parallel_size=2, nodes=2)
    one_node = base.replace(tensor_parallel_size=4)
    assert across.tp_spans_nodes and not documented.tp_spans_nodes
    assert (across.gpus_per_node, documented.gpus_per_node) == (2, 2)
    assert step_time_ms(across, 0, 8) > step_time_ms(documented, 0, 8) + 10
    assert step_time_ms(documented, 0, 8) > step_time_ms(one_node, 0, 8)  # the hop costs a little
    with pytest.raises(ConfigError, match="evenly over 2 nodes"):
        resolve(base.replace(tensor_parallel_size=3, nodes=2))


def test_resolve_applies_vllm_defaults() -> None:
    resolved = resolve(SimConfig())
    assert (resolved.max_num_batched_tokens, resolved.max_num_seqs) == (8192, 1024)
    small_gpu = resolve(SimConfig(gpu_memory_gib=48, gpu_memory_utilization=0.9))
    assert (small_gpu.max_num_batched_tokens, small_gpu.max_num_seqs) == (2048, 256)
    assert resolve(SimConfig(num_gpu_blocks=600, block_size=16)).kv_cache_tokens == 9600
    # CUDA graphs cost KV memory; --enforce-eager gives it back.
    assert resolve(SimConfig(enforce_eager=True)).kv_cache_tokens > resolved.kv_cache_tokens
    # More memory for the engine means more KV cache.
    assert (
        resolve(SimConfig(gpu_memory_utilization=0.95)).kv_cache_tokens > resolved.kv_cache_tokens
    )


def test_an_unset_max_num_seqs_is_lowered_to_a_small_budget_not_refused() -> None:
    """vLLM lowers a default max_num_seqs to the budget (0.32's EngineArgs); only both set by
    hand are refused: the real tier's `--max-num-batched-tokens 64` starts."""
    assert resolve(SimConfig(max_num_batched_tokens=64)).max_num_seqs == 64
    cpu = resolve(SimConfig(device="cpu", max_num_batched_tokens=64, max_model_len=2048))
    assert (cpu.max_num_seqs, cpu.max_num_batched_tokens) == (64, 64)


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (SimConfig(enable_chunked_prefill=False, max_num_batched_tokens=2048),
         "max_num_batched_tokens (2048) is smaller than max_model_len (8192). This effectively "
         "limits the maximum sequence length to max_num_batched_tokens and makes vLLM reject "
         "longer sequences. Please increase max_num_batched_tokens or decrease max_model_len."),
        (SimConfig(max_num_batched_tokens=64, max_num_seqs=128),
         "max_num_batched_tokens (64) must be greater than or equal to max_num_seqs (128)."),
        (SimConfig(num_gpu_blocks=10, block_size=16),
         "To serve at least one request with the model's max seq len (8192)"),
        (SimConfig(gpu_memory_utilization=0.2), "No available memory for the cache blocks."),
        (SimConfig(tensor_parallel_size=3),
         "Total number of attention heads (32) must be divisible by tensor parallel size (3)."),
        (SimConfig(max_model_len=200000),
         "User-specified max_model_len (200000) is greater than the derived max_model_len "
         "(max_position_embeddings=131072 or model_max_length=None in model's config.json). To "
         "allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1."),
        (SimConfig(max_num_seqs=0), "max_num_seqs must be at least 1, got 0."),
        (SimConfig(gpu_memory_utilization=1.5), "gpu_memory_utilization must be in (0, 1]"),
    ],
)  # fmt: skip
def test_resolve_refuses_like_vllm(config: SimConfig, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve(config)
    assert message in str(caught.value)


def test_chunked_prefill_off_with_enough_budget_starts() -> None:
    resolved = resolve(SimConfig(enable_chunked_prefill=False))
    assert resolved.max_num_batched_tokens == 8192  # raised to max(max_model_len, default)


def test_cpu_device_resolves_like_vllm_032_on_cpu() -> None:
    resolved = resolve(SimConfig(device="cpu", max_model_len=2048, cpu_kvcache_space_gib=1))
    # 128-token blocks; 2048 tokens / 128 sequences; 1 GiB of KV cache (VLLM_CPU_KVCACHE_SPACE).
    assert (resolved.block_size, resolved.max_num_batched_tokens, resolved.max_num_seqs) == (
        128, 2048, 128,
    )  # fmt: skip
    assert resolved.kv_cache_memory_bytes == 1024**3
    assert resolved.num_gpu_blocks == 1024**3 // (131072 * 128)
    assert resolved.usable_blocks == resolved.num_gpu_blocks - 1  # the null block
    assert resolved.num_gpu_blocks_from_memory is None  # nothing overridden
    overridden = resolve(
        SimConfig(device="cpu", max_model_len=2048, num_gpu_blocks=17, cpu_kvcache_space_gib=1)
    )
    assert (overridden.kv_cache_tokens, overridden.num_gpu_blocks_from_memory) == (2176, 64)
    assert round(overridden.max_concurrency, 4) == 1.0625
    assert resolve(SimConfig(device="cpu", max_model_len=2048, block_size=16)).block_size == 16
    # The default model and length start: 4 GiB hold 256 blocks of 128 tokens.
    assert resolve(SimConfig(device="cpu")).kv_cache_tokens == 32768


def test_cpu_device_refusals_and_where_they_happen() -> None:
    # vLLM needs max_model_len / block_size + 1 blocks: 16 of 128 cannot serve 2,048 tokens.
    with pytest.raises(StartupError) as caught:
        resolve(
            SimConfig(device="cpu", max_model_len=2048, num_gpu_blocks=16, cpu_kvcache_space_gib=1)
        )
    assert caught.value.stage == "engine_core" and caught.value.blocks_from_memory == 64
    assert "the estimated maximum model length is 1920. Try increasing `gpu_memory_utilization` " \
           "(which also controls CPU memory on the CPU backend)" in str(caught.value)  # fmt: skip
    with pytest.raises(StartupError) as refused:
        resolve(SimConfig(device="cpu", max_model_len=2048, enable_chunked_prefill=False,
                          max_num_batched_tokens=512))  # fmt: skip
    assert refused.value.stage == "api_server"
    assert str(refused.value).startswith(
        "max_num_batched_tokens (512) is smaller than max_model_len (2048)."
    )


# -- prefix caching ---------------------------------------------------------------------------


def cached(blocks: int = 1000, budget: int = 4096, block_size: int = 16) -> Scheduler:
    return Scheduler(max_num_batched_tokens=budget, max_num_seqs=8, num_gpu_blocks=blocks,
                     block_size=block_size, enable_chunked_prefill=True,
                     enable_prefix_caching=True)  # fmt: skip


def prompt(shared: int, own: str, own_tokens: int) -> tuple[str, ...]:
    """A prompt of ``shared`` common words, then ``own_tokens`` words of its own."""
    return ("system",) * shared + (own,) * own_tokens


def admit(scheduler: Scheduler, request: SimRequest) -> tuple[int, int]:
    """Run ``request`` to its end; (prefill tokens of its first step, cached tokens it reused)."""
    scheduler.add(request)
    plan = scheduler.schedule()
    (_, _, hit), *_ = plan.admitted
    first = plan.prefill_tokens
    scheduler.complete(plan)
    run_to_end(scheduler)
    return first, hit


def test_a_repeated_prefix_is_reused_in_whole_blocks() -> None:
    scheduler = cached()
    words = prompt(200, "a", 40)
    assert admit(scheduler, SimRequest("a", 240, 2, prompt=words)) == (240, 0)
    # The 200 shared words fill 12 whole blocks (192 tokens): only the rest is prefilled.
    other = prompt(200, "b", 40)
    assert admit(scheduler, SimRequest("b", 240, 2, prompt=other)) == (48, 192)
    # The same prompt again reuses all but its last block (a token must be computed for logits).
    assert admit(scheduler, SimRequest("c", 240, 2, prompt=words)) == (16, 224)
    assert scheduler.free_blocks == 1000  # cached blocks are free (reusable) once unused


def test_a_prefix_that_differs_at_the_start_is_not_reused() -> None:
    scheduler = cached()
    admit(scheduler, SimRequest("a", 240, 2, prompt=("x", *prompt(239, "a", 0))))
    # Blocks are hashed chained from the start: one different first token changes them all.
    assert admit(scheduler, SimRequest("b", 240, 2, prompt=("y", *prompt(239, "a", 0)))) == (240, 0)


def test_without_prefix_caching_nothing_is_looked_up() -> None:
    scheduler = make(budget=4096)
    words = prompt(200, "a", 40)
    for name in "ab":
        scheduler.add(SimRequest(name, 240, 2, prompt=words))
        plan = scheduler.schedule()
        assert plan.prefill_tokens == 240 and plan.admitted == []
        scheduler.complete(plan)
        run_to_end(scheduler)


def test_cached_blocks_are_shared_while_used_and_evicted_oldest_first() -> None:
    scheduler = cached(blocks=40)
    words = prompt(320, "a", 0)  # 20 blocks
    first = SimRequest("a", 320, 50, prompt=words)
    scheduler.add(first)
    scheduler.complete(scheduler.schedule())
    second = SimRequest("b", 320, 50, prompt=words)
    scheduler.add(second)
    scheduler.complete(scheduler.schedule())
    # The first 19 blocks are held by both yet counted once: a's 20 and the block of its first
    # decoded token, and b's own recomputed last block.
    assert scheduler.free_blocks == 40 - 22
    run_to_end(scheduler)
    assert scheduler.free_blocks == 40
    # A different prompt needs 40 blocks: every cached block is evicted for it, so the old
    # prompt is computed in full afterwards.
    assert admit(scheduler, SimRequest("c", 640, 1, prompt=prompt(0, "c", 640)))[1] == 0
    assert admit(scheduler, SimRequest("d", 320, 1, prompt=words)) == (320, 0)


def test_the_step_loop_idles_until_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """A step's wait never yields to the loop over and over until it is due (a loop kept runnable
    is ranked a CPU hog on a shared machine and woken late: issue #12), and never ends early."""
    import asyncio
    import time

    from wizard.sim import engine

    yields = []
    sleep = asyncio.sleep

    async def counted(delay: float, *args: object) -> None:
        yields.append(delay)
        await sleep(delay)

    monkeypatch.setattr(asyncio, "sleep", counted)

    async def wait() -> tuple[int, int]:
        deadline = time.monotonic_ns() + 30_000_000
        await engine._sleep_until(deadline)
        return deadline, time.monotonic_ns()

    for _ in range(3):
        deadline, woke = asyncio.run(wait())
        assert woke >= deadline
    assert 0 not in yields, f"{yields.count(0)} yields while waiting"


def decode_tpot_ms(config: SimConfig, streams: int, max_tokens: int = 200) -> float:
    """Model-time TPOT of ``streams`` requests decoding together (step times summed, no clock)."""
    spec = config.speculative_config
    scheduler = Scheduler(
        max_num_batched_tokens=8192, max_num_seqs=256, num_gpu_blocks=100_000, block_size=16,
        enable_chunked_prefill=True,
        num_speculative_tokens=spec.num_speculative_tokens if spec else 0,
        draft_acceptance_rate=spec.draft_acceptance_rate if spec else 0.0,
    )  # fmt: skip
    for index in range(streams):
        scheduler.add(SimRequest(f"r{index}", prompt_tokens=100, max_tokens=max_tokens))
    elapsed = 0.0
    first_token_at: float | None = None
    while scheduler.has_work:
        plan = scheduler.schedule()
        elapsed += step_time_ms(config, plan.prefill_tokens, plan.decode_seqs, plan.draft_tokens)
        if scheduler.complete(plan) and first_token_at is None:
            first_token_at = elapsed
    assert first_token_at is not None
    return (elapsed - first_token_at) / (max_tokens - 1)


def test_speculative_decoding_helps_one_stream_and_hurts_a_large_batch() -> None:
    # The scenario's configuration: 4 n-gram drafts, each right 45 % of the time, on a model whose
    # decoding sequences cost 0.5 ms of a step. Nothing in the model
    # names a batch size: the crossover comes from verifying 4 drafts per sequence in every step.
    from wizard.sim.scenarios import get_scenario

    spec = get_scenario("speculative-decoding").apply(SimConfig())
    plain = spec.replace(speculative_config=None)
    assert decode_tpot_ms(spec, 1) < 0.8 * decode_tpot_ms(plain, 1)
    # The walk's loaded round runs 8 streams.
    assert decode_tpot_ms(spec, 8) > 1.1 * decode_tpot_ms(plain, 8)


def test_a_speculative_step_keeps_drafts_up_to_the_first_rejected() -> None:
    scheduler = Scheduler(max_num_batched_tokens=512, max_num_seqs=8, num_gpu_blocks=1000,
                          block_size=16, enable_chunked_prefill=True, num_speculative_tokens=3,
                          draft_acceptance_rate=1.0)  # fmt: skip
    request = SimRequest("r", prompt_tokens=20, max_tokens=9)
    scheduler.add(request)
    scheduler.complete(scheduler.schedule())  # the prefill yields the first token
    plan = scheduler.schedule()
    assert (plan.decode_seqs, plan.draft_tokens, plan.total_tokens) == (1, 3, 4)
    assert len(scheduler.complete(plan)) == 4  # every draft accepted, plus the target's token
    assert plan.verified == [(3, 3)]
    assert request.num_tokens - request.num_computed == 1
    scheduler.draft_acceptance_rate = 0.0
    plan = scheduler.schedule()
    assert len(scheduler.complete(plan)) == 1 and plan.verified == [(3, 0)]
    # Two tokens left: the drafts are still verified, the output stops at max_tokens.
    scheduler.draft_acceptance_rate = 1.0
    plan = scheduler.schedule()
    outputs = scheduler.complete(plan)
    assert [o.index for o in outputs] == [7, 8, 9] and outputs[-1].finished


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "not JSON"),
        ('{"method": "ngram"}', "num_speculative_tokens must be an integer > 0"),
        ('{"method": "ngram", "num_speculative_tokens": 2, "draft_acceptance_rate": 2}',
         "between 0 and 1"),
        ('{"num_speculative_tokens": 2}', "give a method"),
        ('{"method": "ngram", "num_speculative_tokens": 2, "bogus": 1}', "does not know bogus"),
    ],
)  # fmt: skip
def test_speculative_config_refused_with_one_clear_line(text: str, message: str) -> None:
    from wizard.sim.config import parse_speculative_config

    with pytest.raises(ConfigError, match=message):
        parse_speculative_config(text)
