"""nginx: static analysis fixtures (positive and _fp for every finding) and the dynamic signature
against a real nginx in front of the simulator, one variant per test."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.errors import WizardError
from wizard.levers.nginx_runner import Nginx, find_nginx
from wizard.probes.http.proxy_compare import compare_paths
from wizard.probes.http.stream import RequestSpec
from wizard.probes.readers.nginx_config import ConfigSyntaxError, analyse
from wizard.ui import aio

SimFactory = Callable[..., SimProcess]
MODEL = "meta-llama/Llama-3.1-8B-Instruct"
requires_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)


def http(location: str, server: str = "", top: str = "", upstream: str = "") -> str:
    return f"""
events {{}}
http {{
    {top}
    {upstream}
    server {{
        listen 80;
        server_name llm.example.com;
        {server}
        location /v1/ {{
            proxy_pass http://vllm_backend;
            {location}
        }}
    }}
}}
"""


KEEPALIVE = "upstream vllm_backend { server 127.0.0.1:8000; keepalive 16; }"
GOOD = 'proxy_buffering off; proxy_http_version 1.1; proxy_set_header Connection "";'
# code -> (config that must raise it, config that must not, worst observed gap in ms or None)
FIXTURES: dict[str, tuple[str, str, float | None]] = {
    "LAT001": (http("", upstream=KEEPALIVE), http("proxy_http_version 1.1;", server="proxy_buffering off;", upstream=KEEPALIVE), None),
    "LAT002": (http("gzip on; gzip_types text/event-stream;"), http("gzip on; gzip_types text/event-stream;" + GOOD, upstream=KEEPALIVE), None),
    "LAT003": (http(GOOD + "proxy_read_timeout 1s;", upstream=KEEPALIVE), http(GOOD + "proxy_read_timeout 60s;", upstream=KEEPALIVE), 2000.0),
    "LAT004": (http(GOOD + "proxy_connect_timeout 120s;", upstream=KEEPALIVE), http(GOOD + "proxy_connect_timeout 75s;", upstream=KEEPALIVE), None),
    "LAT005": (http("proxy_buffering off;"), http(GOOD, upstream=KEEPALIVE), None),
}  # fmt: skip


def codes(tmp_path: Path, text: str, worst_gap: float | None = None) -> set[str]:
    path = tmp_path / "nginx.conf"
    path.write_text(text)
    return {f["code"] for f in analyse(path, worst_gap)["findings"]}


@pytest.mark.parametrize("code", sorted(FIXTURES))
def test_finding_fixtures(tmp_path: Path, code: str) -> None:
    positive, false_positive, gap = FIXTURES[code]
    assert code in codes(tmp_path, positive, gap)
    assert code not in codes(tmp_path, false_positive, gap)


def test_every_static_finding_has_both_fixtures() -> None:
    from wizard.probes.readers import nginx_config

    source = Path(nginx_config.__file__).read_text()
    emitted = {
        code for code in ("LAT001", "LAT002", "LAT003", "LAT004", "LAT005") if f'"{code}"' in source
    }
    assert emitted == set(FIXTURES)
    assert all(positive != fp for positive, fp, _ in FIXTURES.values())


def test_inheritance_and_array_replacement(tmp_path: Path) -> None:
    text = http("proxy_buffering on; proxy_ignore_headers Set-Cookie;", server="proxy_read_timeout 300s;",
                top="proxy_buffering off; proxy_ignore_headers X-Accel-Buffering;")  # fmt: skip
    path = tmp_path / "nginx.conf"
    path.write_text(text)
    location = analyse(path)["locations"][0]
    assert (location["proxy_buffering"], location["proxy_buffering_from"]) == ("on", "location")
    assert location["ignores_x_accel_buffering"] is False  # the inner array replaced the outer one
    assert location["proxy_read_timeout_s"] == 300
    assert location["server_name"] == "llm.example.com" and location["listen"] == "80"
    inherited = http("", top="proxy_buffering off; proxy_ignore_headers X-Accel-Buffering Expires;")
    path.write_text(inherited)
    location = analyse(path)["locations"][0]
    assert (location["proxy_buffering"], location["proxy_buffering_from"]) == ("off", "http")
    assert location["ignores_x_accel_buffering"] is True
    path.write_text(http(""))
    location = analyse(path)["locations"][0]
    assert (location["proxy_buffering"], location["proxy_buffering_from"]) == ("on", "default")
    # Unset: nginx's default, as proxy_buffering's (1.0 before 1.29.7, the version is not given).
    assert (location["proxy_http_version"], location["proxy_http_version_from"]) == (
        "1.0",
        "default",
    )
    assert "1.29.7" in location["proxy_http_version_note"]


@pytest.mark.parametrize(
    "fragment",
    [
        "location /v1/ {\n\tproxy_pass http://${VLLM_UPSTREAM};  # templated\n}\n",
        "# pasted from the ticket\nserver {\n    listen 443 ssl;\n    location / { proxy_pass http://10.1.2.3:8000; }\n}\n",
        "location / {\n  proxy_pass http://vllm;\n  location /v1/chat/ { proxy_pass http://vllm; proxy_buffering off; }\n}\n",
    ],
)
def test_pasted_fragments(tmp_path: Path, fragment: str) -> None:
    path = tmp_path / "fragment.conf"
    path.write_text(fragment)
    report = analyse(path)
    assert report["locations"] and report["locations"][0]["proxy_buffering"] == "on"
    assert "LAT001" in {f["code"] for f in report["findings"]}


def test_nested_location_inherits_from_its_parent(tmp_path: Path) -> None:
    path = tmp_path / "nested.conf"
    path.write_text(
        "location / {\n proxy_buffering off; proxy_pass http://a;\n location /v1/ { proxy_pass http://a; }\n}\n"
    )
    inner = next(loc for loc in analyse(path)["locations"] if loc["path"] == "/v1/")
    assert (inner["proxy_buffering"], inner["proxy_buffering_from"]) == ("off", "location")


def test_nginx_dump_resolves_includes_among_its_own_files(tmp_path: Path) -> None:
    dump = tmp_path / "nginx-T.txt"
    dump.write_text(
        "# configuration file /etc/nginx/nginx.conf:\n"
        "events {}\nhttp {\n    gzip on;\n    include /etc/nginx/conf.d/*.conf;\n}\n\n"
        "# configuration file /etc/nginx/conf.d/llm.conf:\n"
        "server {\n    listen 8080;\n    location /v1/ {\n        proxy_pass http://127.0.0.1:8000;\n"
        "        gzip_types text/event-stream;\n    }\n}\n"
    )
    report = analyse(dump)
    assert report["files"] == ["/etc/nginx/conf.d/llm.conf", "/etc/nginx/nginx.conf"]
    location = report["locations"][0]
    assert location["file"] == "/etc/nginx/conf.d/llm.conf" and location["line"] == 3
    assert location["gzip_event_stream"] is True  # gzip from http, types from the location
    assert {"LAT001", "LAT002"} <= {f["code"] for f in report["findings"]}


def test_directory_input(tmp_path: Path) -> None:
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "nginx.conf").write_text("events {}\nhttp { include conf.d/*.conf; }\n")
    (tmp_path / "conf.d" / "a.conf").write_text(
        "server { location / { proxy_pass http://x; proxy_buffering off; } }\n"
    )
    location = analyse(tmp_path)["locations"][0]
    assert location["proxy_buffering"] == "off" and location["file"].endswith("a.conf")


def test_syntax_error_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.conf"
    path.write_text("http {\n  server {\n    location / {\n      proxy_pass http://x;\n    }\n")
    with pytest.raises(ConfigSyntaxError) as caught:
        analyse(path)
    assert str(caught.value).startswith(f"{path}:")
    result = subprocess.run(wizard_command("probe", "nginx-config", str(path)), capture_output=True, text=True,
                            timeout=60)  # fmt: skip
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and f"{path}:5: unexpected end of file" in lines[0]
    with pytest.raises(WizardError, match="cannot read"):
        analyse(tmp_path / "missing.conf")


def test_a_file_that_is_no_nginx_config_says_so(tmp_path: Path) -> None:
    # An answers file given by mistake: crossplane's error has no message, and the line ended in
    # "answers.yaml:1:" with nothing after it (found trying the README as a new user).
    path = tmp_path / "answers.yaml"
    path.write_text("run_loadgen: maybe\ngpus: -2\n")
    with pytest.raises(ConfigSyntaxError) as caught:
        analyse(path)
    assert str(caught.value) == (
        f"{path}:1: does not parse as an nginx config (is this the right file?)"
    )


def test_nginx_config_cli_json(tmp_path: Path) -> None:
    path = tmp_path / "nginx.conf"
    path.write_text(FIXTURES["LAT004"][0])
    result = subprocess.run(wizard_command("probe", "nginx-config", str(path), "--json"), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1
    report = json.loads(result.stdout)
    location = report["locations"][0]
    for key in ("file", "line", "server_name", "listen", "path", "proxy_pass", "proxy_buffering",
                "proxy_buffering_from", "ignores_x_accel_buffering", "proxy_read_timeout_s",
                "proxy_connect_timeout_s", "proxy_send_timeout_s", "proxy_http_version",
                "gzip_event_stream", "proxy_cache"):  # fmt: skip
        assert key in location
    assert [f["code"] for f in report["findings"]] == ["LAT004"]
    assert report["findings"][0]["directive"] == "proxy_connect_timeout 10s;"


@requires_nginx
def test_real_nginx_dump_is_analysed(healthy_sim: SimProcess) -> None:
    with Nginx(healthy_sim.url, {"proxy_read_timeout": "5s"}) as nginx:
        dump = subprocess.run(
            nginx._command("-T"), capture_output=True, text=True, check=True
        ).stdout
    path = nginx.prefix.parent / f"{nginx.prefix.name}-dump.txt"
    try:
        path.write_text(dump)
        report = analyse(path)
    finally:
        path.unlink()
    location = report["locations"][0]
    assert location["proxy_pass"] == healthy_sim.url and location["proxy_read_timeout_s"] == 5
    assert "LAT001" in {f["code"] for f in report["findings"]}


# -- the dynamic signature, real nginx in front of the simulator ------------------------------------


@pytest.fixture(scope="module")
def xab_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    from tests.conftest import start_sim

    sim = start_sim(tmp_path_factory.mktemp("xab"), "--x-accel-buffering-no")
    yield sim
    sim.stop()


def verdict(direct: str, via: str, input_tokens: int = 16, timeout: float = 30.0) -> dict[str, Any]:
    spec = RequestSpec(model=MODEL, input_tokens=input_tokens, max_tokens=64)
    return aio.run(compare_paths(direct, via, spec, repeat=3, timeout_s=timeout))


@pytest.fixture(scope="module")
def h11_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """An upstream that answers nginx's HTTP/1.0 close-delimited (uvicorn forced to h11)."""
    from tests.conftest import start_sim

    sim = start_sim(tmp_path_factory.mktemp("h11"), "--http", "h11")
    yield sim
    sim.stop()


@requires_nginx
def test_stock_nginx_passes_a_chunked_upstream_event_by_event(healthy_sim: SimProcess) -> None:
    """As with a stock vLLM (uvicorn with httptools answers HTTP/1.0 with a chunked body):
    proxy_buffering on does not batch the stream, so there is no proxy cause."""
    with Nginx(healthy_sim.url) as nginx:
        report = verdict(healthy_sim.url, nginx.url)
    assert not report["buffering_suspected"] and not report["whole_stream_held"]
    assert report["verdict"] == "the proxy passes events through as they come"


@requires_nginx
def test_nginx_defaults_buffer(h11_sim: SimProcess) -> None:
    with Nginx(h11_sim.url) as nginx:
        report = verdict(h11_sim.url, nginx.url)
    assert (
        report["buffering_suspected"]
        and not report["whole_stream_held"]
        and not report["truncated"]
    )
    assert report["ttft_inflation_ms"] > 50 and report["max_events_per_read_via"] >= 4
    assert report["headers_delayed"]
    assert report["verdict"].startswith("the proxy buffers")


@requires_nginx
def test_proxy_buffering_off_passes_events(healthy_sim: SimProcess) -> None:
    with Nginx(healthy_sim.url, {"proxy_buffering": "off"}) as nginx:
        report = verdict(healthy_sim.url, nginx.url)
    assert not report["buffering_suspected"] and not report["headers_delayed"]
    assert report["verdict"] == "the proxy passes events through as they come"


@requires_nginx
def test_upstream_x_accel_buffering_no_overrides_the_default(xab_sim: SimProcess) -> None:
    with Nginx(xab_sim.url) as nginx:
        report = verdict(xab_sim.url, nginx.url)
    assert not report["buffering_suspected"]


@requires_nginx
def test_gzip_with_buffering_holds_the_whole_stream(healthy_sim: SimProcess) -> None:
    with Nginx(healthy_sim.url, {"gzip": "on", "gzip_types": "text/event-stream"}) as nginx:
        report = verdict(healthy_sim.url, nginx.url)
    assert report["whole_stream_held"] and report["buffering_suspected"] and report["gzip"]
    assert report["via"]["summary"]["burst"]["content_encodings"] == ["gzip"]
    assert report["verdict"].startswith("the proxy compresses the event stream")


@requires_nginx
def test_read_timeout_shorter_than_a_stall_cuts_the_stream(sim_factory: SimFactory) -> None:
    # A tiny token budget makes an 8,000-token prompt take ~1.4 s to prefill: a 1 s silence.
    sim = sim_factory(
        "--max-num-batched-tokens", "64", "--max-num-seqs", "64", "--no-enable-prefix-caching"
    )  # the same prompt twice: no cache may serve the second
    with Nginx(sim.url, {"proxy_buffering": "off", "proxy_read_timeout": "1s"}) as nginx:
        report = verdict(sim.url, nginx.url, input_tokens=8000)
        error_log = nginx.error_log.read_text()
    assert report["truncated"] and report["verdict"].startswith("the proxy cuts streams")
    assert all(s["status"] == 200 for s in report["via"]["samples"])  # not a 504
    assert "upstream timed out" in error_log


@requires_nginx
def test_probe_proxy_cli(h11_sim: SimProcess) -> None:
    with Nginx(h11_sim.url) as nginx:
        result = subprocess.run(
            wizard_command("probe", "proxy", "--target", h11_sim.url, "--proxy", nginx.url, "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert result.returncode == 1
    report = json.loads(result.stdout)
    for key in ("direct", "via", "buffering_suspected", "ttft_inflation_ms", "max_events_per_read_via",
                "headers_delayed", "truncated", "verdict"):  # fmt: skip
        assert key in report
    assert report["buffering_suspected"] is True
    # The old spellings still work (scripts rely on them), out of --help (docs/cli.md).
    with Nginx(h11_sim.url) as nginx:
        old = subprocess.run(
            wizard_command("probe", "proxy", "--direct", h11_sim.url, "--via", nginx.url, "--json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert old.returncode == 1 and json.loads(old.stdout)["buffering_suspected"] is True
    help_text = subprocess.run(wizard_command("probe", "proxy", "--help"), capture_output=True,
                               text=True, timeout=60).stdout  # fmt: skip
    assert "--target" in help_text and "--direct" not in help_text and "--via" not in help_text
