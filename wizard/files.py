"""Input files read whole, within a bound for their kind: a device that never ends (/dev/zero),
a FIFO, or a sparse file of gigabytes is refused in one line instead of filling memory.

Each bound is many times the largest real file of its kind (said where it is set); the vLLM log,
which may be gigabytes, is read line by line instead (``probes/log_lines.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TextIO

from wizard.errors import UsageError, WizardError

MIB = 1024 * 1024


def read_bytes(path: Path | str, most: int, error: type[WizardError] = UsageError) -> bytes:
    """The file's bytes; ``error`` (one line, every language) past ``most`` bytes. OSError as
    opening or reading raises it."""
    with open(path, "rb") as handle:  # noqa: PTH123 (a path or a str)
        data = handle.read(most + 1)
    if len(data) > most:
        raise error.said("error.file_too_large", path=path, most=f"{most // MIB} MiB")
    return data


def read_handle(handle: TextIO, most: int, name: object) -> str:
    """A text stream's text (standard input, a paste); UsageError past ``most`` characters."""
    text = handle.read(most + 1)
    if len(text) > most:
        chars = {"en": f"{most // MIB} Mi characters", "zh": f"{most // MIB} Mi 个字符"}
        raise UsageError.said("error.file_too_large", path=name, most=chars)
    return text
