"""Shared fixtures: real simulator processes on loopback."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.realvllm import REAL_API_KEY, RealVllm, host_dtype, vllm_python
from tests.recorder import Recorder
from wizard.record import transcript

URL_LINE = re.compile(r"listening on (http://\S+)")


@dataclass
class SimProcess:
    """A running ``latency-wizard sim`` subprocess."""

    url: str
    process: subprocess.Popen[str]
    log_file: Path
    stderr_file: Path
    host_evidence: Path  # the simulated GPU host's lscpu, nvidia-smi topo -m, GPU list, env

    def log(self) -> str:
        """The vLLM-formatted log written so far."""
        return self.log_file.read_text(encoding="utf-8")

    def metrics(self) -> str:
        """The current /metrics text."""
        return httpx.get(self.url + "/metrics", timeout=10).text

    def wait_ready(self, timeout: float = 30.0) -> None:
        """Block until /health answers 200."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.05)
        raise AssertionError(f"simulator at {self.url} never became ready")

    def stop(self) -> None:
        """Terminate the process and wait for it."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def assert_export_contract(data: dict[str, Any]) -> None:
    """`export --format json` keeps the keys design §5 lists (other tools read them)."""
    assert {
        "schema_version",
        "session",
        "baseline",
        "steps",
        "changes",
        "findings",
        "audit",
    } <= set(data)
    for finding in data["findings"]:
        assert {"code", "cause", "severity", "title", "evidence", "advice", "change"} <= set(
            finding
        )


def wizard_command(*args: str) -> list[str]:
    """The command line for running latency-wizard from this checkout's interpreter."""
    return [sys.executable, "-m", "wizard", *args]


def refused_start(port: int, log: Path, *flags: str) -> None:
    """Run a simulator that refuses to start (as vLLM does with these flags) on ``port``; its
    refusal is appended to ``log``."""
    refused = subprocess.run(
        wizard_command("sim", "--port", str(port), "--quiet", "--log-file", str(log), *flags),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert refused.returncode == 1, refused.stderr


def leftover_processes(path: Path) -> list[str]:
    """Processes still running from the demo that wrote this transcript, and from no other.

    Its simulator and nginx run from temporary folders of their own, named in the header: only
    command lines naming those folders count, so a demo or a test beside this one never does.
    """
    header = transcript.load(path).header
    folders = {str(Path(header[key]).parent) for key in ("vllm_log",) if header.get(key)}
    if header.get("nginx_conf"):
        folders.add(str(Path(header["nginx_conf"]).parent.parent))
    assert folders, header
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout.splitlines()
    return [line for line in ps if any(f in line for f in folders) and "ps -eo" not in line]


def start_sim(
    tmp_path: Path, *args: str, wait: bool = True, env: dict[str, str] | None = None
) -> SimProcess:
    """Start a simulator on a free loopback port and return once it listens (and is ready)."""
    index = len(list(tmp_path.glob("sim-*.log")))
    log_file = tmp_path / f"sim-{index}.log"
    stderr_file = tmp_path / f"sim-{index}.stderr"
    host_evidence = tmp_path / f"sim-{index}-host"
    command = wizard_command("sim", "--port", "0", "--quiet", "--log-file", str(log_file),
                             "--host-evidence", str(host_evidence), *args)  # fmt: skip
    full_env = {**os.environ, **(env or {})}
    with stderr_file.open("w") as err:
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=err, text=True, env=full_env
        )
    assert process.stdout is not None
    line = process.stdout.readline()
    match = URL_LINE.search(line)
    if not match:
        process.wait(timeout=10)
        process.stdout.close()
        raise AssertionError(f"simulator did not start: {line!r} {stderr_file.read_text()}")
    sim = SimProcess(match.group(1), process, log_file, stderr_file, host_evidence)
    if wait:
        sim.wait_ready()
    return sim


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator[Callable[..., SimProcess]]:
    """Start simulators with given flags; every one is stopped at teardown."""
    started: list[SimProcess] = []

    def factory(*args: str, wait: bool = True, env: dict[str, str] | None = None) -> SimProcess:
        sim = start_sim(tmp_path, *args, wait=wait, env=env)
        started.append(sim)
        return sim

    yield factory
    for sim in started:
        sim.stop()


@pytest.fixture(scope="module")
def healthy_sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimProcess]:
    """One healthy simulator shared by a module's read-only tests."""
    sim = start_sim(tmp_path_factory.mktemp("sim"))
    yield sim
    sim.stop()


# --- the real-vLLM tier ------------------------------------------------------------------------
# A test marked ``@pytest.mark.real_vllm("CONFIG")`` gets the real server of that configuration
# from ``real_vllm``. Servers are expensive (a minute to start, ~3 GB, one core busy-polled), so
# at most one runs at a time, and the real tests are run last, grouped by configuration, so that
# each server starts once.

REAL_CONFIGS: dict[str, dict[str, Any]] = {
    "healthy": {},
    # uvicorn forced to h11: an HTTP/1.0 request gets a close-delimited body (nginx then buffers).
    "h11": {"h11": True},
    "seqs1": {"args": ("--max-num-seqs", "1")},
    # 17 blocks of 128 tokens: 2,176 tokens of KV cache, preemption under 8 streams.
    "override17": {"args": ("--num-gpu-blocks-override", "17")},
    # 16 blocks hold 2,048 tokens; one max_model_len request needs 2048/128 + 1: start fails.
    "override16": {"args": ("--num-gpu-blocks-override", "16")},
    "chunked_off": {"args": ("--no-enable-chunked-prefill", "--max-num-batched-tokens", "512")},
    # Both set by hand, the budget below max_num_seqs: SchedulerConfig refuses it (issue #26).
    "seqs_above_budget": {"args": ("--max-num-batched-tokens", "64", "--max-num-seqs", "128")},
    # A budget of 64 tokens alone (max_num_seqs, unset, is lowered to it): a long prompt waits
    # for 30 steps of it while nothing queues (its stats lines say `Waiting: 0`).
    "budget64": {"args": ("--max-num-batched-tokens", "64")},
    "no_template_key": {"chat_template": False, "api_key": REAL_API_KEY},
    # The CPU build takes the flag: cache_config_info says enable_prefix_caching="False".
    "prefix_off": {"args": ("--no-enable-prefix-caching",)},
}


def pytest_configure(config: pytest.Config) -> None:
    """Give the processes the tests start a terminal's SIGINT.

    A script that runs pytest in the background (`.ci/run ... &` in a non-interactive shell, which
    has no job control) starts it with SIGINT ignored, and every walk a test starts inherits that:
    in such a CI rehearsal the Ctrl-C tests' SIGINT did nothing (the walk ran to its end, exit 0;
    the demo outlived its 60 s). The tests stand for a user at a terminal, where SIGINT is live."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    # Transcripts are signed with a key in the user's config folder (wizard/record/signing.py): the
    # tests and the walks they start keep theirs in a folder of their own, never the user's.
    config_home = tempfile.mkdtemp(prefix="latency-wizard-config-")
    os.environ["XDG_CONFIG_HOME"] = config_home
    config.add_cleanup(lambda: shutil.rmtree(config_home, ignore_errors=True))
    # The walks the tests start measure brief rounds (`--rounds brief`: half of each load round's
    # requests, through the same sequential engine users get): the suite's walks take about two
    # thirds of the time. LATENCY_WIZARD_ROUNDS=full runs the suite at the playbook's depth; a
    # test about round sizes passes `--rounds full` itself.
    os.environ.setdefault("LATENCY_WIZARD_ROUNDS", "brief")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Real-vLLM tests last, grouped by configuration (so each server starts once)."""
    order = list(REAL_CONFIGS)

    def key(item: pytest.Item) -> tuple[int, int]:
        marker = item.get_closest_marker("real_vllm")
        if marker is None:
            return (0, 0)
        return (1, order.index(marker.args[0]))

    items.sort(key=key)


class RealVllmPool:
    """Starts real servers on demand, one running at a time."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.servers: dict[str, RealVllm] = {}
        self.current: RealVllm | None = None

    def get(self, config: str) -> RealVllm:
        if config not in REAL_CONFIGS:
            raise KeyError(f"no real vLLM configuration {config!r}; known: {sorted(REAL_CONFIGS)}")
        server = self.servers.get(config)
        # A failed start is kept as it is (its log is the evidence); a running one is shared.
        if server is not None and (server.running or server.started_s is None):
            return server
        server = self.start(config, **REAL_CONFIGS[config])
        self.servers[config] = server
        return server

    def start(self, name: str, **spec: Any) -> RealVllm:
        """A server of any configuration (a proposed change tried for real), stopping the last."""
        if self.current is not None:
            self.current.stop()
        self.current = RealVllm(
            name, tuple(spec.get("args", ())), self.workdir / name, api_key=spec.get("api_key"),
            chat_template=spec.get("chat_template", True), h11=spec.get("h11", False),
        ).start()  # fmt: skip
        return self.current

    def stop(self) -> None:
        for server in [*self.servers.values(), *([self.current] if self.current else [])]:
            server.stop()


# The real servers' --dtype and why, once a real-vLLM test has run (said in the test report).
REAL_DTYPE = pytest.StashKey[tuple[str, str]]()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which dtype the real servers ran with and why (shown under -q too, unlike a header)."""
    if (chosen := terminalreporter.config.stash.get(REAL_DTYPE, None)) is not None:
        terminalreporter.write_line(f"real vLLM: --dtype {chosen[0]}: {chosen[1]}")


@pytest.fixture(scope="session")
def real_vllm_pool(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RealVllmPool]:
    vllm_python()  # skip (or fail under WIZARD_REQUIRE_REAL_VLLM=1) before anything starts
    request.config.stash[REAL_DTYPE] = host_dtype()
    pool = RealVllmPool(tmp_path_factory.mktemp("real-vllm"))
    yield pool
    pool.stop()


@pytest.fixture
def real_vllm(request: pytest.FixtureRequest, real_vllm_pool: RealVllmPool) -> RealVllm:
    """The real server of the test's ``real_vllm`` marker configuration (started or failed)."""
    marker = request.node.get_closest_marker("real_vllm")
    if marker is None or not marker.args:
        raise pytest.UsageError("a test using real_vllm needs @pytest.mark.real_vllm('CONFIG')")
    return real_vllm_pool.get(marker.args[0])


# --- exit codes of a walk ----------------------------------------------------------------------
WALK_EXIT = {"no_cause": 0, "cause_remains": 3, "nothing_measured": 4}


def assert_walk_exit(result: subprocess.CompletedProcess[str], path: Path) -> dict[str, Any]:
    """The walk completed, and its exit code says what its ``end`` event says; returns that."""
    from wizard.record import transcript

    assert result.returncode in WALK_EXIT.values(), result.stderr
    loaded = transcript.load(path)
    assert loaded.complete, result.stderr
    end = loaded.events[-1]["data"]
    assert result.returncode == WALK_EXIT[end["outcome"]], (end, result.stderr)
    return dict(end)


def playbook_with_rule(tmp_path: Path, node: str, code: str, when: dict[str, Any]) -> Path:
    """The built-in playbook with ``code``'s rule at ``node`` (added if absent) firing on ``when``.

    For tests of what the walk does with a finding, whatever makes it fire on this machine.
    """
    import yaml

    from wizard import playbook

    book = yaml.safe_load(Path(playbook.load().path).read_text(encoding="utf-8"))
    rules = book["nodes"][node].setdefault("rules", [])
    rule = next((r for r in rules if r["finding"] == code), None)
    if rule is None:
        rule = {"finding": code}
        rules.append(rule)
    rule["when"] = when
    path = tmp_path / f"playbook-{code}.yaml"
    path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    return path


def playbook_with_probes_only(
    tmp_path: Path, keep: tuple[str, ...], params: dict[str, Any] | None = None
) -> Path:
    """The built-in playbook with every probe but ``keep`` removed: the same nodes, rules and
    routes, walked in seconds. For tests of what the walk makes of one probe's evidence (the
    removed probes' procedure items are credited to the first kept one, so the playbook loads).
    ``params`` override the kept probes' own (a shorter round)."""
    import yaml

    from wizard import playbook

    book = yaml.safe_load(Path(playbook.load().path).read_text(encoding="utf-8"))
    acted: set[str] = set()
    first = None
    for node in book["nodes"].values():
        kept = [p for p in node.get("probes", []) if p["name"] in keep]
        for probe in kept:
            probe["params"] = {**probe.get("params", {}), **(params or {})}
        acted.update(
            a for p in node.get("probes", []) if p not in kept for a in p.get("acts_on", [])
        )
        node["probes"] = kept
        first = first or next(iter(kept), None)
    assert first is not None, f"no probe named {keep} in the playbook"
    first["acts_on"] = sorted(acted | set(first.get("acts_on", [])))
    path = tmp_path / "playbook-probes-only.yaml"
    path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    return path


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    """A loopback listener that keeps every request's headers (tests/recorder.py)."""
    server = Recorder()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
