"""The real-vLLM tier: the wizard against a real vLLM 0.32 (CPU build) on loopback.

Every assertion is a deterministic fact of the real program (what it serves, logs and counts),
never a timing threshold a busy machine could flip. Walks reach their cause with a change computed
from the server's own values, and where the change is a vLLM flag, the server is started with it
to show that vLLM accepts it (and, for the KV cache, that the preemptions are gone).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import RealVllmPool, assert_walk_exit, wizard_command
from tests.realvllm import MAX_MODEL_LEN, REAL_API_KEY, SERVED_NAME, RealVllm
from wizard.levers.nginx_runner import Nginx, find_nginx
from wizard.levers.refusals import refusals
from wizard.probes.http.lean_http import timing_client
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import Endpoint, RequestSpec, measure_stream
from wizard.record import transcript
from wizard.ui import aio

QUICK = {"run_loadgen": False}  # LoadGen has its own tests


def walk(
    tmp_path: Path, server: RealVllm, *args: str, env: dict[str, str] | None = None,
    answers: dict[str, Any] | None = None, log: bool = True,
) -> transcript.Transcript:  # fmt: skip
    path = tmp_path / f"walk-{len(list(tmp_path.glob('walk-*')))}.ndjson"
    answers_file = tmp_path / "answers.yaml"
    answers_file.write_text(json.dumps(answers if answers is not None else QUICK))
    command = ["run", "--target", server.url, "--answers", str(answers_file)]
    if log:
        command += ["--vllm-log", str(server.log_file)]
    full_env = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "OPENAI_API_KEY")}
    result = subprocess.run(
        wizard_command(*command, *args, "--transcript", str(path)),
        capture_output=True, text=True, timeout=900, env={**full_env, **(env or {})},
    )  # fmt: skip
    end = assert_walk_exit(result, path)
    loaded = transcript.load(path)
    assert (end["outcome"] == "cause_remains") == bool(end["causes_remaining"])
    return loaded


def findings(loaded: transcript.Transcript) -> list[dict[str, Any]]:
    return [e["data"] for e in loaded.events if e["type"] == "finding"]


def causes(loaded: transcript.Transcript) -> set[str]:
    return {f["cause"] for f in findings(loaded)}


def story(loaded: transcript.Transcript) -> str:
    """What a failed cause assertion shows: each round's figures, the noise, what was left
    inconclusive and why, the notes, and the end (a real server's walk is not re-run at will)."""
    lines = []
    for event in loaded.events:
        kind, data = event["type"], event.get("data", {})
        if kind == "measurement":
            steady = data["steady"]
            lines.append(
                f"{data['as']}: TTFT p50 {steady.get('ttft_p50')} p99 {steady.get('ttft_p99')}, "
                f"TPOT p50 {steady.get('tpot_p50')}, client lag {data['client_lag_max_ms']:.1f} ms"
                f"{' (contended)' if data['client_contended'] else ''}"
            )
        elif kind == "probe_result" and isinstance(data.get("facts", {}).get("server"), dict):
            server = data["facts"]["server"]
            lines.append(f"  {data['as']} engine TTFT mean {server.get('server_ttft_mean_ms')}")
        elif kind in ("noise", "inconclusive", "end"):
            lines.append(f"{kind}: {json.dumps(data)[:600]}")
        elif kind == "note":
            lines.append(f"note: {data['text']}")
    return "\n".join(lines)


# A walk on a machine too busy to hold its baseline still says so: the rules that its unstable
# A/A pair could flip are inconclusive. A test that needs the rule judged walks again then, at
# most this many times in all (CI's shared machines had such minutes: one walk's TTFT A/A moved
# +489 % with both cores taken).
JUDGED_WALKS = 3


def unstable_rounds(loaded: transcript.Transcript) -> set[str]:
    """The baseline rounds the walk found unstable (their A/A pair disagreed twice)."""
    noise = [e["data"] for e in loaded.events if e["type"] == "noise"]
    return {n["rounds"][0] for n in noise[-1:] if n.get("unstable")}


def walk_until_judged(tmp_path: Path, server: RealVllm, code: str) -> transcript.Transcript:
    """A walk in which ``code`` was judged. A walk that left it inconclusive for any reason but
    an unstable baseline (or left it out without a word) is returned as it is, to fail."""
    for _ in range(JUDGED_WALKS):
        loaded = walk(tmp_path, server)
        unjudged = [e["data"] for e in loaded.events
                    if e["type"] == "inconclusive" and e["data"]["code"] == code]  # fmt: skip
        if not unjudged or not set(unjudged[0]["rounds"]) <= unstable_rounds(loaded):
            return loaded
    return loaded


def warnings_and_failures(loaded: transcript.Transcript) -> list[tuple[str, str, str]]:
    """Every finding above info: code, severity and evidence (what a failed assertion shows)."""
    return [(f["code"], f["severity"], f["evidence"]) for f in findings(loaded)
            if f["severity"] != "info"]  # fmt: skip


def change_of(loaded: transcript.Transcript, code: str) -> dict[str, Any]:
    found = [f for f in findings(loaded) if f["code"] == code]
    assert found, f"{code} not found; findings: {[f['code'] for f in findings(loaded)]}"
    change = found[0]["change"]
    assert change is not None and "not_applicable" not in change, change
    return dict(change)


def round_facts(loaded: transcript.Transcript, round_as: str) -> dict[str, Any]:
    """The facts of the first measurement round recorded as ``round_as``."""
    return dict(
        next(
            e["data"]["facts"]
            for e in loaded.events
            if e["type"] == "probe_result" and e["data"]["as"] == round_as
        )
    )


def probe_json(*args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = subprocess.run(
        wizard_command("probe", *args, "--json"), capture_output=True, text=True, timeout=300,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert result.stdout, result.stderr
    return dict(json.loads(result.stdout))


# -- evidence probes read the real server -------------------------------------------------------


@pytest.mark.real_vllm("healthy")
@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_the_lean_stream_path_reads_the_real_stream_as_httpx_does(
    real_vllm: RealVllm, endpoint: Endpoint
) -> None:
    # uvicorn's chunked keep-alive stream: three requests in turn on each client. The number of
    # events is timing (vLLM merges deltas it fell behind on), the rest is the server's word.
    spec = RequestSpec(model=SERVED_NAME, endpoint=endpoint, max_tokens=8, prompt="hello world")

    async def three(client: httpx.AsyncClient) -> list[StreamSample]:
        async with client:
            return [await measure_stream(client, real_vllm.url, spec) for _ in range(3)]

    stock = aio.run(three(httpx.AsyncClient(timeout=60)))
    client = timing_client(timeout=60)
    lean = aio.run(three(client))
    assert client.lean.connects == 1 and [s.cold for s in lean] == [True, False, False]
    facts = ("output_tokens", "output_tokens_estimated", "error_kind", "status",
             "finish_reason", "malformed_events", "keep_alives", "content_encoding")  # fmt: skip
    for one, other in zip(stock, lean, strict=True):
        assert other.ok, other.error
        assert {k: one.to_dict()[k] for k in facts} == {k: other.to_dict()[k] for k in facts}
        assert other.output_tokens == 8 and not other.tokens_estimated
        assert (one.request_id or "").split("-")[0] == (other.request_id or "").split("-")[0]


@pytest.mark.real_vllm("healthy")
def test_evidence_probes_read_the_real_server(real_vllm: RealVllm) -> None:
    endpoints = probe_json("endpoints", "--target", real_vllm.url)
    assert endpoints["health_status"] == 200 and endpoints["version"] == "0.32.0"
    assert endpoints["model"] == SERVED_NAME and endpoints["max_model_len"] == MAX_MODEL_LEN
    assert endpoints["completions_ok"] and endpoints["chat_ok"] and endpoints["auth"] == "none"

    before = probe_json("metrics", "--target", real_vllm.url)
    assert before["generation"] == "v1" and before["engines"] == 1
    assert before["block_size"] == 128 and before["kv_cache_tokens"] == 1_048_576
    load = subprocess.run(
        wizard_command("probe", "load", "--target", real_vllm.url, "--concurrency", "2",
                       "--requests", "6", "--max-tokens", "16", "--json"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert load.returncode == 0, load.stderr
    assert json.loads(load.stdout)["steady"]["summary"]["succeeded"] == 6
    after = probe_json("metrics", "--target", real_vllm.url)
    # Every request of the load counted by the server: 6 steady + warm-up, 16 tokens each.
    assert after["generation_tokens_total"] - (before["generation_tokens_total"] or 0) >= 6 * 16
    assert after["preemptions_total"] == before["preemptions_total"] == 0

    log = probe_json("vllm-log", str(real_vllm.log_file))
    assert log["engine"] == "v1" and log["max_model_len"] == MAX_MODEL_LEN
    assert log["kv_cache_tokens"] == 1_048_576 and log["enforce_eager"] is True
    assert log["errors"] == []


@pytest.mark.real_vllm("healthy")
def test_healthy_real_server_has_no_cause(real_vllm: RealVllm, tmp_path: Path) -> None:
    loaded = walk(tmp_path, real_vllm)
    # No warning and no failure of any kind: a cause named on a healthy server is a wrong answer,
    # whether or not another configuration of this tier reproduces it.
    assert warnings_and_failures(loaded) == []
    # Prefix caching is on by default: the shared-prefix round is served from the cache.
    prefix = round_facts(loaded, "prefix")["server"]
    assert prefix["enable_prefix_caching"] is True and prefix["prefix_cache_hits"] > 0


# -- faults the real server reproduces ------------------------------------------------------------


@pytest.mark.real_vllm("seqs1")
def test_one_sequence_under_eight_streams_is_queueing(real_vllm: RealVllm, tmp_path: Path) -> None:
    loaded = walk(tmp_path, real_vllm)
    assert "queue_saturation" in causes(loaded), story(loaded)
    assert "kv_cache_preemption" not in causes(loaded)
    change = change_of(loaded, "LAT013")
    assert change["parameter"] == "max_num_seqs" and change["before"] == 1
    # Room for the eight streams that arrived together, not a constant.
    assert change["after"] == 8 and change["apply"] == "--max-num-seqs 8"
    assert refusals({"max_num_seqs": change["after"], "max_model_len": MAX_MODEL_LEN}) == []


@pytest.mark.real_vllm("budget64")
def test_a_small_budget_is_long_prompt_ttft_and_no_queue(
    real_vllm: RealVllm, tmp_path: Path
) -> None:
    """--max-num-batched-tokens 64: the long round's prompts each wait for 30 steps of the budget
    while the decoding streams' gaps stay even, and no request waits for a slot (max_num_seqs,
    unset, is lowered to 64 for 8 streams): exactly LAT012, never LAT013 (issue #26 saw the walk
    name it queueing, from a queue-time histogram, while the stats lines said `Waiting: 0`)."""
    loaded = walk(tmp_path, real_vllm)
    assert [code for code, *_ in warnings_and_failures(loaded)] == ["LAT012"], (
        warnings_and_failures(loaded)
    )
    assert probe_json("vllm-log", str(real_vllm.log_file))["max_num_batched_tokens"] == 64
    change = change_of(loaded, "LAT012")
    assert change["parameter"] == "max_num_batched_tokens" and change["before"] == 64
    assert change["after"] > 64 and change["apply"] == f"--max-num-batched-tokens {change['after']}"
    assert (
        refusals({"max_num_batched_tokens": change["after"], "max_model_len": MAX_MODEL_LEN}) == []
    )


def started_again(
    tmp_path: Path, refused: RealVllm, fixed: RealVllm, code: str, parameter: str
) -> bool:
    """Whether ``code``'s gone condition holds for the fixed server: its log appended to the
    refused one's (as a restart into the same file writes it), read as the walk reads it. The
    two starts' logged arguments must differ in the change's one parameter only: the one the walk
    computed (LAT040 lowers max_model_len on a CPU, where the playbook's lever is the GPU's
    memory share), as the walk's own one-change check reads it."""
    from wizard import playbook
    from wizard.levers import config_check
    from wizard.playbook import conditions
    from wizard.probes.readers.vllm_log import read_text, walk_facts

    log = tmp_path / f"{code}-restarted.log"
    log.write_text(refused.log() + fixed.log(), encoding="utf-8")
    with log.open(encoding="utf-8") as handle:
        report = read_text(handle)
    facts = {"vllmlog": walk_facts(report),
             "endpoints": {"health_status": httpx.get(fixed.url + "/health", timeout=10).status_code}}  # fmt: skip
    assert facts["vllmlog"]["runs_count"] == 2
    finding = playbook.load().findings[code]
    assert finding.change is not None
    before, after = (config_check.logged(run) for run in report["runs"])
    assert before is not None and after is not None  # vLLM logs them before it checks them
    diffs = config_check.differences(before, after)
    checked = config_check.judge(parameter, diffs, set(before) & set(after))
    assert checked["verdict"] == "confirmed", diffs
    return conditions.evaluate(finding.gone, facts, {})


@pytest.mark.real_vllm("override17")
def test_kv_cache_override_preempts_and_the_computed_fix_stops_it(
    real_vllm: RealVllm, real_vllm_pool: RealVllmPool, tmp_path: Path
) -> None:
    loaded = walk(tmp_path, real_vllm)
    assert "kv_cache_preemption" in causes(loaded), story(loaded)
    measured = round_facts(loaded, "loaded")
    assert measured["server"]["preemptions"] > 0
    assert measured["server"]["num_gpu_blocks_override"] == 17
    change = change_of(loaded, "LAT010")
    # The limit actually set is the override, so that is what the change raises.
    assert change["parameter"] == "num_gpu_blocks_override" and change["before"] == 17
    assert (
        change["after"] > 17 and change["apply"] == f"--num-gpu-blocks-override {change['after']}"
    )

    fixed = real_vllm_pool.start(
        "override-fixed", args=("--num-gpu-blocks-override", str(change["after"]))
    )
    assert fixed.running, fixed.log()[-2000:]
    again = walk(tmp_path, fixed)
    remeasured = round_facts(again, "loaded")
    assert remeasured["server"]["preemptions"] == 0
    assert "kv_cache_preemption" not in causes(again)


@pytest.mark.real_vllm("override16")
def test_cache_too_small_to_start_gets_the_logs_estimate(
    real_vllm: RealVllm, real_vllm_pool: RealVllmPool, tmp_path: Path
) -> None:
    assert not real_vllm.running
    loaded = walk(tmp_path, real_vllm)
    assert "kv_cache_too_small_for_max_model_len" in causes(loaded), story(loaded)
    change = change_of(loaded, "LAT040")
    assert change["parameter"] == "max_model_len"
    assert change["before"] == MAX_MODEL_LEN and change["after"] == 1920  # the log's estimate

    fixed = real_vllm_pool.start(
        "override16-fixed",
        args=("--num-gpu-blocks-override", "16", "--max-model-len", str(change["after"])),
    )
    assert fixed.running, fixed.log()[-2000:]
    # the start proves the change
    assert started_again(tmp_path, real_vllm, fixed, "LAT040", change["parameter"])


@pytest.mark.parametrize(
    ("code", "cause", "before", "after", "fixed"),
    [
        # Chunked prefill off with a budget below max_model_len: the budget raised to it.
        pytest.param("LAT014", "chunked_prefill_budget", 512, MAX_MODEL_LEN,
                     ("--no-enable-chunked-prefill", "--max-num-batched-tokens", "{after}"),
                     marks=pytest.mark.real_vllm("chunked_off"), id="chunked_off"),
        # Issue #26: a budget below max_num_seqs was only LAT045's "the engine failed to start".
        pytest.param("LAT036", "batched_tokens_below_max_num_seqs", 64, 128,
                     ("--max-num-batched-tokens", "{after}", "--max-num-seqs", "128"),
                     marks=pytest.mark.real_vllm("seqs_above_budget"), id="seqs_above_budget"),
    ],
)  # fmt: skip
def test_a_refused_start_gets_its_own_cause_and_the_value_filled_in_starts(
    real_vllm: RealVllm, real_vllm_pool: RealVllmPool, tmp_path: Path, code: str, cause: str,
    before: int, after: int, fixed: tuple[str, ...],
) -> None:  # fmt: skip
    assert not real_vllm.running
    loaded = walk(tmp_path, real_vllm)
    assert cause in causes(loaded) and "server_not_started" not in causes(loaded), story(loaded)
    change = change_of(loaded, code)
    assert change["parameter"] == "max_num_batched_tokens"
    assert change["before"] == before and change["after"] == after
    assert "<" not in change["apply"]

    started = real_vllm_pool.start(
        f"{real_vllm.name}-fixed", args=tuple(a.format(after=after) for a in fixed)
    )
    assert started.running, started.log()[-2000:]
    # the start proves the change
    assert started_again(tmp_path, real_vllm, started, code, change["parameter"])


@pytest.mark.real_vllm("no_template_key")
def test_api_key_and_missing_chat_template(real_vllm: RealVllm, tmp_path: Path) -> None:
    for path in ("/health", "/version", "/metrics"):  # open without a key, as in real vLLM
        assert httpx.get(real_vllm.url + path, timeout=10).status_code == 200
    assert httpx.get(real_vllm.url + "/v1/models", timeout=10).status_code == 401

    without = probe_json("endpoints", "--target", real_vllm.url)
    assert without["auth"] == "required"
    wrong = probe_json("endpoints", "--target", real_vllm.url, env={"VLLM_API_KEY": "wrong"})
    assert wrong["auth"] == "rejected"
    right = probe_json("endpoints", "--target", real_vllm.url, env={"VLLM_API_KEY": REAL_API_KEY})
    assert right["auth"] == "ok" and right["chat_template_missing"] is True
    assert right["completions_ok"] is True

    no_key = walk(tmp_path, real_vllm)
    assert "auth_failure" in causes(no_key), story(no_key)
    keyed = walk(tmp_path, real_vllm, env={"VLLM_API_KEY": REAL_API_KEY})
    assert "chat_template_missing" in causes(keyed) and "auth_failure" not in causes(keyed), story(
        keyed
    )
    for path in tmp_path.glob("walk-*.ndjson"):
        assert REAL_API_KEY not in path.read_text()


@pytest.mark.real_vllm("prefix_off")
def test_prefix_caching_off_is_found_by_the_servers_own_word(
    real_vllm: RealVllm, tmp_path: Path
) -> None:
    """--no-enable-prefix-caching: the server's cache_config_info says so, its counters found
    nothing of the round's shared prefix, and the engine prefilled it for every request."""
    loaded = walk_until_judged(tmp_path, real_vllm, "LAT016")
    assert "prefix_cache_off" in causes(loaded), story(loaded)
    prefix = round_facts(loaded, "prefix")
    assert prefix["shared_prefix_tokens"] > 0
    assert prefix["server"]["enable_prefix_caching"] is False
    assert not prefix["server"]["prefix_cache_hits"]
    finding = next(f for f in findings(loaded) if f["code"] == "LAT016")
    assert "enable_prefix_caching=False" in finding["evidence"]
    change = change_of(loaded, "LAT016")
    assert (change["before"], change["after"], change["apply"]) == (
        False,
        True,
        "--enable-prefix-caching",
    )


# -- real nginx in front of the real server -------------------------------------------------------

requires_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)
PROXY_CAUSES = {"proxy_buffering", "proxy_gzip_buffering"}


@requires_nginx
@pytest.mark.real_vllm("healthy")
def test_stock_nginx_passes_real_vllms_chunked_stream(real_vllm: RealVllm, tmp_path: Path) -> None:
    """Stock nginx (proxy_buffering on, HTTP/1.0 upstream) in front of a stock vLLM: uvicorn with
    httptools answers HTTP/1.0 with a chunked body, which nginx passes on event by event."""
    with Nginx(real_vllm.url) as nginx:
        raw = _raw_http10(real_vllm.url)
        assert b"transfer-encoding: chunked" in raw.lower()
        loaded = walk(
            tmp_path, real_vllm, "--proxy", nginx.url, "--nginx-conf", str(nginx.config_path)
        )
    assert not causes(loaded) & PROXY_CAUSES, causes(loaded)
    assert [f["code"] for f in findings(loaded) if f["severity"] == "fail"] == []


@requires_nginx
@pytest.mark.real_vllm("healthy")
def test_gzip_on_the_event_stream_is_lat002(real_vllm: RealVllm, tmp_path: Path) -> None:
    directives = {"gzip": "on", "gzip_types": "text/event-stream", "gzip_min_length": "1"}
    with Nginx(real_vllm.url, directives) as nginx:
        loaded = walk(
            tmp_path, real_vllm, "--proxy", nginx.url, "--nginx-conf", str(nginx.config_path)
        )
    assert causes(loaded) & PROXY_CAUSES == {"proxy_gzip_buffering"}
    proxy = round_facts(loaded, "proxy")
    assert proxy["burst"]["content_encodings"] == ["gzip"]
    change = change_of(loaded, "LAT002")
    assert (
        change["parameter"] in ("gzip", "gzip_types") and "text/event-stream" not in change["apply"]
    )


@requires_nginx
@pytest.mark.real_vllm("h11")
def test_close_delimited_upstream_behind_stock_nginx_is_lat001(
    real_vllm: RealVllm, tmp_path: Path
) -> None:
    """uvicorn forced to h11 answers HTTP/1.0 close-delimited: nginx's default buffering then
    holds the stream in ~4 KB bursts, the classic proxy fault."""
    raw = _raw_http10(real_vllm.url)
    assert b"transfer-encoding" not in raw.lower()
    with Nginx(real_vllm.url) as nginx:
        loaded = walk(
            tmp_path, real_vllm, "--proxy", nginx.url, "--nginx-conf", str(nginx.config_path)
        )
    assert causes(loaded) & PROXY_CAUSES == {"proxy_buffering"}
    direct, proxy = round_facts(loaded, "direct"), round_facts(loaded, "proxy")
    assert proxy["burst"]["max_events_per_read"] >= 4
    assert proxy["burst"]["mean_events_per_read"] >= 2 * direct["burst"]["mean_events_per_read"]
    change = change_of(loaded, "LAT001")
    assert change["before"] == "on" and change["after"] == "off"


def _raw_http10(url: str) -> bytes:
    """The head of a streamed completion asked for as nginx asks upstream (HTTP/1.0)."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"model": SERVED_NAME, "prompt": "word", "max_tokens": 4, "stream": True})
    request = (
        f"POST /v1/completions HTTP/1.0\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n{body}"
    ).encode()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        chunks = []
        while data := sock.recv(65536):
            chunks.append(data)
    return b"".join(chunks).split(b"\r\n\r\n", 1)[0]


@pytest.mark.real_vllm("healthy")
def test_a_timestamp_first_defeats_the_real_prefix_cache(real_vllm: RealVllm) -> None:
    """The playbook's two shape rounds on the real server: a chat body whose system prompt begins
    with the current time, fresh in every request, finds none of its prompt in vLLM's prefix
    cache; moved after the prompt, most of it (the server's own counters)."""
    import asyncio

    from wizard import playbook
    from wizard.probes.http.measure_probe import probe as measure
    from wizard.probes.runner import ProbeContext
    from wizard.workload import Workload

    rules = " ".join(f"Rule {i}: answer politely and cite the policy section." for i in range(60))
    body = {"model": SERVED_NAME, "max_tokens": 8, "messages": [
        {"role": "system", "content": f"Current time: 2026-12-05T00:41:07Z. {rules}"},
        {"role": "user", "content": "My order has not arrived. What can I do?"}]}  # fmt: skip
    ctx = ProbeContext(target=real_vllm.url, model=SERVED_NAME, max_model_len=MAX_MODEL_LEN,
                       timeout_s=120, workload=Workload(endpoint="chat", body=body))  # fmt: skip
    calls = {p.as_: p for n in playbook.load().nodes.values() for p in n.probes}
    rates = {}
    for name in ("shape_in_place", "shape_at_end"):
        params = {**calls[name].params, "endpoint": "chat"}
        facts = asyncio.run(measure(ctx, params))
        assert facts["steady"]["succeeded"] == facts["steady"]["requests"]
        rates[name] = facts["server"]["prefix_cache_hit_rate"]
    assert rates["shape_in_place"] < 0.1 and rates["shape_at_end"] >= 0.5, rates
