"""The nginx layer's changes, each from the directive's current value as the config reader found it:
the read timeout, buffering, gzip of the event stream."""

from __future__ import annotations

import math
from typing import Any

from wizard.levers.change_values import (
    Proposal,
)
from wizard.levers.change_values import fact as _fact
from wizard.levers.change_values import unknown_change as _unknown


def read_timeout(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT003: above twice the longest silence seen, in whole tens of seconds."""
    now = answers.get("proxy_read_timeout_s")
    silences = [
        _fact(facts, path)
        for path in ("proxy.steady.ttft_p99", "loaded.steady.ttft_p99", "long.steady.ttft_p99",
                     "long.steady.itl_p99", "proxy.steady.itl_p99")
    ]  # fmt: skip
    worst_s = max((float(s) / 1000 for s in silences if s is not None), default=None)
    floor = float(now) if now else 0.0
    if worst_s is None:
        return _unknown(
            template,
            "the longest silence",
            "proxy_read_timeout <above the longest queue + prefill>",
        )
    after = math.ceil(2 * worst_s / 10) * 10
    if after <= floor:
        return {**_unknown(
            template, "a silence that today's timeout cuts",
            f"proxy_read_timeout <above {floor:g}s: it is already above twice the longest silence "
            f"measured ({worst_s:.1f} s); find what else cuts the streams>",
        ), "before": f"{floor:g}s", "before_from": "answers.proxy_read_timeout_s"}  # fmt: skip
    return {
        "layer": "nginx", "parameter": "proxy_read_timeout",
        "before": f"{now:g}s" if now else None, "before_from": "answers.proxy_read_timeout_s",
        "after": f"{after}s", "apply": f"proxy_read_timeout {after}s;",
        "basis": f"the longest silence measured is {worst_s:.1f} s; twice that, rounded up",
    }  # fmt: skip


def buffering_off(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT001: the effective proxy_buffering of the location (the config, else nginx's default)."""
    location = _fact(facts, "nginxconf.locations.0")
    before, source = "on", "nginx's default"
    if isinstance(location, dict) and location.get("proxy_buffering"):
        before = location["proxy_buffering"]
        source = f"{location.get('file')}:{location.get('line')} ({location.get('proxy_buffering_from')})"
    return {
        "layer": "nginx", "parameter": "proxy_buffering", "before": before, "before_from": source,
        "after": "off", "apply": "proxy_buffering off;",
        "basis": "events arrive through the proxy in bursts the direct path does not show",
    }  # fmt: skip


def gzip_without_event_stream(
    facts: dict[str, Any], answers: dict[str, Any], template: dict[str, Any]
) -> Proposal:
    """LAT002: the location's own gzip_types, less text/event-stream (or gzip off for `*`)."""
    location = _fact(facts, "nginxconf.locations.0")
    types = location.get("gzip_types") if isinstance(location, dict) else None
    if not types:
        return {
            "layer": "nginx", "parameter": "gzip_types", "before": None, "after": None,
            "apply": "gzip_types <today's list without text/event-stream>; (or gzip off; in the "
                     "streaming location)",
            "basis": "the proxied stream is gzip-encoded; without the config its gzip_types are unknown",
        }  # fmt: skip
    if "*" in types:
        return {
            "layer": "nginx", "parameter": "gzip", "before": "on", "after": "off",
            "apply": "gzip off;", "basis": "gzip_types * compresses the event stream too",
        }  # fmt: skip
    kept = [t for t in types if t != "text/event-stream"]
    return {
        "layer": "nginx", "parameter": "gzip_types", "before": " ".join(types),
        "before_from": f"{location.get('file')}:{location.get('line')}", "after": " ".join(kept),
        "apply": f"gzip_types {' '.join(kept)};" if kept else "gzip off;",
        "basis": "today's gzip_types without text/event-stream",
    }  # fmt: skip
