"""The first token hop by hop in the walk's summary (issue #28 item 3): from the walk's own rounds
(the client's TTFT direct and through the proxy, the engine's TTFT, queue and prefill from the
/metrics scraped around each round) and nginx's access log over the proxy's round (walk probe
``nginx-access``). A real walk against the simulator behind a real nginx writing each hop's time;
each part against its own source; an older transcript without the facts still exports."""

from __future__ import annotations

import asyncio
import json
import math
import os
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.i18n.words import say
from wizard.levers.nginx_runner import Nginx, find_nginx
from wizard.measure import waterfall
from wizard.probes.readers import nginx_access
from wizard.probes.runner import ProbeContext
from wizard.record import transcript
from wizard.report import walk_waterfall

needs_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)
ROOT = Path(__file__).resolve().parent.parent
OLD = ROOT / "tests" / "fixtures" / "transcripts" / "demo-nginx-buffering.ndjson"
LINE = (
    '127.0.0.1 - - [06/Dec/2026:20:01:02 +0000] "POST /v1/completions HTTP/1.1" 200 5120 "-" '
    '"python-httpx/0.28.1" rt={rt} uct="0.000" uht="{uht}" urt="{urt}"\n'
)
# The rounds the waterfall reads: the endpoints pings (the walk's first route needs them), the
# direct and the proxy baselines, and nginx's log around the latter.
KEPT = {"endpoints", "direct", "proxy", "proxy_access_mark", "proxy_access"}


def _baseline_playbook(tmp_path: Path) -> Path:
    """The built-in playbook with every probe but KEPT removed: the same nodes and routes,
    walked in seconds (the removed probes' procedure items credited to the first kept one)."""
    import yaml

    from wizard import playbook

    book = yaml.safe_load(Path(playbook.load().path).read_text(encoding="utf-8"))
    acted: set[str] = set()
    first = None
    for node in book["nodes"].values():
        kept = [p for p in node.get("probes", []) if p["as"] in KEPT]
        acted.update(
            a for p in node.get("probes", []) if p not in kept for a in p.get("acts_on", [])
        )
        node["probes"] = kept
        first = first or next(iter(kept), None)
    assert first is not None
    first["acts_on"] = sorted(acted | set(first.get("acts_on", [])))
    path = tmp_path / "playbook-baselines.yaml"
    path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    return path


def _export(path: Path, fmt: str, *extra: str) -> str:
    result = subprocess.run(wizard_command("export", str(path), "--format", fmt, *extra),
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def _round(
    server: dict[str, Any] | None, ttfts: list[float], path: str = "proxy"
) -> dict[str, Any]:
    """A measure probe's result as the walk records it (the facts the waterfall reads)."""
    facts = {"path": path, "url": "http://x", "values": {"ttft_ms": ttfts}, "server": server}
    return {"type": "probe_result", "node": "n", "data": {"probe": "measure", "as": path,
            "error": None, "facts": facts}}  # fmt: skip


def _access(facts: dict[str, Any]) -> dict[str, Any]:
    return {"type": "probe_result", "node": "n", "data": {"probe": "nginx-access",
            "as": "proxy_access", "error": None, "facts": facts}}  # fmt: skip


SERVER = {"available": True, "server_ttft_mean_ms": 500.0, "queue_mean_ms": 300.0,
          "prefill_mean_ms": 150.0}  # fmt: skip
ACCESS = {"available": True, "requests": 10, "request_time_ms": 900.0,
          "upstream_response_time_ms": 880.0, "upstream_header_time_ms": 12.0,
          "request_time_count": 10, "upstream_header_time_count": 10}  # fmt: skip


def test_each_part_is_its_own_source() -> None:
    """nginx's own time is $request_time - $upstream_response_time, the API server's share
    $upstream_header_time, the queue and prefill the engine's, its rest TTFT - queue - prefill,
    and the remainder the client's mean TTFT less all of them."""
    rows = walk_waterfall.build([_round(SERVER, [550.0, 570.0]), _access(ACCESS)])
    (row,) = rows
    parts = {p["hop"]: p["ms"] for p in row["parts"]}
    assert parts == pytest.approx(
        {"proxy": 20.0, "api_server": 12.0, "queue": 300.0, "prefill": 150.0, "engine_other": 50.0}
    )
    assert row["client_ttft_ms"] == pytest.approx(560.0) and row["client_requests"] == 2
    assert row["unexplained_ms"] == pytest.approx(560.0 - 532.0)
    assert row["access"] == "read" and row["missing"] == []


def test_direct_has_no_nginx_hop_and_a_missing_log_says_why() -> None:
    """Straight to the server there is no nginx hop to show or miss: the remainder is the API
    server's and the network's. Through the proxy without an access log its hops are missing
    (not zero), and why: none given, none marked, or lines without a hop's time."""
    direct, proxy = walk_waterfall.build(
        [_round(SERVER, [520.0], "direct"), _round(SERVER, [560.0])]
    )
    assert direct["missing"] == [] and "access" not in direct
    assert {p["hop"] for p in direct["parts"]} == {"queue", "prefill", "engine_other"}
    assert direct["unexplained_ms"] == pytest.approx(20.0)
    assert proxy["missing"] == ["proxy", "api_server"] and proxy["access"] == "not_given"
    assert proxy["unexplained_ms"] == pytest.approx(60.0)
    for facts, state in (({"available": False, "why": "no_mark"}, "no_mark"),
                         ({**ACCESS, "requests": 0, "request_time_ms": None,
                           "upstream_response_time_ms": None, "upstream_header_time_ms": None},
                          "no_timings")):  # fmt: skip
        (row,) = walk_waterfall.build([_round(SERVER, [560.0]), _access(facts)])
        assert row["access"] == state and row["missing"] == ["proxy", "api_server"]
        for lang in ("en", "zh"):
            assert walk_waterfall.lines(row, lang)[-1] == say(f"waterfall.access.{state}", lang)


def test_hops_that_add_up_to_more_than_the_clients_ttft_leave_nothing_never_a_negative_time() -> (
    None
):
    """The engine's means cover every request of the round and the client's only its steady ones:
    they can add up to a little more (a CI demo printed "unexplained: -0.3 ms"). The remainder
    stays in the data; the reader sees that nothing is left, and by how much the hops exceed."""
    (row,) = walk_waterfall.build([_round(SERVER, [499.7], "direct")])
    assert row["unexplained_ms"] == pytest.approx(-0.3)
    for lang in ("en", "zh"):
        shown = [*walk_waterfall.lines(row, lang), *walk_waterfall.compact([row], lang)]
        assert not any("-0.3" in line for line in shown), shown
        said = say("waterfall.overshoot", lang, ms="0.3")
        assert sum(said in line for line in shown) == 2, shown


def test_a_round_without_the_engines_times_has_no_waterfall_and_says_why() -> None:
    """A server without /metrics, or a round recorded before the engine's prefill time was kept:
    no waterfall, in words (never zeros)."""
    old = {k: v for k, v in SERVER.items() if k != "prefill_mean_ms"}
    for server, why in (({"available": False}, "no_metrics"), (old, "recorded_before"),
                        ({**SERVER, "server_ttft_mean_ms": None}, "no_engine_ttft")):  # fmt: skip
        (row,) = walk_waterfall.build([_round(server, [560.0])])
        assert row["absent"] == why and "parts" not in row
        for lang in ("en", "zh"):
            assert walk_waterfall.lines(row, lang)[1] == say(f"waterfall.absent.{why}", lang)


def test_the_access_probe_reads_only_what_the_round_added(tmp_path: Path) -> None:
    """The mark is where the log ends; the read takes the lines appended after it (a real file
    written between the two), and a log cut shorter than the mark (rotated) is not read."""
    log = tmp_path / "access.log"
    log.write_text(LINE.format(rt="9.000", uht="5.000", urt="8.000"))
    ctx = ProbeContext(target="http://x", nginx_access_log=str(log))
    mark = asyncio.run(nginx_access.probe(ctx, {"mark": True}))
    assert mark == {"available": True, "file": str(log), "offset": log.stat().st_size}
    with log.open("a") as handle:
        handle.write(LINE.format(rt="0.412", uht="0.003", urt="0.410"))
        handle.write(LINE.format(rt="0.500", uht="0.005", urt="0.490"))
    read = asyncio.run(nginx_access.probe(ctx, {"since": mark["offset"]}))
    assert read["available"] and read["requests"] == 2
    assert read["upstream_header_time_ms"] == pytest.approx(4.0)
    assert read["request_time_ms"] - read["upstream_response_time_ms"] == pytest.approx(6.0)
    # The round the walk kept: its requests are the last ones (an earlier attempt's before).
    kept = asyncio.run(nginx_access.probe(ctx, {"since": mark["offset"], "steady": 1, "cold": 0}))
    assert (kept["logged"], kept["requests"]) == (2, 1)
    assert kept["upstream_header_time_ms"] == pytest.approx(5.0)
    log.write_text("")  # rotated: shorter than the mark
    assert (asyncio.run(nginx_access.probe(ctx, {"since": mark["offset"]})))["why"] == "no_mark"
    assert (asyncio.run(nginx_access.probe(ctx, {"since": None})))["why"] == "no_mark"
    given_none = ProbeContext(target="http://x")
    assert (asyncio.run(nginx_access.probe(given_none, {"mark": True})))["why"] == "not_given"


def _noise_ms(facts: dict[str, Any]) -> float:
    """How far the parts may miss the client's mean TTFT without anything being wrong.

    The client's mean is over the round's steady requests, the engine's means (and nginx's)
    over every request of the round, its cold ones too (probes/measure_probe.py). Two things
    then move the sum: the mean's own sampling error (three standard errors of the steady
    TTFTs), and the cold requests' weight in the engine's means, at most their share times the
    largest TTFT of the round (every TTFT is positive, so no mean of a subset is further from
    another's). Plus nginx's millisecond resolution (waterfall.NGINX_RESOLUTION_MS)."""
    ttfts = facts["values"]["ttft_ms"]
    cold = facts["cold"] or {"requests": 0, "ttft_p99": 0.0}
    share = cold["requests"] / (cold["requests"] + facts["steady"]["requests"])
    largest = max(max(ttfts), cold["ttft_p99"] or 0.0)
    standard_error = statistics.stdev(ttfts) / math.sqrt(len(ttfts))
    return 3 * standard_error + share * largest + waterfall.NGINX_RESOLUTION_MS


@needs_nginx
def test_the_walks_waterfall_adds_up_to_the_clients_ttft_behind_real_nginx(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    """A real walk (run --nginx-access-log) against the simulator behind a real nginx writing
    each hop's time: the proxy's waterfall has every hop, nginx's from the lines the round added
    (one per request it sent), and the parts and the remainder add up to the client's TTFT with
    the remainder within the client's noise; md, html, text, the end of the walk and zh say it."""
    sim = sim_factory()
    path = tmp_path / "walk.ndjson"
    with Nginx(sim.url, {"proxy_buffering": "off"}, timing_log=True) as nginx:
        nginx.access_log.write_text("")  # its own lines only: the preflight's is not a completion
        walked = subprocess.run(
            wizard_command("run", "--target", sim.url, "--proxy", nginx.url, "--auto",
                           "--nginx-access-log", str(nginx.access_log), "--transcript", str(path),
                           "--playbook", str(_baseline_playbook(tmp_path))),
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
    assert walked.returncode in (0, 3), walked.stderr
    events = transcript.load(path).events
    results: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        if event["type"] == "probe_result":
            results.setdefault(event["data"]["as"], []).append(event["data"]["facts"])
    (access,) = results["proxy_access"]
    (proxy_round,) = results["proxy"]
    # nginx's lines are the kept round's requests (an attempt its client could not time, measured
    # again, logged lines of its own before them).
    sent = proxy_round["steady"]["requests"] + proxy_round["cold"]["requests"]
    assert access["available"] and access["requests"] == sent <= access["logged"]
    report = json.loads(_export(path, "json"))
    rows = {row["path"]: row for row in report["waterfall"]}
    assert set(rows) == {"direct", "proxy"}
    proxy = rows["proxy"]
    parts = {p["hop"]: p["ms"] for p in proxy["parts"]}
    assert set(parts) == {"proxy", "api_server", "queue", "prefill", "engine_other"}
    assert proxy["access"] == "read" and proxy["missing"] == []
    # The simulated API server spends ApiServerCosts.per_request_ms (0.5 ms of CPU) on each
    # request before the engine sees it, and nginx waits for that before the headers.
    assert parts["api_server"] >= 0.5
    server = proxy_round["server"]
    assert parts["queue"] == pytest.approx(server["queue_mean_ms"])
    assert parts["prefill"] == pytest.approx(server["prefill_mean_ms"])
    client = statistics.mean(proxy_round["values"]["ttft_ms"])
    assert proxy["explained_ms"] + proxy["unexplained_ms"] == pytest.approx(client)
    assert abs(proxy["unexplained_ms"]) <= _noise_ms(proxy_round), proxy
    # Straight to the server the remainder holds the API server and the network, untimed there:
    # never less than nothing beyond the noise.
    direct = rows["direct"]
    assert {p["hop"] for p in direct["parts"]} == {"queue", "prefill", "engine_other"}
    assert direct["unexplained_ms"] >= -_noise_ms(results["direct"][0]), direct
    out = " ".join(walked.stdout.split())
    assert out.index("First token, hop by hop (means)") > out.index("TL;DR")
    assert "API server before the engine ($upstream_header_time)" in out
    md, text = _export(path, "md"), _export(path, "text")
    assert "First token, hop by hop (means)" in md and "straight to the server" in md
    # The text summary's one line: the proxy's, which has the most hops.
    assert "proxy first token: TTFT" in text and "direct first token" not in text
    assert "API server" in text.split("proxy first token")[1]
    assert "首 token 逐跳耗时（均值）" in _export(path, "md", "--lang", "zh")
    html = _export(path, "html")
    assert "First token, hop by hop (means)" in html and "$upstream_header_time" in html


def test_an_older_transcript_exports_saying_why_it_has_no_waterfall() -> None:
    """Recorded before the rounds kept the engine's prefill time: it still exports in every
    format, the waterfall absent in words."""
    report = json.loads(_export(OLD, "json"))
    assert {row["absent"] for row in report["waterfall"]} == {"recorded_before"}
    said = "recorded before the rounds kept the engine's prefill time"
    assert said in _export(OLD, "md") and said in _export(OLD, "text")
    assert said in _export(OLD, "html").replace("&#x27;", "'").replace("&#39;", "'")
    assert "这份记录写于各轮开始保存引擎预填充时间之前" in _export(OLD, "text", "--lang", "zh")


def test_an_edited_waterfalls_facts_are_one_line_never_a_crash(tmp_path: Path) -> None:
    """Facts the waterfall reads, edited (re-chained, so the chain holds): a reason no words
    know, TTFTs that are no numbers. The export says the event does not fit, in one line."""
    from wizard.record.transcript import Redactor, TranscriptWriter

    source = transcript.load(OLD)
    header = {k: v for k, v in source.header.items()
              if k not in ("type", "schema_version", "tool_version", "started_at")}  # fmt: skip
    path = tmp_path / "edited.ndjson"
    writer = TranscriptWriter.create(path, header, Redactor())
    for event in source.events:
        writer.append(event["type"], event["node"], event["data"])
    writer.append("probe_result", "baseline.proxy", {"probe": "nginx-access", "as": "proxy_access",
                  "error": None, "facts": {"available": False, "why": "gone fishing"}})  # fmt: skip
    writer.append("probe_result", "baseline.proxy", {"probe": "measure", "as": "proxy",
                  "error": None, "facts": {"path": "proxy", "url": "http://x",
                                           "values": {"ttft_ms": ["fast"]}}})  # fmt: skip
    writer.close()
    for fmt in ("md", "text", "json"):
        assert _export(path, fmt)
    assert "data.facts.why is 'gone fishing'" in _export(path, "md")
    # Markdown escapes the index's brackets.
    assert r"data.facts.values.ttft_ms\[0\] is a str" in _export(path, "md")
