"""Where the replicas behind one endpoint are: a list given, an nginx ``upstream``, Prometheus.

Each source yields the replicas' base URLs and says where they came from. An nginx config names
the upstream the proxying location passes to (else its only upstream), with the balancing method
and weights nginx uses; Prometheus' active targets (the fleet report, ``run --prometheus``) give
the URL it scrapes each replica on. Servers marked ``down`` or ``backup`` take no traffic and are
left out: the balancer is judged on the servers it balances over.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import UsageError


@dataclass(frozen=True)
class Replicas:
    """The replicas' base URLs, where they came from, and the upstream block when nginx's."""

    urls: tuple[str, ...]
    source: str
    upstream: dict[str, Any] | None = None
    weights: dict[str, float] = field(default_factory=dict)


def from_list(urls: list[str]) -> Replicas:
    """Replicas the user listed (``--replica URL``, repeated)."""
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise UsageError(f"--replica {url!r} is not an http(s) URL")
    return Replicas(tuple(dict.fromkeys(u.rstrip("/") for u in urls)), "--replica")


def from_nginx(conf: str | Path) -> Replicas | None:
    """The servers of the upstream the config's proxying location passes to; None without one."""
    from wizard.probes.readers import nginx_config

    report = nginx_config.analyse(Path(conf))
    upstreams = {u["name"]: u for u in report["upstreams"]}
    used = [loc for loc in report["locations"] if loc.get("upstream") in upstreams]
    if used:
        chosen = upstreams[used[0]["upstream"]]
        scheme = "https" if used[0]["proxy_pass"].startswith("https://") else "http"
    elif len(upstreams) == 1:
        chosen, scheme = next(iter(upstreams.values())), "http"
    else:
        return None
    live = [s for s in chosen["servers"] if not s["down"] and not s["backup"]]
    # A unix socket is on the nginx host, not reachable from here.
    urls = [_server_url(s["address"], scheme) for s in live if not s["address"].startswith("unix:")]
    weights = {_server_url(s["address"], scheme): s["weight"] for s in live}
    where = f"nginx upstream {chosen['name']} ({chosen['file']}:{chosen['line']})"
    return Replicas(tuple(urls), where, chosen, weights)


def _server_url(address: str, scheme: str) -> str:
    # nginx's ``server`` takes host[:port]; without a port it is the scheme's default.
    return f"{scheme}://{address}".rstrip("/")


def from_fleet(report: dict[str, Any] | None) -> Replicas | None:
    """The replicas Prometheus scrapes, by the URL it scrapes them on (the fleet report)."""
    if not report or not report.get("available"):
        return None
    urls = [r["url"] for r in report.get("replicas", []) if r.get("url")]
    return Replicas(tuple(dict.fromkeys(urls)), f"Prometheus targets ({report['prometheus']})")


def known(
    listed: list[str] | None, nginx_conf: str | None, fleet: dict[str, Any] | None
) -> Replicas | None:
    """The first source that names at least two replicas: the user's list, nginx, Prometheus
    (a later source is not read when an earlier one answers)."""
    sources: tuple[Callable[[], Replicas | None], ...] = (
        lambda: from_list(listed) if listed else None,
        lambda: from_nginx(nginx_conf) if nginx_conf else None,
        lambda: from_fleet(fleet),
    )
    for source in sources:
        found = source()
        if found is not None and len(found.urls) >= 2:
            return found
    return None
