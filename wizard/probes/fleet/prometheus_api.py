"""Prometheus' HTTP API, as far as the wizard reads it: instant and range queries, the targets.

Prometheus scrapes every replica already; reading it is cheaper for the replicas than scraping
them again, and it holds the incident window, which a scrape taken now does not. Every answer is
read with a deadline and a bounded body (a many-replica answer is a few hundred KB), decoded with
the bounded JSON reader, and checked for shape: a proxy's HTML page or a foreign JSON is one line
of error, never a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from wizard.errors import WizardError
from wizard.numbers import parse_float
from wizard.probes.http.bounded import BoundedRequestError, fetch
from wizard.record import safejson


@dataclass(frozen=True)
class Sample:
    """One series of an instant vector: its labels and its value (None for NaN or infinities)."""

    labels: dict[str, str]
    value: float | None


@dataclass(frozen=True)
class Series:
    """One series of a range query: its labels and its (unix time, value) points in order
    (NaN and infinities left out)."""

    labels: dict[str, str]
    points: list[tuple[float, float]]


@dataclass(frozen=True)
class Target:
    """One scrape target: its labels, its base URL (scheme://host:port) and its health."""

    instance: str
    job: str
    base_url: str
    health: str
    last_error: str
    scrape_interval_s: float | None = None  # the job's interval, as Prometheus 2.x reports it


class PrometheusClient:
    """Queries one Prometheus server through ``client``."""

    def __init__(self, client: httpx.AsyncClient, base_url: str) -> None:
        self.client = client
        self.base_url = base_url.rstrip("/")

    async def _get(self, path: str, params: dict[str, str]) -> Any:
        url = self.base_url + path
        try:
            status, text = await fetch(self.client, "GET", url, params=params)
        except httpx.HTTPError as exc:
            raise WizardError(f"cannot read {url}: {type(exc).__name__}: {exc}") from None
        except BoundedRequestError as exc:
            raise WizardError(str(exc)) from None
        try:
            body = safejson.loads(text)
        except ValueError:
            raise WizardError(
                f"{url} answered HTTP {status} without JSON: is it Prometheus?"
            ) from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            detail = f": {str(error)[:200]}" if error else ""
            raise WizardError(f"{url} answered HTTP {status}, not a Prometheus success{detail}")
        return body.get("data")

    async def query(self, expr: str, at: float | None = None) -> list[Sample]:
        """An instant query (``/api/v1/query``) that must return a vector."""
        params = {"query": expr}
        if at is not None:
            params["time"] = f"{at:.3f}"
        data = await self._get("/api/v1/query", params)
        if not isinstance(data, dict) or data.get("resultType") != "vector":
            raise WizardError(f"Prometheus returned no vector for {expr!r}")
        samples = []
        for item in data.get("result") or []:
            labels, value = _labels_and_value(item)
            if labels is not None:
                samples.append(Sample(labels, value))
        return samples

    async def query_range(self, expr: str, start: float, end: float, step_s: float) -> list[Series]:
        """A range query (``/api/v1/query_range``) that must return a matrix."""
        params = {
            "query": expr,
            "start": f"{start:.3f}",
            "end": f"{end:.3f}",
            "step": f"{step_s:g}",
        }
        data = await self._get("/api/v1/query_range", params)
        if not isinstance(data, dict) or data.get("resultType") != "matrix":
            raise WizardError(f"Prometheus returned no matrix for {expr!r}")
        found = []
        for item in data.get("result") or []:
            if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
                continue
            points = []
            for pair in item.get("values") or []:
                if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], str):
                    at, value = parse_float(str(pair[0])), parse_float(pair[1])
                    if at is not None and value is not None:
                        points.append((at, value))
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            found.append(Series(labels, points))
        return found

    async def targets(self) -> list[Target]:
        """The active scrape targets (``/api/v1/targets?state=active``)."""
        data = await self._get("/api/v1/targets", {"state": "active"})
        items = data.get("activeTargets") if isinstance(data, dict) else None
        found = []
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict) or not isinstance(item.get("labels"), dict):
                continue
            parts = urlsplit(str(item.get("scrapeUrl", "")))
            if not parts.scheme or not parts.netloc:
                continue
            found.append(
                Target(
                    instance=str(item["labels"].get("instance", parts.netloc)),
                    job=str(item["labels"].get("job", "")),
                    base_url=f"{parts.scheme}://{parts.netloc}",
                    health=str(item.get("health", "unknown")),
                    last_error=str(item.get("lastError", ""))[:200],
                    scrape_interval_s=_duration_s(item.get("scrapeInterval")),
                )
            )
        return found


def _labels_and_value(item: Any) -> tuple[dict[str, str] | None, float | None]:
    # A vector element is {"metric": {labels}, "value": [timestamp, "number as text"]}.
    if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
        return None, None
    value = item.get("value")
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
        return None, None
    labels = {str(k): str(v) for k, v in item["metric"].items()}
    return labels, parse_float(value[1])


def _duration_s(text: Any) -> float | None:
    """A Prometheus duration of one unit (``15s``, ``1m``) in seconds, else None."""
    if not isinstance(text, str):
        return None
    units = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    for unit in ("ms", "s", "m", "h"):
        if text.endswith(unit):
            number = parse_float(text.removesuffix(unit))
            return None if number is None or number <= 0 else number * units[unit]
    return None
