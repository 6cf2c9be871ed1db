"""vLLM's periodic stats line, in every era's wording.

The line of current releases (``Engine 000: Avg prompt throughput: ..., Running: N reqs, Waiting: N
reqs[, Preemptions: N], GPU KV cache usage: X%[, Prefix cache hit rate: Y%]``) and V0's (``Swapped``,
``Pending`` instead of ``Waiting``, a ``CPU KV cache usage`` after the GPU's) are read by one
pattern, the hot path of a long log. Anything else (segments in another order, early 2024's ``Max
iteration time`` and ``Avg time/tok``, a device word other than GPU) is read segment by segment.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from wizard.numbers import MAX_DIGITS, MAX_FLOAT_CHARS, parse_float, parse_int

NEEDLE = "Avg prompt throughput: "
FAST = re.compile(
    r"Avg prompt throughput: (?P<prompt>[\d.]+) tokens/s, Avg generation throughput: (?P<gen>[\d.]+) tokens/s, "
    r"Running: (?P<running>\d+) reqs,(?: Swapped: (?P<swapped>\d+) reqs,)? (?:Waiting|Pending): (?P<waiting>\d+) reqs"
    # "GPU KV cache usage" (CPU, XPU, ... or no device word): the device is the last word of
    # ``before``, read in Python (a regex group for it made the hot path slower).
    r"(?:.*?Preemptions: (?P<preemptions>\d+))?(?P<before>.*?)KV cache usage: (?P<kv>[\d.]+)%"
    r"(?:, Prefix cache hit rate: (?P<prefix>[\d.]+)%)?"
)
# A segment is ``Key: number unit``. Its key is read back from its colon, not matched forward: a
# forward pattern (``[A-Za-z][\w/ +.-]*?: ``) is retried at every letter of a long run without a
# colon, quadratic in the run (12 s on a 40 kB "Avg time/tok aaaa..."). A key's characters stop at
# the colon before it, so each part of the line is read once: linear in the line.
VALUE = re.compile(r": (?P<number>[\d.]+) ?(?P<unit>[a-z/%]*)")
BEFORE_KEY = re.compile(r"(?s:.*[^\w/ +.-])?")  # to the last character a key cannot hold
KEY = re.compile(r"[A-Za-z][\w/ +.-]*")
TIME_UNITS_MS = {"ms": 1.0, "s": 1000.0, "us": 0.001}


def read(line: str) -> tuple[dict[str, Any], str] | None:
    """The stats sample of ``line`` and the text before its "KV cache usage" (``device_word``
    reads the device from it: only once per run, so not on every line), or None."""
    if EXTRAS_HINT in line or (match := FAST.search(line)) is None:
        return _segments(line[line.find(NEEDLE) :]) if NEEDLE in line else None
    prompt, gen, running, swapped, waiting, preempted, before, kv, prefix = match.groups()
    numbers = _numbers(line, running, waiting, kv, prompt, gen, preempted or "0")
    if numbers is None:  # a number that does not parse: not one of vLLM's stats lines
        return None
    running_n, waiting_n, kv_n, prompt_n, gen_n, preemptions = numbers
    # The key keeps its old name whatever the device (a contract other tools read).
    stats = {
        "running": running_n, "waiting": waiting_n, "gpu_kv_cache_usage_pct": kv_n,
        "prompt_throughput": prompt_n, "generation_throughput": gen_n, "preemptions": preemptions,
    }  # fmt: skip
    if prefix is not None:  # V1 only; absent from V0's lines
        stats["prefix_cache_hit_rate_pct"] = parse_float(prefix)
    if swapped is not None:  # V0 only
        stats["swapped"] = parse_int(swapped)
    return stats, before


def _numbers(line: str, *texts: str) -> tuple[Any, ...] | None:
    """running, waiting (int), kv, prompt, gen (float), preemptions (int) from their texts; None
    when one does not parse."""
    running, waiting, kv, prompt, gen, preempted = texts
    # The hot path of a long log: on an ASCII line, digits together no longer than one number
    # may be are what parse_int and parse_float take as they are (their six calls were two
    # thirds of a stats line's time); "1.2.3" and "." match [\d.]+ and are no numbers.
    if (
        line.isascii()
        and len(running) + len(waiting) + len(preempted) <= MAX_DIGITS
        and len(kv) + len(prompt) + len(gen) <= MAX_FLOAT_CHARS
    ):
        try:
            return int(running), int(waiting), float(kv), float(prompt), float(gen), int(preempted)
        except ValueError:
            return None
    numbers = (
        parse_int(running), parse_int(waiting), parse_float(kv), parse_float(prompt),
        parse_float(gen), parse_int(preempted),
    )  # fmt: skip
    return None if None in numbers else numbers


EXTRAS_HINT = "time/tok"  # early 2024's lines carry it (with Max iteration time): read by segments


def device_word(before: str) -> str | None:
    """GPU, CPU, XPU... : the upper-case word right before "KV cache usage", if there is one."""
    word = before.rstrip().rpartition(" ")[2]
    return word if word.isalnum() and word.isupper() else None


def _segments(text: str) -> tuple[dict[str, Any], str] | None:
    """Segment by segment: ``Key: number unit`` pieces, in any order, unknown ones skipped."""
    stats: dict[str, Any] = {"preemptions": 0}
    before = ""
    for key, found in _keyed(text):
        unit = found.group("unit")
        if (number := parse_float(found.group("number"))) is None:
            return None
        if key == "Avg prompt throughput":
            stats["prompt_throughput"] = number
        elif key == "Avg generation throughput":
            stats["generation_throughput"] = number
        elif key in ("Running", "Waiting", "Pending", "Swapped", "Preemptions"):
            name = {"Pending": "waiting"}.get(key, key.lower())
            stats[name] = int(number)
        elif key.endswith("KV cache usage") and "gpu_kv_cache_usage_pct" not in stats:
            stats["gpu_kv_cache_usage_pct"] = number  # the first device's (V0: the GPU's)
            before = key.removesuffix("KV cache usage")
        elif key == "Prefix cache hit rate":
            stats["prefix_cache_hit_rate_pct"] = number
        elif key in ("Max iteration time", "Avg time/tok") and unit in TIME_UNITS_MS:
            name = "max_iteration_time_ms" if key.startswith("Max") else "avg_time_per_token_ms"
            stats[name] = round(number * TIME_UNITS_MS[unit], 3)
    required = ("running", "waiting", "gpu_kv_cache_usage_pct", "prompt_throughput",
                "generation_throughput")  # fmt: skip
    if any(key not in stats for key in required):
        return None
    return stats, before


def _keyed(text: str) -> Iterator[tuple[str, re.Match[str]]]:
    """Each ``: number unit`` of ``text`` with the key before its colon (the key characters
    after the previous value, from the first letter on); values without a key are skipped."""
    start = 0
    for found in VALUE.finditer(text):
        colon = found.start()
        run = BEFORE_KEY.match(text, start, colon)
        key = KEY.search(text, run.end() if run is not None else start, colon)
        start = found.end()
        if key is not None:
            yield key.group().strip(), found
