"""The optional parts of the install: a command that needs one it lacks says which, in one line.

`pip install latency-wizard` leaves out the simulator's web stack (`[sim]`), MLPerf LoadGen
(`[loadgen]`) and uvloop (`[timing]`). Each test runs the real command line in a fresh interpreter where those modules
cannot be imported, as in such an install; what works without them still works.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SimProcess, assert_walk_exit
from wizard.record import transcript

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "transcripts" / "examples" / "1-kv-pressure-direct.ndjson"


def without(
    modules: tuple[str, ...], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``latency-wizard ARGS`` with ``modules`` unimportable (None in sys.modules)."""
    script = (
        "import sys\n"
        f"for name in {modules!r}: sys.modules[name] = None\n"
        "from wizard.cli.main import main\n"
        f"sys.exit(main({list(args)!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)  # fmt: skip


@pytest.mark.parametrize("command", ["sim", "demo"])
def test_the_simulator_without_its_part_names_it(command: str) -> None:
    done = without(("starlette", "uvicorn"), command)
    assert done.returncode == 1, done.stderr
    assert done.stderr.splitlines() == [
        f"latency-wizard {command}: error: latency-wizard {command} needs the optional 'sim' part "
        "(starlette, uvicorn not installed): pip install 'latency-wizard[sim]'"
    ]
    assert "Traceback" not in done.stderr and not done.stdout


def test_loadgen_without_its_part_names_it_and_replay_export_and_help_work() -> None:
    done = without(("mlperf_loadgen",), "probe", "validate", "--target", "http://127.0.0.1:9",
                   "--scenario", "SingleStream")  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "pip install 'latency-wizard[loadgen]'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    everything = ("starlette", "uvicorn", "mlperf_loadgen", "uvloop", "numpy", "networkx")
    for args in (["--help"], ["replay", str(EXAMPLE)], ["export", str(EXAMPLE), "--format", "md"]):
        done = without(everything, *args)
        assert done.returncode == 0, (args, done.stderr[-2000:])
        assert done.stdout.strip(), args


def test_the_client_runs_on_asyncios_loop_without_uvloop() -> None:
    """Without ``[timing]`` the client's event loop is asyncio's own: a measurement still runs."""
    script = (
        "import sys\n"
        "sys.modules['uvloop'] = None\n"
        "import asyncio\n"
        "from wizard.ui import aio\n"
        "async def which():\n"
        "    return type(asyncio.get_running_loop()).__module__\n"
        "print(aio.run(which()))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, stdin=subprocess.DEVNULL)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("asyncio"), done.stdout


def test_a_walk_without_loadgen_defaults_to_not_validating_and_a_yes_names_the_part(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """Validating with LoadGen defaults to no on a machine without it (what --auto answers);
    the operator who says yes is told, in the probe's failure, which part to install."""
    answers = tmp_path / "answers.yaml"
    answers.write_text("run_loadgen: true\n")
    path = tmp_path / "walk.ndjson"
    done = without(("mlperf_loadgen",), "run", "--target", healthy_sim.url, "--answers",
                   str(answers), "--transcript", str(path), "--rounds", "brief", timeout=600)  # fmt: skip
    assert_walk_exit(done, path)
    events = transcript.load(path).events
    asked = next(e["data"] for e in events
                 if e["type"] == "question" and e["data"]["id"] == "run_loadgen")  # fmt: skip
    assert (asked["default"], asked["default_from"], asked["asked"]) == (
        False,
        "install.loadgen",
        True,
    )
    assert "(this machine's install: MLPerf LoadGen installed)" in " ".join(done.stdout.split())
    failed = [e["data"] for e in events
              if e["type"] == "probe_result" and e["data"]["probe"] == "validate"]  # fmt: skip
    assert [d["as"] for d in failed] == ["loadgen_before", "loadgen"]
    assert all(d["error"].endswith("pip install 'latency-wizard[loadgen]'") for d in failed), failed
