"""Which engine generation (V0 or V1) wrote a vLLM log, from the marks every era leaves.

Strongest first: the engine's own config line (``Initializing a V1 LLM engine``, ``a V0 LLM
engine``, 2023-2024's ``an LLM engine``); then the version (V0 before 0.8, where V1 was opt-in; V1
from 0.11, where V0 was removed; 0.8-0.10 had both, so the version alone does not say); then the
marks of the code that logged (V1's ``EngineCore`` process and ``(APIServer pid=N)`` prefixes,
``kv_cache_utils.py``, ``gpu_model_runner.py``, the ``Engine 000:`` stats line; V0's
``llm_engine.py``, ``model_runner.py``, its executors, ``# GPU blocks:``, ``Pending:``).
"""

from __future__ import annotations

import re

from wizard.numbers import parse_int

ENGINE_LINE, VERSION, MARK = 3, 2, 1  # how much a source weighs; a stronger one overrides
VERSION_TEXT = re.compile(
    r"(?:server version|█\s+version|LLM engine \(v)\s*v?(?P<major>\d+)\.(?P<minor>\d+)"
    r"(?P<rest>(?:\.\d+)?(?:[.+-]?[A-Za-z0-9]+)*)"
)
# (substring, generation, what it is). Checked only until a run's generation is known.
# A file name counts in a log line's form ("name.py:NNN]"), never a traceback's ("name.py", line N).
MARKS = (
    ("(EngineCore", "v1", "the EngineCore process prefix"),
    ("EngineCore_", "v1", "the EngineCore process name"),
    ("(APIServer pid=", "v1", "the (APIServer pid=N) prefix"),
    ("(Worker_TP", "v1", "the V1 worker prefix"),
    ("(Worker pid=", "v1", "the V1 worker prefix"),
    ("(VllmWorker rank=", "v1", "the V1 multiprocess worker prefix"),
    ("kv_cache_utils.py:", "v1", "V1's kv_cache_utils.py"),
    ("gpu_model_runner.py:", "v1", "V1's gpu_model_runner.py"),
    ("async_llm.py:", "v1", "V1's async_llm.py"),
    ("core_client.py:", "v1", "V1's core_client.py"),
    ("VLLM_USE_V1=1", "v1", "VLLM_USE_V1=1"),
    ("(VllmWorkerProcess pid=", "v0", "the V0 worker process prefix"),
    ("llm_engine.py:", "v0", "V0's llm_engine.py"),
    ("gpu_executor.py:", "v0", "a V0 executor (gpu_executor.py)"),
    (" model_runner.py:", "v0", "V0's model_runner.py"),
    ("[model_runner.py:", "v0", "V0's model_runner.py"),
    ("# GPU blocks:", "v0", "V0's '# GPU blocks:' line"),
    ("PreemptionMode.", "v0", "V0's preemption warning"),
    ("VLLM_USE_V1=0", "v0", "VLLM_USE_V1=0"),
)


def generation_of_version(major: int, minor: int) -> str | None:
    """The only generation a release could run, or None where it had both (0.8-0.10)."""
    if (major, minor) < (0, 8):
        return "v0"
    if (major, minor) >= (0, 11):
        return "v1"
    return None


def version_mark(line: str) -> tuple[str, str] | None:
    """(generation, "version X.Y") from a version line, when that version had one generation."""
    match = VERSION_TEXT.search(line)
    if match is None:
        return None
    # A version of thousands of digits is no release (and past int()'s limit).
    major, minor = parse_int(match.group("major")), parse_int(match.group("minor"))
    if major is None or minor is None:
        return None
    generation = generation_of_version(major, minor)
    return None if generation is None else (generation, f"version {major}.{minor}")


def version_text(line: str) -> str | None:
    """The release a version line names ("0.34.0", "0.9.2", "0.11.0rc1"), or None."""
    match = VERSION_TEXT.search(line)
    if match is None:
        return None
    return f"{match.group('major')}.{match.group('minor')}{match.group('rest')}"


def code_mark(line: str) -> tuple[str, str] | None:
    """(generation, what) for the first mark of one generation's code in ``line``."""
    for needle, generation, what in MARKS:
        if needle in line:
            return generation, what
    return None
