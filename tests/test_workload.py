"""The incident's workload (`run --model/--endpoint/--input-tokens/--output-tokens/--concurrency`,
`--request-body`): every round is measured with it, against the real simulator."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.levers import client_changes
from wizard.measure import MeasurementSpec

NO_LOADGEN = "run_loadgen: false\n"


def events(path: Path) -> list[dict[str, Any]]:
    """The whole lines of a transcript being written (its last line may be half-written)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return out


def walk_until(tmp_path: Path, round_as: str, *args: str) -> tuple[list[dict[str, Any]], str]:
    """`run` until its round ``round_as`` is measured, then Ctrl-C (the transcript is kept)."""
    answers = tmp_path / "answers.yaml"
    answers.write_text(NO_LOADGEN)
    path = tmp_path / "walk.ndjson"
    process = subprocess.Popen(
        wizard_command("run", "--answers", str(answers), "--transcript", str(path), *args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and process.poll() is None:
            if path.exists() and any(
                e["type"] == "measurement" and e["data"]["as"] == round_as for e in events(path)
            ):
                break
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    header = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    return [{"header": header}, *events(path)], output


def measured(log: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {e["data"]["round"]: e["data"] for e in log[1:] if e["type"] == "measurement"}


def answer(log: list[dict[str, Any]], question: str) -> dict[str, Any]:
    return next(e["data"] for e in log[1:] if e["type"] == "answer" and e["data"]["id"] == question)


@pytest.mark.timeout(300)
def test_a_chat_only_server_is_walked_through_chat(sim_factory: Any, tmp_path: Path) -> None:
    """Only /v1/chat/completions answers: the API is the evidence's, never asked, and every round
    (the baseline, its A/A repeat, the load round) goes through chat."""
    sim: SimProcess = sim_factory("--no-completions-api")
    log, output = walk_until(tmp_path, "loaded", "--target", sim.url)
    assert answer(log, "api") == {"id": "api", "value": "chat", "from_evidence": "endpoints.api",
                                  "from_evidence_texts": {"en": "the server's endpoints: API",
                                                          "zh": "服务端点：API"}}  # fmt: skip
    question = next(
        e["data"] for e in log[1:] if e["type"] == "question" and e["data"]["id"] == "api"
    )
    assert question["asked"] is False
    rounds = measured(log)
    assert {"direct", "direct_aa", "loaded"} <= set(rounds), rounds.keys()
    assert {r["spec"]["endpoint"] for r in rounds.values()} == {"chat"}
    assert "API: chat  (from the evidence: the server's endpoints: API; not asked)" in output


@pytest.mark.timeout(300)
def test_the_request_body_is_replayed_in_the_incident_rounds(
    sim_factory: Any, tmp_path: Path
) -> None:
    sim: SimProcess = sim_factory()
    body = {"messages": [{"role": "system", "content": "You answer briefly."},
                         {"role": "user", "content": "Why is the sky blue? Explain it to a child."}],
            "max_tokens": 12, "temperature": 0.7, "top_p": 0.9}  # fmt: skip
    file = tmp_path / "body.json"
    file.write_text(json.dumps(body))
    log, _ = walk_until(tmp_path, "loaded", "--target", sim.url, "--request-body", str(file),
                        "--concurrency", "2")  # fmt: skip
    workload = log[0]["header"]["workload"]
    assert workload["endpoint"] == "chat" and workload["concurrency"] == 2
    assert workload["body"] == body and workload["body_sha256"]
    # The body named the API: nothing to ask although this server answers both.
    assert answer(log, "api")["from_evidence"] == "session.endpoint"
    rounds = measured(log)
    direct, again, loaded = rounds["direct"], rounds["direct_aa"], rounds["loaded"]
    assert direct["spec"]["request_body"] == workload["body_sha256"]
    assert (direct["spec"]["endpoint"], direct["spec"]["concurrency"]) == ("chat", 2)
    assert direct["spec"]["output_tokens"] == 12 and direct["spec"]["input_tokens"] == 13
    assert again["fingerprint"] == direct["fingerprint"]  # the A/A pair compares
    # The load round: the incident's body at twice its concurrency.
    assert loaded["spec"]["concurrency"] == 4
    assert loaded["spec"]["request_body"] == workload["body_sha256"]
    # Streamed and counted: the server's usage says 12 tokens per request, so TPOT is measured.
    facts = next(e["data"]["facts"] for e in log[1:]
                 if e["type"] == "probe_result" and e["data"]["as"] == "direct")  # fmt: skip
    assert facts["steady"]["succeeded"] == facts["steady"]["requests"] > 0
    assert facts["steady"]["tpot_p50"] is not None


@pytest.mark.timeout(300)
def test_the_workload_numbers_shape_every_incident_round(sim_factory: Any, tmp_path: Path) -> None:
    sim: SimProcess = sim_factory()
    log, _ = walk_until(tmp_path, "loaded", "--target", sim.url, "--endpoint", "completions",
                        "--input-tokens", "40", "--output-tokens", "20", "--concurrency", "3")  # fmt: skip
    rounds = measured(log)
    for name, streams in (("direct", 3), ("direct_aa", 3), ("loaded", 6)):
        spec = rounds[name]["spec"]
        assert (spec["endpoint"], spec["input_tokens"], spec["output_tokens"], spec["concurrency"]) \
            == ("completions", 40, 20, streams), (name, spec)  # fmt: skip
        assert spec.get("request_body") is None


@pytest.mark.parametrize(
    ("body", "flags", "expected"),
    [
        ("{not json", (), "not JSON"),
        ('{"model": "m"}', (), "a text `prompt`"),
        ('["a list"]', (), "a JSON object"),
        ('{"prompt": "hi"}', ("--endpoint", "chat"), "its body is a completions request"),
        ('{"prompt": "hi"}', ("--input-tokens", "10"), "cannot go together"),
        ('{"prompt": "hi"}', ("--concurrency", "0"), "--concurrency must be at least 1"),
    ],
)
def test_a_bad_workload_is_one_line_before_anything_runs(
    tmp_path: Path, body: str, flags: tuple[str, ...], expected: str
) -> None:
    file = tmp_path / "body.json"
    file.write_text(body)
    result = subprocess.run(
        wizard_command("run", "--target", "http://127.0.0.1:9", "--auto", "--request-body",
                       str(file), *flags),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("latency-wizard run: error: ") and expected in line, line


def test_lat050_names_an_option_run_accepts(tmp_path: Path) -> None:
    """LAT050 halves the client's streams and says how to set them on the next walk."""
    proposal = client_changes.lower_client_concurrency(
        {"direct": {"spec": {"concurrency": 4}}}, {}, {}
    )
    assert proposal["after"] == 2 and "run --concurrency 2" in proposal["apply"]
    # `run` takes it: the walk fails only because nothing listens there (exit 1, not usage 2).
    result = subprocess.run(
        wizard_command("run", "--target", "http://127.0.0.1:9", "--auto", "--concurrency", "2",
                       "--transcript", str(tmp_path / "t.ndjson")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 1 and "cannot reach" in result.stderr, result.stderr


def test_a_spec_without_a_body_keeps_its_fingerprint() -> None:
    """Rounds recorded before bodies existed still compare with new ones of the same shape."""
    import hashlib

    spec = MeasurementSpec("m", "completions", 64, 64, 4, "http://h:1")
    before_bodies = {"model": "m", "endpoint": "completions", "input_tokens": 64,
                     "output_tokens": 64, "concurrency": 4, "access_path": "http://h:1",
                     "warm_state": "steady", "scenario": "closed-loop"}  # fmt: skip
    canonical = json.dumps(before_bodies, sort_keys=True, separators=(",", ":"))
    assert spec.fingerprint() == hashlib.sha256(canonical.encode()).hexdigest()[:16]
    with_body = MeasurementSpec("m", "completions", 64, 64, 4, "http://h:1", request_body="ab12")
    assert with_body.fingerprint() != spec.fingerprint()


def shaped_body(stamp_at_end: bool) -> dict[str, Any]:
    """A support service's chat body: ~1,600 words of fixed system prompt and the current time,
    written before them (as the service does) or after them."""
    rules = " ".join(f"Rule {i}: answer politely, cite the policy section, promise no refunds "
                     "beyond the documented limits." for i in range(1, 110))  # fmt: skip
    stamp = "Current time: 2026-12-05T00:41:07Z."
    system = f"{rules} {stamp}" if stamp_at_end else f"{stamp} {rules}"
    return {"messages": [{"role": "system", "content": system},
                         {"role": "user", "content": "My order has not arrived. What can I do?"}],
            "max_tokens": 16, "temperature": 0.2}  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_timestamp_before_the_system_prompt_defeats_the_prefix_cache(
    sim_factory: Any, tmp_path: Path
) -> None:
    """Prefix caching on; the body's timestamp, fresh in every request, first: nothing is
    shared (LAT023, the change names the timestamp). The same body with it last: nothing found.
    Two `run --auto` walks of ~17 s each on one simulator."""
    sim: SimProcess = sim_factory()
    found: dict[bool, Any] = {}
    for at_end in (False, True):
        file = tmp_path / f"body-{at_end}.json"
        file.write_text(json.dumps(shaped_body(at_end)))
        path = tmp_path / f"walk-{at_end}.ndjson"
        result = subprocess.run(
            wizard_command("run", "--target", sim.url, "--auto", "--request-body", str(file),
                           "--transcript", str(path)),
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        log = events(path)
        rounds = {e["data"]["as"]: e["data"]["facts"] for e in log
                  if e["type"] == "probe_result" and e["data"]["as"].startswith("shape_")}  # fmt: skip
        assert set(rounds) == {"shape_in_place", "shape_at_end"}, result.stdout[-2000:]
        found[at_end] = (
            [e["data"] for e in log if e["type"] == "finding" and e["data"]["code"] == "LAT023"],
            {name: facts["server"]["prefix_cache_hit_rate"] for name, facts in rounds.items()},
        )
    (finding,), rates = found[False]
    assert rates["shape_in_place"] < 0.1 and rates["shape_at_end"] >= 0.5, rates
    assert finding["change"]["before"] == "timestamp at word 2 of 1647"
    assert "'2026-12-05T00:41:07Z'" in finding["change"]["apply"]
    absent, rates = found[True]
    assert absent == [] and rates["shape_in_place"] >= 0.5, rates
