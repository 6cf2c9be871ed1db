"""The demo stack: the simulator and, when nginx is installed, a throwaway nginx in front of it
with nginx's default buffering (the classic fault). It is also an Applier: the demo owns both
processes, so it can apply a proposed change for real (restart the simulator with the new flag,
reload nginx with the new directive) and the walk can measure the effect.

The simulator runs with ``--http h11``: it answers nginx's HTTP/1.0 upstream request with a
close-delimited body, which is where nginx's default ``proxy_buffering on`` really holds SSE events
back. A stock vLLM (uvicorn with httptools) answers chunked, and nginx then passes events through.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from wizard.errors import UsageError, WizardError
from wizard.levers.nginx_runner import Nginx, find_nginx, free_port
from wizard.sim.config import SpeculativeConfig
from wizard.sim.scenarios import get_scenario
from wizard.walk.operator import Decision

SIM_FLAGS = {
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_num_batched_tokens": "--max-num-batched-tokens",
    "max_num_seqs": "--max-num-seqs",
    "max_model_len": "--max-model-len",
    "api_server_count": "--api-server-count",
}
# Switches: "True" gives --NAME, "False" --no-NAME.
SIM_SWITCHES = {
    "enable_prefix_caching": "enable-prefix-caching",
    "enable_chunked_prefill": "enable-chunked-prefill",
    "enforce_eager": "enforce-eager",
}
# Switches the simulator has only on: "True" gives the flag, "False" leaves it out.
SIM_ONLY_ON = {"disable_log_stats": "--disable-log-stats"}
# Set inside --speculative-config: the scenario's config with fewer tokens, or none at 0.
SIM_SPECULATIVE = "num_speculative_tokens"
NGINX_DEFAULTS = {"proxy_buffering": "on", "proxy_read_timeout": "60s", "gzip_types": "text/html"}
# The upstream framing under which nginx's default buffering batches a stream (see above).
SIM_HTTP = "h11"


def engine_flags(given: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` items (``--engine-flag``) as simulator flags; a clear error for anything else."""
    flags = {}
    for item in given:
        name, sep, value = item.partition("=")
        name = name.strip().removeprefix("--").replace("-", "_")
        if not sep or not value.strip():
            raise UsageError.said("error.engine_flag_form", item=repr(item))
        if name not in SIM_FLAGS and name not in SIM_ONLY_ON:
            names = ", ".join([*sorted(SIM_FLAGS), *SIM_ONLY_ON])
            raise UsageError.said("error.engine_flag_name", item=repr(item), names=names)
        if name in SIM_ONLY_ON and value.strip() not in ("True", "False"):
            raise UsageError.said("error.engine_flag_bool", item=repr(item), name=name)
        flags[name] = value.strip()
    return flags


class DemoStack:
    """Starts, changes and stops the demo's processes."""

    def __init__(self, scenario: str, with_nginx: bool = True) -> None:
        self.scenario = scenario
        self.with_nginx = with_nginx and find_nginx() is not None
        self.workdir = Path(tempfile.mkdtemp(prefix="latency-wizard-demo-"))
        self.port = free_port()
        self.sim_flags: dict[str, str] = {}
        self.sim: subprocess.Popen[str] | None = None
        self.nginx: Nginx | None = None

    @property
    def sim_url(self) -> str:
        """Base URL of the simulator."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def sim_log(self) -> Path:
        """The simulator's vLLM-formatted log."""
        return self.workdir / "vllm.log"

    @property
    def host_evidence(self) -> Path:
        """The simulated GPU host's files (lscpu, nvidia-smi topo -m, GPU list, env)."""
        return self.workdir / "host"

    def launch(self) -> DemoStack:
        """Start the simulator's process and return at once: it boots (its simulated weights
        and graphs) while the caller loads the walk; ``start`` waits for it."""
        if self.sim is None:
            self._launch_sim()
        return self

    def start(self) -> DemoStack:
        """Start the simulator (unless launched) and nginx, and wait until both answer; raise
        WizardError if either fails."""
        self.launch()
        self._await_sim()
        if self.with_nginx:
            # Its access log writes each hop's time: the summary's first-token waterfall.
            self.nginx = Nginx(self.sim_url, timing_log=True).start()
        return self

    def _start_sim(self) -> None:
        self._launch_sim()
        self._await_sim()

    def _launch_sim(self) -> None:
        command = [sys.executable, "-m", "wizard", "sim", "--port", str(self.port), "--quiet",
                   "--scenario", self.scenario, "--log-file", str(self.sim_log),
                   "--host-evidence", str(self.host_evidence), "--http", SIM_HTTP]  # fmt: skip
        for name, value in self.sim_flags.items():
            if name in SIM_SWITCHES:
                command.append(("--" if value == "True" else "--no-") + SIM_SWITCHES[name])
            elif name in SIM_ONLY_ON:
                command += [SIM_ONLY_ON[name]] if value == "True" else []
            elif name == SIM_SPECULATIVE:
                command += ["--speculative-config", self._speculative_config(int(value))]
            else:
                command += [SIM_FLAGS[name], value]
        self.sim = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    def _await_sim(self) -> None:
        assert self.sim is not None and self.sim.stdout is not None
        line = self.sim.stdout.readline()
        if not re.search(r"listening on", line):
            error = self.sim.stderr.read().strip() if self.sim.stderr else ""
            self.sim.wait()
            raise WizardError(
                f"the simulator did not start: {error.splitlines()[-1] if error else line}"
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.sim_url + "/health", timeout=2).status_code == 200:
                    return
            time.sleep(0.1)
        raise WizardError("the simulator did not become ready within 60 s")

    def _speculative_config(self, tokens: int) -> str:
        """The scenario's --speculative-config with ``tokens`` drafts; JSON null (off) at 0."""
        spec = get_scenario(self.scenario).changes.get("speculative_config")
        if tokens == 0 or not isinstance(spec, SpeculativeConfig):
            return "null"
        return json.dumps({**dataclasses.asdict(spec), "num_speculative_tokens": tokens})

    def _stop_sim(self) -> None:
        if self.sim is not None and self.sim.poll() is None:
            self.sim.terminate()
            try:
                self.sim.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.sim.kill()
                self.sim.wait()
        if self.sim is not None:
            for stream in (self.sim.stdout, self.sim.stderr):
                if stream is not None:
                    stream.close()
        self.sim = None

    def stop(self, keep_files: bool = False) -> list[Path]:
        """Stop everything this stack started and remove its temporary folders (the simulator's
        log, the GPU host's files, nginx's prefix), unless asked to keep them: those it kept."""
        kept = [self.workdir]
        if self.sim is not None and self.sim.poll() is None:
            self.sim.terminate()  # it shuts down while nginx does; _stop_sim waits for it
        if self.nginx is not None:
            kept.append(self.nginx.prefix)
            self.nginx.stop(keep_prefix=keep_files)
            self.nginx = None
        self._stop_sim()
        if not keep_files:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return kept if keep_files else []

    # -- Applier ------------------------------------------------------------------------------

    def can_apply(self, change: dict[str, Any]) -> bool:
        """True for the simulator flags and nginx directives the demo knows how to change."""
        if change.get("layer") == "vllm":
            known = change.get("parameter") in {**SIM_FLAGS, **SIM_SWITCHES, SIM_SPECULATIVE: 0}
            return known and change.get("after") is not None
        if change.get("layer") == "nginx":
            return (
                self.nginx is not None
                and change.get("parameter") in NGINX_DEFAULTS
                and "after" in change
            )
        return False

    def apply(self, change: dict[str, Any]) -> Decision:
        """Apply one change for real and say what was done."""
        parameter, after = str(change["parameter"]), str(change["after"])
        if change["layer"] == "vllm":
            # What the simulator runs with now: a flag the demo set, else the scenario's own value,
            # else what the walk read off the server (its log, cache_config_info).
            known = get_scenario(self.scenario).changes.get(parameter, change.get("before"))
            before = self.sim_flags.get(
                parameter, "the simulator's default" if known is None else str(known)
            )
            self.sim_flags[parameter] = after
            self._stop_sim()
            self._start_sim()
            return Decision(applied=True, layer="vllm", parameter=parameter, before=before, after=after,
                            note="the demo restarted its simulator with the new flag", restarted=True)  # fmt: skip
        assert self.nginx is not None
        before = self.nginx.directives.get(parameter, NGINX_DEFAULTS[parameter])
        self.nginx.reload({**self.nginx.directives, parameter: after})
        return Decision(applied=True, layer="nginx", parameter=parameter, before=before, after=after,
                        note="the demo reloaded its nginx with the new directive")  # fmt: skip
