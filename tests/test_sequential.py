"""A round compared with others stops once it has answered (sequential.py), and a round no change
has touched since it was measured is not measured again (rounds.untouched_since)."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.measure.sequential import Question
from wizard.probes.http.load import run_load, sample_values
from wizard.probes.http.stream import RequestSpec
from wizard.walk.comparisons import COMPARED_SEGMENTS

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def round_of(ttft: float, tpot: float, n: int = 16, seed: int = 1) -> dict[str, list[float]]:
    """A round of ``n`` requests whose medians are ``ttft`` and ``tpot``, with 3 % jitter."""
    rng = random.Random(seed)
    jitter = [rng.uniform(0.97, 1.03) for _ in range(n)]
    return {"ttft_ms": [ttft * j for j in jitter], "tpot_ms": [tpot * j for j in jitter],
            "itl_ms": [tpot * j for j in jitter], "itl_request_p50_ms": [tpot * j for j in jitter]}  # fmt: skip


def test_the_plan_looks_once_per_stream_from_the_first_that_can_judge() -> None:
    question = Question([[round_of(100, 10)]], COMPARED_SEGMENTS)
    # Five samples judge (MIN_SAMPLES); at 4 streams the first whole look is 8.
    assert question.plan(16, 4) == [8, 12, 16]
    assert question.plan(16, 8) == [8, 16]
    assert question.plan(8, 2) == [6, 8]
    assert question.plan(4, 4) == [4]  # a round smaller than a look: its full count, once


def test_a_tenfold_change_is_answered_a_close_call_is_not() -> None:
    before = round_of(100, 10)
    question = Question([[before]], COMPARED_SEGMENTS)
    assert question.answered(round_of(10, 10, n=8, seed=2), looks=3)  # 10x faster: decided
    assert question.answered(round_of(100, 10, n=8, seed=2), looks=3)  # the same: within noise
    # 6 % slower in TTFT, with 3 % jitter on 8 samples: across the 5 % band's edge, not decided.
    assert not question.answered(round_of(106, 10, n=8, seed=2), looks=3)


def test_every_state_must_be_decided() -> None:
    baseline, previous = round_of(100, 10), round_of(10, 10, seed=3)
    question = Question([[baseline], [previous]], COMPARED_SEGMENTS)
    assert question.answered(round_of(10, 10, n=8, seed=2), looks=3)
    # Against the baseline decided (faster), against the previous round a close call.
    assert not Question([[baseline], [round_of(10.6, 10, seed=3)]], COMPARED_SEGMENTS).answered(
        round_of(10, 10, n=8, seed=2), looks=3
    )
    assert not Question([], COMPARED_SEGMENTS).answered(round_of(10, 10), looks=1)


def test_more_looks_judge_at_a_stricter_level() -> None:
    """Bonferroni: a verdict one look would take is not taken when the round looks five times."""
    before = round_of(100, 10, seed=4)
    rng = random.Random(9)
    # A 9 % slowdown with 8 % jitter: decided at 95 %, not at 99 % (the interval's low end sits
    # between the 5 % band's edge at the two levels).
    candidates = []
    for seed in range(200):
        rng.seed(seed)
        after = {k: [v * 1.09 * rng.uniform(0.92, 1.08) for v in vs] for k, vs in before.items()}
        question = Question([[before]], ("ttft_ms",))
        if question.answered(after, looks=1) and not question.answered(after, looks=5):
            candidates.append(seed)
    assert candidates  # such a round exists: the level depends on the looks


def looked_load(url: str, requests: int, answer: bool) -> tuple[list[int], list]:
    """A round of ``requests`` at 4 streams whose every look answers ``answer``: the sample
    counts it looked at, and its steady samples."""
    request = RequestSpec(model=MODEL, input_tokens=16, max_tokens=24)
    looked: list[int] = []

    def until(samples: list) -> bool:
        looked.append(len(samples))
        return answer

    result = asyncio.run(run_load(url, request, concurrency=4, requests=requests,
                                  looks=[8, 12, 16], until=until))  # fmt: skip
    return looked, result.samples


def test_a_round_with_a_question_stops_early_and_drops_what_is_in_flight(
    healthy_sim: SimProcess,
) -> None:
    looked, samples = looked_load(healthy_sim.url, 40, answer=True)
    assert looked == [8]
    # Stopped at the first look: the requests on their way then were dropped, not waited for
    # and not failures (before this change the round sent all 40).
    assert len(samples) == 8
    assert all(s.ok for s in samples)
    assert len(sample_values(samples)["ttft_ms"]) == 8


def test_a_round_whose_question_is_never_answered_sends_its_whole_budget(
    healthy_sim: SimProcess,
) -> None:
    looked, samples = looked_load(healthy_sim.url, 16, answer=False)
    assert len(samples) == 16
    assert looked[0] >= 8 and looked[-1] == 16


def test_a_look_never_holds_up_the_streams_in_flight(healthy_sim: SimProcess) -> None:
    """A look runs off the event loop: one that takes a second (a bootstrap on a slow machine)
    leaves the loop free to read the other streams (run on the loop, the client's worst wake-up
    was the look's whole second, and every token meanwhile was stamped late)."""
    import time

    request = RequestSpec(model=MODEL, input_tokens=16, max_tokens=24)

    def slow(samples: list) -> bool:
        time.sleep(1.0)
        return False

    result = asyncio.run(run_load(healthy_sim.url, request, concurrency=4, requests=12,
                                  looks=[8], until=slow))  # fmt: skip
    assert len(result.samples) == 12
    assert result.health.loop_lag_max_ms < 500, result.health.loop_lag_max_ms


def test_looks_take_turns_hold_no_stream_and_none_runs_after_the_answer(
    healthy_sim: SimProcess,
) -> None:
    """A look that is still judging when the next look's samples are in does not run beside
    it (the later one judged at once, and its "not answered" overwrote the earlier one's answer
    in the round's facts); it holds no stream meanwhile (every stream waited for it, which made
    a round longer by each of its looks); and none runs after the answer."""
    import threading
    import time

    request = RequestSpec(model=MODEL, input_tokens=16, max_tokens=8)
    lock = threading.Lock()
    running, most, looked = [0], [0], []

    def slow(samples: list) -> bool:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.8)  # the next look's samples arrive meanwhile
        with lock:
            running[0] -= 1
            looked.append(len(samples))
        return len(samples) >= 8  # answered at its first look past 8

    result = asyncio.run(run_load(healthy_sim.url, request, concurrency=4, requests=400,
                                  looks=[5, 6, 7, 8, 9, 10, 11, 12], until=slow))  # fmt: skip
    assert most[0] == 1, looked
    # Requests of 8 tokens went on during the first look's 0.8 s: held, the other three
    # streams would have brought at most their three requests in flight.
    assert looked[1] - looked[0] >= 8, looked
    assert looked[-1] >= 8 and all(n < 8 for n in looked[:-1]), looked
    assert len(result.samples) < 400, len(result.samples)


def test_a_round_stops_at_its_time_budget_after_its_first_look(healthy_sim: SimProcess) -> None:
    """A question never answered within its seconds: the round stops at the first look past them
    (before this, a round measured its whole count whatever the time)."""
    from wizard.probes.runner import ProbeContext, run_probe

    # A reference no round can be told apart from in 8 samples: wide, centred on the same value.
    reference = {"ttft_ms": [1.0, 1000.0] * 8, "tpot_ms": [1.0, 1000.0] * 8}
    question = Question([[reference]], ("ttft_ms", "tpot_ms"), about="direct", max_s=0.001)
    ctx = ProbeContext(target=healthy_sim.url, question=question)
    params = {"concurrency": 4, "requests": 40, "warmup": 0, "input_tokens": 16, "max_tokens": 8}
    result = asyncio.run(run_probe("measure", ctx, params))
    assert result.error is None, result.error
    sequential = result.facts["sequential"]
    assert sequential["out_of_time"] is True and sequential["answered_after"] is None
    assert sequential["looks"] == [8] and sequential["budget_s"] == 0.001
    # The streams go on while the look runs in its thread (the one that brought the 8th sample
    # sends its next request), so requests that finish meanwhile are measured too: how many
    # depends on the look's time and the machine's, never the round's whole count.
    assert 8 <= result.facts["steady"]["requests"] < 40 and result.facts["wall_s"] > 0, sequential


def test_the_live_line_and_the_table_say_the_budget() -> None:
    from wizard.ui.render_events import busy_text, measurement_table

    call = {"probe": "measure", "round": "proxy#2", "compared_with": "proxy", "budget_s": 7.8,
            "params": {"concurrency": 4, "requests": 16, "input_tokens": 64, "max_tokens": 64}}  # fmt: skip
    assert "at most 16 requests or 8 s" in busy_text(call)
    assert "最多 16 个" in busy_text(call, "zh") and "8 秒" in busy_text(call, "zh")
    row = {"ttft_p50": 1.0, "ttft_p99": 1.0, "tpot_p50": 1.0, "tpot_p99": 1.0, "itl_p99": 1.0,
           "e2e_p50": 1.0, "succeeded": 8, "requests": 8}  # fmt: skip
    answered = {"about": "proxy", "budget": 16, "budget_s": 7.8, "looks": [8],
                "answered_after": 8, "out_of_time": False, "steady_sent": 8}  # fmt: skip
    table = measurement_table({"steady": row, "sequential": answered}, "proxy#2")
    assert "answered after 8 of at most 16 requests (set beside proxy)" in str(table.caption)
    late = {**answered, "answered_after": None, "out_of_time": True}
    table = measurement_table({"steady": row, "sequential": late}, "proxy#2")
    assert "stopped at its time budget (8 s, twice proxy's) after 8 requests" in str(table.caption)


def events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.fixture(scope="module")
def demo_walk(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The demo's walk (nginx in front, its buffering found and turned off)."""
    import shutil
    import subprocess

    if not shutil.which("nginx") and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed: the demo walks without the proxy leg")
    path = tmp_path_factory.mktemp("demo") / "demo.ndjson"
    # At the playbook's depth: the round sizes are what these tests are about.
    done = subprocess.run([*wizard_command("demo", "--auto", "--rounds", "full", "--transcript", str(path))],
                          capture_output=True, text=True, timeout=900, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return events(path)


def test_the_round_after_a_clear_change_stops_at_its_first_look(demo_walk: list[dict]) -> None:
    after = next(e["data"] for e in demo_walk
                 if e["type"] == "probe_result" and e["data"]["round"] == "proxy#2")  # fmt: skip
    sequential = after["facts"]["sequential"]
    # TTFT 130 -> 25 ms through the proxy once buffering is off: decided at the first look.
    assert sequential["about"] == "proxy" and sequential["budget"] == 16
    assert sequential["answered_after"] == sequential["looks"][0] == 8
    assert after["facts"]["steady"]["requests"] == 8


def test_rounds_an_nginx_change_cannot_touch_are_not_measured_again(demo_walk: list[dict]) -> None:
    # The baseline is walked again after the early nginx stage: before, every round was sent a
    # second time (direct, direct_aa, loadgen_before, proxy twice over). Repeats of the first
    # visit (a contended or disagreeing round measured again, proxy#3 while inconclusive) are
    # the walk's own business on a busy machine; nothing direct is measured after the change.
    change = next(i for i, e in enumerate(demo_walk) if e["type"] == "change")
    measured = [(i, e["data"]["round"]) for i, e in enumerate(demo_walk)
                if e["type"] == "probe_result"
                and e["data"]["as"] in ("direct", "direct_aa", "loadgen_before", "proxy")]  # fmt: skip
    before = {r.split("#")[0] for i, r in measured if i < change}
    assert before == {"direct", "direct_aa", "loadgen_before", "proxy"}, measured
    after = [r for i, r in measured if i > change]
    assert after and all(r.startswith("proxy#") for r in after), measured
    notes = [e["data"]["text"] for e in demo_walk if e["type"] == "note"]
    kept = [
        t.split(":")[0] for t in notes if "no change since its last round touches its path" in t
    ]
    assert sorted(kept) == ["direct", "direct_aa", "loadgen_before"]
    unchanged = [t.split(":")[0] for t in notes if "nothing was changed since its last round" in t]
    assert unchanged == ["proxy"]  # measured again after the change already (proxy#2)


def test_a_validation_no_change_touched_is_not_run_again(demo_walk: list[dict]) -> None:
    """LoadGen runs direct to vLLM; the demo's one change is nginx's, which cannot touch that path:
    the run after the last change would measure loadgen_before's state again (5.8 s of the walk)."""
    runs = [e["data"]["as"] for e in demo_walk
            if e["type"] == "probe_result" and e["data"]["probe"] == "validate"]  # fmt: skip
    assert runs == ["loadgen_before"]
    [said] = [e["data"]["text"] for e in demo_walk
              if e["type"] == "note" and e["data"]["text"].startswith("loadgen:")]  # fmt: skip
    assert "no change since loadgen_before touches its path (proxy_buffering (nginx))" in said
    assert not [e for e in demo_walk if e["type"] == "comparison"
                and e["data"]["before"] == "loadgen_before"]  # fmt: skip


def test_a_server_change_measures_every_round_again() -> None:
    """A vLLM change touches every path: nothing is kept (the kv-pressure walk's restart)."""
    from types import SimpleNamespace

    from wizard.playbook import ProbeCall
    from wizard.walk.rounds import untouched_since

    session = SimpleNamespace(changes=[], ran_after={"direct": 0, "proxy": 0},
                              facts={"direct": {"steady": {}}, "proxy": {"steady": {}}})  # fmt: skip
    direct = ProbeCall("measure", "direct", {"path": "direct"}, None)
    proxy = ProbeCall("measure", "proxy", {"path": "proxy"}, None)
    assert untouched_since(session, direct, {"path": "direct"}) == ""  # type: ignore[arg-type]
    session.changes = [{"layer": "nginx", "parameter": "proxy_buffering"}]
    assert untouched_since(session, direct, {"path": "direct"}) == "proxy_buffering (nginx)"  # type: ignore[arg-type]
    assert untouched_since(session, proxy, {"path": "proxy"}) is None  # type: ignore[arg-type]
    session.changes.append({"layer": "vllm", "parameter": "max_num_seqs"})
    assert untouched_since(session, direct, {"path": "direct"}) is None  # type: ignore[arg-type]
    # A round whose last try failed is measured again, whatever changed.
    session.changes, session.facts["direct"] = [], {"error": "every request failed"}
    assert untouched_since(session, direct, {"path": "direct"}) is None  # type: ignore[arg-type]
