"""Numbers read from text someone else wrote (logs, /metrics, evidence files, answers).

A number that does not fit is unknown (``None``), never an exception: a pasted file may hold a
5,000-digit integer (``int`` refuses past 4,300 digits), ``1e999`` (``float`` gives infinity, which
``int`` and JSON refuse) or ``1.2.3`` (a ``[\\d.]+`` match that is no number).
"""

from __future__ import annotations

import math
import re

# No count, size or duration the wizard reads needs more: int64 has 19 digits.
MAX_DIGITS = 18
# A float's text longer than this is no measurement (a double has 17 significant digits).
MAX_FLOAT_CHARS = 40
_INT = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}")


def parse_int(text: str | None) -> int | None:
    """A non-negative integer of ASCII digits (at most ``MAX_DIGITS``), else None."""
    if text is None or _INT.fullmatch(text) is None:
        return None
    return int(text)


def parse_float(text: str | None) -> float | None:
    """A finite float, else None."""
    if text is None or len(text) > MAX_FLOAT_CHARS:
        return None
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
