"""An engine that dies while the walk serves it (issue #26): LAT046 is the cause, wherever the walk
is when it dies, and what failed after it (LoadGen's INVALID) follows from it, never the cause.

The simulator's engine core dies after admitting N requests (``--die-after-requests``) as vLLM's
does on a fatal error: its lines in the log, HTTP 500 with vLLM's EngineDeadError text, /health 503.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, assert_walk_exit, wizard_command
from tests.test_walk import walk
from wizard.record import transcript

SimFactory = Callable[..., SimProcess]
# The start's own checks and the baseline round get through; the engine dies in the A/A round.
DIES_AFTER = ("--die-after-requests", "30")


def codes_and_root(path: Path) -> tuple[list[str], dict[str, Any]]:
    loaded = transcript.load(path)
    codes = [e["data"]["code"] for e in loaded.events if e["type"] == "finding"]
    exported = subprocess.run(wizard_command("export", str(path), "--format", "json"),
                              capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    return codes, json.loads(exported.stdout)["answer"]["cause"]


@pytest.mark.parametrize("with_log", [True, False])
def test_an_engine_that_dies_while_serving_is_the_cause_not_loadgens_invalid(
    sim_factory: SimFactory, tmp_path: Path, with_log: bool
) -> None:
    """With the log: its engine-dead line, read again at the validation. Without it: every
    request failing after a healthy start, /health no longer 200."""
    sim = sim_factory(*DIES_AFTER)
    log = ("--vllm-log", str(sim.log_file)) if with_log else ()
    result, path = walk(tmp_path, "--target", sim.url, *log, answers={"run_loadgen": True})
    assert_walk_exit(result, path)
    codes, root = codes_and_root(path)
    assert "LAT046" in codes and "LAT060" not in codes, codes
    assert root["code"] == "LAT046"
    [finding] = [e["data"] for e in transcript.load(path).events
                 if e["type"] == "finding" and e["data"]["code"] == "LAT046"]  # fmt: skip
    if with_log:
        assert finding["evidence"].startswith("the vLLM log reports the engine dead at line ")
        assert finding["evidence"].endswith("after the server had started; /health answers 503 now")
    else:
        assert finding["evidence"].startswith("every request of ")
        assert "loadgen" in finding["evidence"]
        assert finding["evidence"].endswith("/health answers 503 now")
    assert finding["evidence_texts"]["zh"].endswith("/health 现在返回 503")


def test_rounds_that_fail_on_a_healthy_server_are_no_death(healthy_sim: SimProcess) -> None:
    """Every request of a round and every LoadGen query failing while /health still answers 200
    (a server that answers errors: a wrong model name, a key) is no dead engine."""
    from types import SimpleNamespace

    from wizard.probes.http.measure_probe import ALL_FAILED
    from wizard.probes.readers import engine_state
    from wizard.probes.runner import ProbeContext
    from wizard.ui import aio

    facts = {
        "endpoints": {"health_status": 200},
        "loaded": {"error": f"{ALL_FAILED} (http_404 x16): The model `x` does not exist."},
        "loadgen": {"result": "ERROR", "queries": 64, "failed": 64},
    }
    ctx = ProbeContext(target=healthy_sim.url, session=SimpleNamespace(facts=facts))
    found = aio.run(engine_state.probe(ctx, {}))
    assert found["rounds_failed"] == ["loaded", "loadgen"] and found["health_status"] == 200
    assert found["died"] is False and found["why"] is None
    # The same rounds with /health gone: every request failing after a healthy start.
    from wizard.levers.nginx_runner import free_port

    nobody = f"http://127.0.0.1:{free_port()}"  # a port nothing listens on
    gone = ProbeContext(target=nobody, session=SimpleNamespace(facts=facts))
    dead = aio.run(engine_state.probe(gone, {}))
    assert (dead["died"], dead["died_from"]) == (True, "requests")
