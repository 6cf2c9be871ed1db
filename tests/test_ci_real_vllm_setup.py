"""How CI sets up the real-vLLM tier: a CPU torch or none, the skip reason, the host's dtype.

``.ci/install-real-vllm`` runs for real here (its own venvs, real pip against an index on
loopback); nothing leaves the machine.
"""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import venv
from collections.abc import Iterator
from pathlib import Path

import pytest

import tests.realvllm as realvllm
from tests.realvllm import RealVllm, host_dtype, vllm_python

ROOT = Path(__file__).resolve().parent.parent
INSTALL = ROOT / ".ci" / "install-real-vllm"


@pytest.fixture
def empty_index(tmp_path: Path) -> Iterator[str]:
    """A package index on loopback that has nothing (every project page is a 404)."""
    served = tmp_path / "index"
    (served / "simple").mkdir(parents=True)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(served), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    server.shutdown()
    server.server_close()


def pip_env_only(index: str) -> dict[str, str]:
    """pip with no configuration file (the machine's own wheels and indexes unseen), only ``index``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "VIRTUAL_ENV"))}
    return {
        **env, "PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": index, "PIP_RETRIES": "0",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1", "TORCH_CPU_INDEX": index,
    }  # fmt: skip


def test_no_cpu_torch_reachable_is_exit_3_with_the_reason(tmp_path: Path, empty_index: str) -> None:
    """Neither a local CPU wheel nor the CPU index: exit 3, why on stdout (CI's skip reason)."""
    target = tmp_path / "vllm-venv"
    result = subprocess.run(
        [str(INSTALL), str(target)], capture_output=True, text=True, timeout=240,
        env=pip_env_only(empty_index),
    )  # fmt: skip
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == (
        f"no CPU build of torch 2.13.0 is reachable (no local wheel, nor {empty_index})"
    )
    # It tried the local wheel, then the CPU index, and installed no torch at all.
    assert f"trying {empty_index}" in result.stderr
    assert not list(target.glob("lib/python3*/site-packages/torch"))


def fake_installed_vllm(target: Path, cuda: str | None, kernels: bool = True) -> Path:
    """A venv where ``import vllm`` works, ``torch.version.cuda`` is ``cuda`` and vLLM's CPU
    kernels register their ops (or, without ``kernels``, fail to, as without libnuma).

    Stands for an earlier install, to check what the script says of what it finds."""
    venv.create(target, with_pip=False)
    site = next(target.glob("lib/python3*/site-packages"))
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text(
        "from types import SimpleNamespace\n"
        "from . import version\n"
        "__version__ = '2.13.0'\n"
        "ops = SimpleNamespace(_C=SimpleNamespace())\n"
    )
    (site / "torch" / "version.py").write_text(f"cuda = {cuda!r}\n")
    (site / "vllm" / "platforms").mkdir(parents=True)
    (site / "vllm" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "__init__.py").write_text("")
    (site / "vllm" / "platforms" / "cpu.py").write_text(
        "import torch\n"
        "class CpuPlatform:\n"
        "    @classmethod\n"
        "    def import_kernels(cls):\n"
        f"        if {kernels}:\n"
        "            torch.ops._C.init_cpu_memory_env = lambda nodes: None\n"
    )
    return target / "bin" / "python"


def install(target: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(INSTALL), str(target)], capture_output=True, text=True, timeout=60)


def test_a_cuda_torch_is_refused_clearly(tmp_path: Path) -> None:
    fake_installed_vllm(tmp_path / "v", cuda="12.8")
    result = install(tmp_path / "v")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "torch 2.13.0 in " in result.stderr
    assert "is a CUDA build (CUDA 12.8); the real vLLM needs the CPU build" in result.stderr


def test_vllm_kernels_that_do_not_load_are_refused(tmp_path: Path) -> None:
    """As on a fresh Debian without libnuma: `import vllm` works, its server's worker would not."""
    fake_installed_vllm(tmp_path / "v", cuda=None, kernels=False)
    result = install(tmp_path / "v")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "vLLM's CPU kernels do not load here" in result.stderr


def test_a_cpu_torch_with_its_kernels_is_taken(tmp_path: Path) -> None:
    python = fake_installed_vllm(tmp_path / "v", cuda=None)
    result = install(tmp_path / "v")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(python)


def test_the_skip_says_why_the_real_vllm_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    reason = "no CPU build of torch 2.13.0 is reachable (no local wheel, nor http://x)"
    monkeypatch.delenv("WIZARD_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("WIZARD_REQUIRE_REAL_VLLM", raising=False)
    monkeypatch.setenv("WIZARD_VLLM_UNAVAILABLE", reason)
    with pytest.raises(pytest.skip.Exception, match=r"real vLLM tier skipped: no CPU build"):
        vllm_python()
    monkeypatch.setenv("WIZARD_REQUIRE_REAL_VLLM", "1")
    with pytest.raises(pytest.fail.Exception, match=r"required but missing: no CPU build"):
        vllm_python()


AMX_HOST = "processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 amx_bf16 amx_tile amx_int8\n"
AVX512_HOST = "processor\t: 0\nflags\t\t: fpu sse2 avx512f avx512_bf16 avx512_vnni\n"


@pytest.mark.parametrize(
    ("cpuinfo", "dtype", "why"),
    [
        (AMX_HOST, "float32", "this CPU has AMX (amx_bf16 amx_int8 amx_tile), where vLLM 0.32"),
        (AVX512_HOST, "bfloat16", "the model's own dtype (this CPU has no AMX"),
    ],
)
def test_the_real_server_starts_with_the_hosts_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpuinfo: str, dtype: str, why: str
) -> None:
    (tmp_path / "cpuinfo").write_text(cpuinfo)
    monkeypatch.setattr(realvllm, "CPUINFO", tmp_path / "cpuinfo")
    monkeypatch.setenv("WIZARD_VLLM_PYTHON", sys.executable)
    chosen, reason = host_dtype()
    assert (chosen, reason.startswith(why)) == (dtype, True), reason
    command = RealVllm("healthy", (), tmp_path).command(tmp_path / "model")
    # The model's own dtype is not passed (one logged argument more than the simulator's).
    assert (command[command.index("--dtype") + 1] if "--dtype" in command else "bfloat16") == dtype
    assert ("--dtype" in command) is (dtype != "bfloat16")


def test_an_unreadable_cpuinfo_keeps_the_models_dtype(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(realvllm, "CPUINFO", tmp_path / "absent")
    assert host_dtype() == (
        "bfloat16",
        f"the model's own dtype ({tmp_path / 'absent'} unreadable: No such file or directory)",
    )
