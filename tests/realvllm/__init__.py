"""The real-vLLM test tier: a real vLLM 0.32 (CPU build) serving a tiny random-weight model.

The server runs from a venv of its own (``.ci/install-real-vllm``), found through
``WIZARD_VLLM_PYTHON``. Without it every ``real_vllm`` test skips with that reason, unless
``WIZARD_REQUIRE_REAL_VLLM=1`` (CI), where a missing venv is a failure. Servers are started on
loopback with a configuration each, shared by the tests that need it (see ``conftest.py``), and
stopped by PID (the whole process group: API server, engine core and worker).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

HERE = Path(__file__).parent
# Start-up on a busy 2-core machine: 42 s with --enforce-eager and VLLM_CPU_CI_ENV=1, more when cold.
START_TIMEOUT_S = 420.0
SERVED_NAME = "tiny"
MAX_MODEL_LEN = 2048
# The key of the server started with --api-key (a test value, not a secret).
REAL_API_KEY = "real-tier-key"


def vllm_python() -> str:
    """The real vLLM's python, or skip (fail under WIZARD_REQUIRE_REAL_VLLM=1) saying why.

    ``WIZARD_VLLM_UNAVAILABLE`` is why it could not be installed here (``.ci/run`` sets it when
    ``.ci/install-real-vllm`` finds no CPU build of torch)."""
    python = os.environ.get("WIZARD_VLLM_PYTHON", "")
    reason = ""
    if not python:
        reason = os.environ.get("WIZARD_VLLM_UNAVAILABLE") or (
            "WIZARD_VLLM_PYTHON is not set (run .ci/install-real-vllm; see README)"
        )
    elif not Path(python).is_file():
        reason = f"WIZARD_VLLM_PYTHON={python} does not exist"
    if reason:
        if os.environ.get("WIZARD_REQUIRE_REAL_VLLM") == "1":
            pytest.fail(f"real vLLM required but missing: {reason}")
        pytest.skip(f"real vLLM tier skipped: {reason}")
    return python


CPUINFO = Path("/proc/cpuinfo")


# The tiny model's own dtype (its config.json: torch_dtype), which vLLM takes when none is given.
MODEL_DTYPE = "bfloat16"


def dtype_flags() -> list[str]:
    """``--dtype`` only where the host needs another than the model's own: a flag given without
    need is one more logged argument than the simulator's (the parity test compares them)."""
    chosen = host_dtype()[0]
    return [] if chosen == MODEL_DTYPE else ["--dtype", chosen]


def host_dtype() -> tuple[str, str]:
    """The ``--dtype`` the real server starts with on this host, and why (said in the test report).

    The tiny model is bfloat16. On a host whose CPU has AMX, vLLM 0.32's CPU bfloat16 path killed
    the worker with SIGILL on the first request, after the server had started and answered
    /health, and float32 served (facts/real-vllm.md, 2026-12-06). The fault is in the serving path
    of a real request, which a short probe (a bfloat16 matmul in that venv's torch) does not take,
    so the CPU's flags decide. float32 keeps the block size (128), so every block-count fault is
    unchanged.
    """
    try:
        flags = next(
            (line.split(":", 1)[1].split() for line in CPUINFO.read_text().splitlines()
             if line.startswith("flags")),
            [],
        )  # fmt: skip
    except OSError as error:
        return MODEL_DTYPE, f"the model's own dtype ({CPUINFO} unreadable: {error.strerror})"
    amx = sorted(flag for flag in flags if flag.startswith("amx"))
    if amx:
        return "float32", (
            f"this CPU has AMX ({' '.join(amx)}), where vLLM 0.32's CPU bfloat16 path dies with "
            "SIGILL on the first request"
        )
    return MODEL_DTYPE, "the model's own dtype (this CPU has no AMX, whose bfloat16 path fails)"


def make_model(directory: Path, *, chat_template: bool = True) -> Path:
    """A tiny Llama (config + tokenizer trained here; random weights at load time)."""
    if not (directory / "config.json").exists():
        command = [vllm_python(), str(HERE / "make_model.py"), str(directory)]
        if not chat_template:
            command.append("--no-chat-template")
        subprocess.run(command, check=True, capture_output=True, timeout=300)
    return directory


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# Uvicorn picks httptools when it is installed (a stock vLLM install has it): to an HTTP/1.0
# request it answers with a chunked body. Forcing h11 gives the close-delimited upstream instead.
H11_LAUNCH = (
    "import runpy, sys, uvicorn.config as c\n"
    "orig = c.Config.__init__\n"
    "def init(self, *a, **k):\n"
    "    k['http'] = 'h11'; orig(self, *a, **k)\n"
    "c.Config.__init__ = init\n"
    "sys.argv = ['api_server', *sys.argv[1:]]\n"
    "runpy.run_module('vllm.entrypoints.openai.api_server', run_name='__main__')"
)


def _yield_to_the_client() -> None:
    """In the server's process, before it starts: a lower priority than the tests' own processes.

    On two shared cores the server's engine busy-polls one core and its API server and worker take
    the other, and the measuring client, which needs 5 % of a core, was kept waiting for one:
    its loop woke 100-600 ms late at the p90 and whole streams arrived in one read on the direct
    path. The wizard measures from another machine in real use; lowering the server's priority
    gives the client its wake-ups back and leaves the server every idle cycle. Its own session is
    its own autogroup (Linux), so the group's nice is lowered too: a process nice alone would
    count only inside the group.
    """
    os.nice(10)
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("10")


@dataclass
class RealVllm:
    """One real vLLM server process on loopback (or a start that failed, with its log)."""

    name: str
    args: tuple[str, ...]
    workdir: Path
    api_key: str | None = None
    chat_template: bool = True
    h11: bool = False
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    started_s: float | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        return self.workdir / f"{self.name}.log"

    def log(self) -> str:
        return self.log_file.read_text(encoding="utf-8", errors="replace")

    def command(self, model_dir: Path) -> list[str]:
        flags = [
            "--model", str(model_dir), "--load-format", "dummy",
            "--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(self.port),
            "--max-model-len", str(MAX_MODEL_LEN), "--enforce-eager", *dtype_flags(),
            *self.args,
        ]  # fmt: skip
        if self.api_key:
            flags += ["--api-key", self.api_key]
        entry = ["-c", H11_LAUNCH] if self.h11 else ["-m", "vllm.entrypoints.openai.api_server"]
        return [vllm_python(), *entry, *flags]

    def start(self) -> RealVllm:
        """Start and wait for /health 200, or for the process to exit (a failed start)."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        model_dir = make_model(
            self.workdir.parent / ("model" if self.chat_template else "model-no-template"),
            chat_template=self.chat_template,
        )
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_CPU_CI_ENV": "1", "PYTHONUNBUFFERED": "1",
        }  # fmt: skip
        env.pop("VLLM_API_KEY", None)  # the server's key is --api-key, never the test's env
        began = time.monotonic()
        with self.log_file.open("wb") as log:
            self.process = subprocess.Popen(
                self.command(model_dir), stdout=log, stderr=subprocess.STDOUT, env=env,
                cwd=self.workdir, start_new_session=True, preexec_fn=_yield_to_the_client,
            )  # fmt: skip
        deadline = began + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return self  # a failed start: the log says why
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/health", timeout=2).status_code == 200:
                    self.started_s = time.monotonic() - began
                    return self
            time.sleep(0.5)
        self.stop()
        raise AssertionError(f"real vLLM {self.name} not ready after {START_TIMEOUT_S:.0f} s")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> None:
        """Stop the server's whole process group (it was started in a session of its own)."""
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # The engine core outlives the API server by a second or two, busy-polling a core: the
        # next test's server (or walk) must not share the machine with it.
        if not _group_gone(self.process.pid, within_s=30):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            _group_gone(self.process.pid, within_s=10)


def _group_gone(group: int, within_s: float) -> bool:
    """Whether every process of the group has exited, waiting up to ``within_s``."""
    until = time.monotonic() + within_s
    while time.monotonic() < until:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False
