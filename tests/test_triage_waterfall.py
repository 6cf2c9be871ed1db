"""The first token hop by hop: nginx's access log (``$request_time``, ``$upstream_header_time``,
``$upstream_response_time``), the engine's own queue, prefill and TTFT from /metrics deltas, and
the remainder of a client-measured TTFT. Real nginx in front of a real simulator; the client is
the wizard's own stream probe, run by the test."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.levers.nginx_runner import Nginx, find_nginx
from wizard.measure import waterfall
from wizard.probes.readers import metrics, nginx_access

needs_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)
LINE = (
    '127.0.0.1 - - [06/Dec/2026:20:01:02 +0000] "POST /v1/completions HTTP/1.1" 200 5120 "-" '
    '"python-httpx/0.28.1" rt=0.412 uct="0.000" uht="0.003" urt="0.410"'
)


def test_an_access_line_gives_each_hop() -> None:
    timing = nginx_access.read_line(LINE)
    assert timing == nginx_access.Timings(0.412, 0.0, 0.003, 0.41)


def test_attempts_are_summed_and_other_lines_skipped() -> None:
    retried = LINE.replace('uht="0.003"', 'uht="0.002, 0.004"')
    timing = nginx_access.read_line(retried)
    assert timing is not None and timing.upstream_header_time == pytest.approx(0.006)
    assert (
        nginx_access.read_line(LINE.replace('uht="0.003"', 'uht="-"')).upstream_header_time is None
    )  # type: ignore[union-attr]
    assert nginx_access.read_line(LINE.replace("/v1/completions", "/metrics")) is None
    assert nginx_access.read_line(LINE.replace(" 200 ", " 502 ")) is None
    assert nginx_access.read_line('127.0.0.1 - - [x] "GET / HTTP/1.1" 200 1 "-" "-"') is None
    # The variables' own names read the same as the short ones.
    named = "request_time=0.5 upstream_header_time=0.01 upstream_response_time=0.49"
    assert nginx_access.read_line(named) == nginx_access.Timings(0.5, None, 0.01, 0.49)


def test_parts_are_their_sources_and_the_rest_is_unexplained() -> None:
    delta = {"requests": 10.0, "server_ttft_mean_s": 0.5, "server_queue_mean_s": 0.3,
             "server_prefill_mean_s": 0.15}  # fmt: skip
    access = {"request_time_ms": 900.0, "upstream_response_time_ms": 880.0,
              "upstream_header_time_ms": 12.0, "request_time_count": 10,
              "upstream_header_time_count": 10}  # fmt: skip
    built = waterfall.build(delta, access, client_ttft_ms=560.0)
    parts = {p["hop"]: p["ms"] for p in built["parts"]}
    assert parts == pytest.approx(
        {"proxy": 20.0, "api_server": 12.0, "queue": 300.0, "prefill": 150.0, "engine_other": 50.0}
    )
    assert built["unexplained_ms"] == pytest.approx(560.0 - 532.0)
    assert built["missing"] == []
    # Without the access log, its hops are missing (not zero), and no client: nothing unexplained.
    bare = waterfall.build(delta)
    assert bare["missing"] == ["proxy", "api_server"] and bare["unexplained_ms"] is None


@needs_nginx
def test_the_waterfall_through_real_nginx_adds_up_to_the_client_ttft(
    sim_factory: Callable[..., SimProcess], tmp_path: Path
) -> None:
    sim = sim_factory()
    with Nginx(sim.url, {"proxy_buffering": "off"}, timing_log=True) as nginx:
        before = metrics.parse(sim.metrics())
        result = subprocess.run(
            wizard_command("probe", "stream", "--target", nginx.url, "--repeat", "6",
                           "--max-tokens", "16", "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        after = metrics.parse(sim.metrics())
        samples = [s for s in json.loads(result.stdout)["samples"] if s["error"] is None]
        access = nginx_access.read_path(nginx.access_log)
        # The triage command reads the same log: the passive hops are in its JSON.
        triage = subprocess.run(
            wizard_command("triage", "--target", sim.url, "--proxy", nginx.url,
                           "--nginx-access-log", str(nginx.access_log), "--interval", "0.5",
                           "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert triage.returncode in (0, 3), triage.stderr
    passive = {p["hop"] for p in json.loads(triage.stdout)["waterfall"]["parts"]}
    assert {"proxy", "api_server"} <= passive
    delta = metrics.delta(before, after)
    # Every request the client sent is one access line and one engine observation.
    assert len(samples) == 6
    assert access["requests"] == delta["requests"] == len(samples)
    client_ms = sum(s["ttft_ms"] for s in samples) / len(samples)
    built = waterfall.build(delta, access, client_ttft_ms=client_ms)
    parts = {p["hop"]: p for p in built["parts"]}
    assert set(parts) == {"proxy", "api_server", "queue", "prefill", "engine_other"}
    # The simulated API server spends ApiServerCosts.per_request_ms (0.5 ms of CPU) on each
    # request before the engine sees it, and nginx waits for that before the headers.
    assert parts["api_server"]["ms"] >= 0.5
    # Causal order, not timing: the engine's TTFT and the wait for headers both lie inside the
    # client's send -> first token, for the same requests; nginx writes its times in whole
    # milliseconds (each end truncated), so its share is known to within one.
    explained = built["engine_ttft_ms"] + parts["api_server"]["ms"]
    assert explained <= client_ms + waterfall.NGINX_RESOLUTION_MS
    assert built["explained_ms"] + built["unexplained_ms"] == pytest.approx(client_ms)
