"""A hostile server (issue #15): every fault ends as a recorded failure within the deadline.

The fault server (tests/faultserver.py) trickles, nests, overflows and lies on purpose; every
request has a total deadline of DEADLINE_READ_TIMEOUTS read timeouts however often bytes come.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import assert_walk_exit, wizard_command
from tests.faultserver import CYCLE, MODES, TRICKLES, fault_server, text_chunk
from wizard.cli.probe import NOTHING_MEASURED
from wizard.probes.http.bounded import DEADLINE_READ_TIMEOUTS
from wizard.probes.http.sample import StreamSample
from wizard.probes.http.stream import RequestSpec, measure_stream

READ_TIMEOUT_S = 0.5  # above the fault server's 0.2 s between bytes: only the deadline can end it


@pytest.fixture(scope="module")
def faults() -> Iterator[str]:
    with fault_server() as url:
        yield url


def measure(url: str, max_tokens: int = 16) -> StreamSample:
    async def go() -> StreamSample:
        timeout = httpx.Timeout(READ_TIMEOUT_S, connect=5.0)
        async with httpx.AsyncClient(timeout=timeout) as client:
            return await measure_stream(client, url, RequestSpec(model="m", max_tokens=max_tokens))

    return asyncio.run(go())


@pytest.mark.parametrize("mode", TRICKLES)
def test_a_trickling_server_cannot_hold_a_request(faults: str, mode: str) -> None:
    sample = measure(f"{faults}/{mode}")
    assert sample.error_kind == "deadline"
    deadline = DEADLINE_READ_TIMEOUTS * READ_TIMEOUT_S
    assert sample.error == (
        f"no complete response from {faults}/{mode}/v1/completions within its {deadline:g} s deadline"
    )


# What each behaviour makes of one streamed request: the error kind it is recorded as, or None for
# a well-formed stream (which must not be called a failure).
RECORDED_AS = {
    "status500": "http_500", "status404": "http_404", "status429": "http_429",
    "garbage": "malformed", "errorevent": "stream_error", "nodone": "truncated",
    "reset": "connection_reset", "hang": "read_timeout", "roleearly": None, "multitoken": None,
    "burst": None, "deepjson": "malformed", "bigint": "malformed", "badchoices": "malformed",
    "usagejump": "malformed", "hugeline": "oversized_event", "nousage": None,
    "slowheaders": "deadline", "keepalive": "deadline", "trickle": "deadline",
}  # fmt: skip


@pytest.mark.parametrize(
    ("mode", "first"),
    [
        ("garbage", "data that is no JSON chunk (Expecting property name"),
        ("deepjson", "data that is no JSON chunk (JSON nested deeper than 64 levels)"),
        ("bigint", "data that is no JSON chunk (integer longer than 40 digits)"),
        ("badchoices", "usage.completion_tokens 'many' is no token count of at most 16"),
        ("usagejump", "usage.completion_tokens '1000000000000' is no token count of at most 16"),
    ],
)
def test_a_response_with_events_that_are_no_completion_chunk_is_a_failed_request(
    faults: str, mode: str, first: str
) -> None:
    # Before: counted in malformed_events and the request called a success, so `probe validate`
    # against the garbage server said VALID.
    sample = measure(f"{faults}/{mode}")
    assert sample.error_kind == "malformed" and not sample.ok
    assert sample.error is not None and "\n" not in sample.error
    assert f"event(s) that are no completion chunk; the first: {first}" in sample.error
    assert sample.malformed_events >= 1


def test_the_other_sse_fields_are_no_malformed_event() -> None:
    # id:, event: and retry: are SSE fields a gateway may add; failing the request on them would
    # fail every request through it.
    from wizard.probes.http.sse import SseParser

    sample = StreamSample(send_ns=0)
    parser = SseParser(sample, max_tokens=4)
    parser.feed(b"id: 1\nevent: message\nretry: 100\n" + text_chunk(" a", "length", usage=1), 1)
    assert sample.malformed_events == 0 and len(sample.output_times_ns) == 1
    parser.feed(b"ident: 2\n\n", 2)  # no field of SSE's
    assert parser.first_malformed == "a line that is no SSE field: 'ident: 2'"


def test_bad_fields_are_ignored(faults: str) -> None:
    sample = measure(f"{faults}/badchoices")
    assert sample.request_id == "cmpl-fault"  # the int id is no id; the first string one is
    assert sample.malformed_events == 2  # choices 5 and "many" tokens
    assert sample.output_tokens == 2 and sample.finish_reason == "length"


def test_usage_beyond_the_request_is_not_believed(faults: str) -> None:
    sample = measure(f"{faults}/usagejump")
    assert sample.malformed_events == 2  # the jump and the usage-only chunk
    assert sample.output_tokens == 1 and sample.itl_per_token_ms is None


def test_an_event_that_never_ends_is_bounded(faults: str) -> None:
    sample = measure(f"{faults}/hugeline")
    assert sample.error_kind == "oversized_event"
    assert sample.error is not None and "an event longer than 1048576 bytes" in sample.error


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    # The subprocess limit is far above the deadline: reaching it is the failure being tested.
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize("mode", TRICKLES)
def test_probe_metrics_against_a_trickling_server_ends_in_one_line(faults: str, mode: str) -> None:
    metrics = cli(
        "probe", "metrics", "--target", f"{faults}/{mode}", "--timeout", str(READ_TIMEOUT_S)
    )
    assert metrics.returncode == 1 and "Traceback" not in metrics.stderr
    assert len(metrics.stderr.strip().splitlines()) == 1


def one_line(text: str | None) -> bool:
    return bool(text) and "\n" not in str(text).strip()


@pytest.mark.parametrize("mode", MODES)
def test_probe_stream_records_every_mode(faults: str, mode: str) -> None:
    result = cli("probe", "stream", "--target", f"{faults}/{mode}", "--model", "m", "--json",
                 "--repeat", "1", "--timeout", str(READ_TIMEOUT_S))  # fmt: skip
    assert "Traceback" not in result.stderr
    report, kind = json.loads(result.stdout), RECORDED_AS[mode]
    assert report["summary"]["errors"] == ({kind: 1} if kind else {})
    assert report["summary"]["succeeded"] == (0 if kind else 1)
    assert one_line(report["samples"][0]["error"]) == bool(kind)
    assert result.returncode == (NOTHING_MEASURED if kind else 0)


@pytest.mark.parametrize("mode", MODES)
def test_probe_load_records_every_mode(faults: str, mode: str) -> None:
    result = cli("probe", "load", "--target", f"{faults}/{mode}", "--model", "m", "--json",
                 "--requests", "2", "--concurrency", "2", "--warmup", "0",
                 "--timeout", str(READ_TIMEOUT_S))  # fmt: skip
    assert "Traceback" not in result.stderr
    report, kind = json.loads(result.stdout), RECORDED_AS[mode]
    for part in ("cold", "steady"):  # each connection's first request, then the two steady ones
        assert report[part]["summary"]["errors"] == ({kind: 2} if kind else {}), part
        assert all(one_line(s["error"]) == bool(kind) for s in report[part]["samples"]), part
    assert result.returncode == (NOTHING_MEASURED if kind else 0)


@pytest.mark.parametrize("mode", ["garbage", "status500"])
def test_probe_proxy_with_every_request_failed_gives_no_verdict(faults: str, mode: str) -> None:
    """Every sample on both paths rejected: no "passes events through as they come" (exit 0) from
    no data, but the nothing-measured code and the first error, in JSON and in words."""
    args = ("probe", "proxy", "--target", f"{faults}/{mode}", "--proxy", f"{faults}/{mode}",
            "--model", "m", "--repeat", "2", "--timeout", str(READ_TIMEOUT_S))  # fmt: skip
    result = cli(*args, "--json")
    assert result.returncode == NOTHING_MEASURED and "Traceback" not in result.stderr
    report = json.loads(result.stdout)
    assert report["nothing_measured"]["paths"] == ["direct", "proxy"]
    assert report["nothing_measured"]["first_error"].startswith(RECORDED_AS[mode])
    assert "passes events" not in report["verdict"] and not report["buffering_suspected"]
    shown = cli(*args)
    assert shown.returncode == NOTHING_MEASURED
    assert "nothing could be measured" in shown.stdout and "passes events" not in shown.stdout
    assert "-  " not in shown.stdout  # no table of dashes


@pytest.mark.parametrize("command", [("stream", "--repeat", "2"), ("load", "--requests", "2")])
def test_a_probe_whose_every_request_failed_shows_no_table_of_dashes(
    faults: str, command: tuple[str, ...]
) -> None:
    result = cli("probe", command[0], "--target", f"{faults}/status500", "--model", "m",
                 *command[1:], "--timeout", str(READ_TIMEOUT_S))  # fmt: skip
    assert result.returncode == NOTHING_MEASURED, result.stderr
    assert "nothing could be measured" in result.stdout and "http_500" in result.stdout
    assert "p50" not in result.stdout  # no percentile table made of dashes


# /health of each behaviour: answered (its status) or not (and why, in one line).
ENDPOINT_UNANSWERED = {"reset": "closed it without an HTTP answer",
                       "hang": "sent nothing within the read timeout",
                       "hugeline": "sent a body over 8388608 bytes",
                       "keepalive": "within its 2.5 s deadline", "trickle": "within its 2.5 s deadline"}  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_probe_endpoints_records_every_mode(faults: str, mode: str) -> None:
    result = cli("probe", "endpoints", "--target", f"{faults}/{mode}", "--json",
                 "--timeout", str(READ_TIMEOUT_S))  # fmt: skip
    assert "Traceback" not in result.stderr and result.returncode == 1
    if mode == "slowheaders":  # the headers never come: the reachability check says so, in time
        assert result.stdout == "" and one_line(result.stderr)
        assert "no response headers from" in result.stderr and "within 2.5 s" in result.stderr
        assert "'latency-wizard probe vllm-log FILE' tells why" in result.stderr  # no run flag
        return
    facts = json.loads(result.stdout)
    if mode in ENDPOINT_UNANSWERED:
        assert facts["reachable"] is False and one_line(facts["error"])
        assert ENDPOINT_UNANSWERED[mode] in facts["error"]
    elif mode.startswith("status"):
        assert facts["health_status"] == int(mode.removeprefix("status")) and facts["error"] is None
    else:  # an event stream where JSON was due
        assert (
            facts["health_status"] == 200 and facts["models_status"] == "not an OpenAI model list"
        )
    assert not facts.get("completions_ok") and facts["model"] is None


def test_an_unreachable_server_is_shown_with_the_reason() -> None:
    from wizard.ui.render_events import render_event

    facts = {
        "reachable": False,
        "error": "http://h/health: it took the request and then sent nothing",
    }
    line = render_event({"type": "probe_result", "data": {"probe": "endpoints", "as": "endpoints",
                                                          "error": None, "facts": facts}})  # fmt: skip
    assert "the server does not answer (http://h/health: it took the request" in str(line)


def validate_cli(target: str, outdir: str) -> subprocess.CompletedProcess[str]:
    return cli("probe", "validate", "--target", target, "--model", "m", "--json",
               "--scenario", "SingleStream", "--min-duration", "0.5", "--min-queries", "2",
               "--max-tokens", "16", "--timeout", str(READ_TIMEOUT_S), "--outdir", outdir)  # fmt: skip


@pytest.mark.parametrize("mode", MODES)
def test_probe_validate_records_every_mode(faults: str, mode: str, tmp_path: Path) -> None:
    # Every query of a run meets the same behaviour: a fault fails them all (ERROR, never VALID),
    # a well-formed stream fails none. Before: the garbage server's run was VALID.
    result = validate_cli(f"{faults}/{mode}", str(tmp_path))
    assert "Traceback" not in result.stderr
    run, kind = json.loads(result.stdout)["runs"][0], RECORDED_AS[mode]
    if kind is None:  # LoadGen may find 2 queries too few to judge; no query failed
        assert run["failed"] == 0 and run["errors"] == {}, run["reasons"]
        assert not any("queries failed" in reason for reason in run["reasons"])
        return
    assert run["result"] == "ERROR" and run["succeeded"] == 0 and result.returncode == 3
    sent = run["queries"] - run["errors"].get("not_sent", 0)
    assert run["errors"][kind] == sent >= 1 and run["first_error"]["kind"] == kind
    assert one_line(run["first_error"]["message"]) and run["reasons"][0].startswith(
        f"{run['failed']} of {run['queries']} queries failed"
    )


def short_playbook(tmp_path: Path) -> Path:
    """The built-in playbook with its LoadGen runs cut to 2 queries and 0.5 s (the walk's
    measurement rounds are left as they are: they meet every behaviour several times)."""
    import yaml

    from wizard import playbook

    book = yaml.safe_load(Path(playbook.load().path).read_text(encoding="utf-8"))
    for node in book["nodes"].values():
        for call in node.get("probes", []):
            if call.get("name") == "validate":
                call["params"].update(min_queries=2, min_duration_s=0.5)
    path = tmp_path / "short.yaml"
    path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    return path


def test_a_walk_against_every_fault_records_each_and_completes(tmp_path: Path) -> None:
    # One walk, every behaviour: the cycle server's completions take each mode in turn while its
    # model list answers, so every round (endpoints, five measurement rounds, two LoadGen runs)
    # meets the faults. Each must end as a recorded failure and the walk must go on to its end.
    path = tmp_path / "walk.ndjson"
    with fault_server() as url:
        # Full rounds: every round must hold more requests than the cycle has faults (a brief
        # round of 8 can meet only faults, and then it is no round: no verdict from no data).
        result = cli("run", "--target", f"{url}/{CYCLE}", "--auto", "--timeout", str(READ_TIMEOUT_S),
                     "--rounds", "full", "--playbook", str(short_playbook(tmp_path)),
                     "--transcript", str(path))  # fmt: skip
    assert "Traceback" not in result.stderr
    assert_walk_exit(result, path)  # completed, and the transcript verifies
    recorded: dict[str, int] = {}
    rounds = set()
    for line in path.read_text(encoding="utf-8").splitlines()[1:]:
        data = json.loads(line)["data"]
        facts = data.get("facts") or {}
        if data.get("probe") in ("measure", "validate"):
            rounds.add(data["as"])
            assert data["error"] is None, data["error"]  # a round with failures is still a round
            parts = [facts] if data["probe"] == "validate" else [facts["cold"], facts["steady"]]
            for part in parts:
                for kind, count in part["errors"].items():
                    recorded[kind] = recorded.get(kind, 0) + count
    assert rounds >= {"direct", "direct_aa", "loadgen_before", "loaded", "loadgen"}, rounds
    assert set(recorded) - {"not_sent"} == {kind for kind in RECORDED_AS.values() if kind}
