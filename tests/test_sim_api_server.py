"""The simulator's API server processes: their CPU charged per request and per streamed token,
shown as ``process_cpu_seconds_total`` with one process and not at all with several (vLLM's
multiprocess registry), and ``--api-server-count`` logged and read back as vLLM's argument."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import httpx

from tests.conftest import SimProcess, wizard_command
from wizard.probes.readers.metrics import api_server_cpu_cores, parse
from wizard.sim.config import ApiServerCosts
from wizard.sim.scenarios import get_scenario

SimFactory = Callable[..., SimProcess]


def completions(sim: SimProcess, n: int, max_tokens: int, *, stream: bool) -> None:
    for _ in range(n):
        body = {"prompt": "a b c d", "max_tokens": max_tokens, "ignore_eos": True, "stream": stream}
        response = httpx.post(sim.url + "/v1/completions", json=body, timeout=30)
        assert response.status_code == 200, response.text


def test_the_api_server_cpu_is_what_its_requests_and_tokens_cost(sim_factory: SimFactory) -> None:
    costs = get_scenario("api-server-cpu").changes["api_server_costs"]
    assert isinstance(costs, ApiServerCosts)
    sim = sim_factory("--scenario", "api-server-cpu")
    before = parse(sim.metrics())
    completions(sim, 2, 40, stream=False)
    completions(sim, 1, 30, stream=True)
    after = parse(sim.metrics())
    assert before.process_cpu_seconds_total is not None
    assert after.process_cpu_seconds_total is not None
    charged = after.process_cpu_seconds_total - before.process_cpu_seconds_total
    # 3 requests and 110 tokens, whatever the machine's speed: the work, not this process's CPU.
    expected = (3 * costs.per_request_ms + 110 * costs.per_token_ms) / 1000
    assert abs(charged - expected) < 1e-6, (charged, expected)


def test_several_api_servers_show_no_process_series_and_log_their_count(
    sim_factory: SimFactory,
) -> None:
    sim = sim_factory("--api-server-count", "2")
    completions(sim, 1, 5, stream=True)
    text = sim.metrics()
    assert "process_cpu_seconds_total" not in text and "vllm:generation_tokens_total" in text
    assert parse(text).process_cpu_seconds_total is None
    assert "'api_server_count': 2" in sim.log()
    read = subprocess.run(
        wizard_command("probe", "vllm-log", str(sim.log_file), "--json"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert read.returncode == 0, read.stderr
    assert '"api_server_count": 2' in read.stdout


def test_the_cpu_rate_needs_one_process_and_both_scrape_times() -> None:
    text = "# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total {}\nvllm:x 1\n"
    before, after = parse(text.format(10.0)), parse(text.format(14.5))
    assert api_server_cpu_cores(before, after) is None  # never scraped: no window
    before.scraped_at, after.scraped_at = 100.0, 105.0
    assert api_server_cpu_cores(before, after) == 0.9
    restarted = parse(text.format(1.0))
    restarted.scraped_at = 106.0
    assert api_server_cpu_cores(after, restarted) is None
    several = parse("vllm:x 1\n")
    several.scraped_at = 106.0
    assert api_server_cpu_cores(after, several) is None
