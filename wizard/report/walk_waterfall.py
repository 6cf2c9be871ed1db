"""The first token hop by hop, from what the walk measured: the summary's waterfall.

Per baseline path (``direct``, ``proxy``), the incident's first round on it: the client's TTFT
(the mean over the round's steady requests, ``values.ttft_ms``), the engine's own TTFT, queue and
prefill time over the round (the measure probe's ``server`` facts, from /metrics scraped around
it), and, through the proxy, nginx's times for the same round (walk probe ``nginx-access`` as
``proxy_access``, with ``run --nginx-access-log`` or the demo's own nginx). ``waterfall`` splits
them as triage does. The engine's means cover every request of the round (its cold ones too) and
the client's its steady ones: the remainder holds that difference besides the untimed hops.

A path without the evidence has no waterfall and says why (``absent``): a server whose /metrics
could not be read, or a transcript recorded before the rounds kept the engine's prefill time.
"""

from __future__ import annotations

from typing import Any

from wizard.measure import waterfall

PATHS = ("direct", "proxy")
ACCESS_ROUND = "proxy_access"


def build(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The waterfall of each baseline path the walk measured, in path order."""
    first: dict[str, dict[str, Any]] = {}
    access: dict[str, Any] | None = None
    for event in events:
        data = event["data"]
        if event["type"] != "probe_result" or data["error"] or not data["facts"]:
            continue
        if data["probe"] == "measure" and data["as"] in PATHS:
            first.setdefault(data["as"], data["facts"])
        elif data["probe"] == "nginx-access" and data["as"] == ACCESS_ROUND and access is None:
            access = data["facts"]
    return [_path(path, first[path], access) for path in PATHS if path in first]


def _path(path: str, facts: dict[str, Any], access: dict[str, Any] | None) -> dict[str, Any]:
    server = facts.get("server") or {}
    row: dict[str, Any] = {"path": path, "url": facts.get("url")}
    if not server.get("available"):
        return {**row, "absent": "no_metrics"}
    if "prefill_mean_ms" not in server:
        return {**row, "absent": "recorded_before"}
    if server.get("server_ttft_mean_ms") is None:
        return {**row, "absent": "no_engine_ttft"}
    client = [v for v in (facts.get("values") or {}).get("ttft_ms") or [] if v is not None]
    engine = {"requests": None, "ttft_ms": server["server_ttft_mean_ms"],
              "queue_ms": server.get("queue_mean_ms"), "prefill_ms": server.get("prefill_mean_ms")}  # fmt: skip
    proxied = path == "proxy"
    used = access if proxied and access is not None and access.get("available") else None
    built = waterfall.from_means(engine, used, sum(client) / len(client) if client else None,
                                 proxied=proxied)  # fmt: skip
    built["client_requests"] = len(client)
    if proxied:
        built["access"] = _access_state(access)
    return {**row, **built}


def _access_state(access: dict[str, Any] | None) -> str:
    """Whether nginx's hops were read for the round, or why not: ``read``, ``not_given``
    (no access log, or a transcript from before it was read), ``no_mark``, ``unreadable``,
    ``no_timings`` (its lines carry no hop's time: the stock format)."""
    if access is None:
        return "not_given"
    if not access.get("available"):
        return str(access.get("why") or "not_given")
    return "read" if access.get("requests") else "no_timings"


def lines(row: dict[str, Any], lang: str) -> list[str]:
    """One path's waterfall as lines: the client's TTFT, each hop (triage's lines), why a part
    or the whole is absent."""
    from wizard.i18n.words import ms, path_name, say
    from wizard.ui.render_triage import waterfall_lines

    name = path_name(row["path"], lang)
    if "absent" in row:
        return [
            say("waterfall.path_bare", lang, path=name),
            say(f"waterfall.absent.{row['absent']}", lang),
        ]
    head = (say("waterfall.path", lang, path=name, client=ms(row["client_ttft_ms"]),
                n=row["client_requests"]) if row["client_ttft_ms"] is not None
            else say("waterfall.path_bare", lang, path=name))  # fmt: skip
    out = [head, *waterfall_lines(row, lang)]
    if row.get("access") not in (None, "read"):
        out.append(say(f"waterfall.access.{row['access']}", lang))
    if row["path"] == "direct" and row["unexplained_ms"] is not None:
        out.append(say("waterfall.direct_rest", lang))
    return out


def compact(rows: list[dict[str, Any]], lang: str) -> list[str]:
    """The text summary's one line (it has at most 15): the proxy's waterfall, which has the
    most hops, else the direct one's, else why there is none."""
    shown = sorted(rows, key=lambda row: ("absent" in row, row["path"] != "proxy"))
    return [_compact(shown[0], lang)] if shown else []


def _compact(row: dict[str, Any], lang: str) -> str:
    """One path's waterfall on one line: each hop's mean, the remainder."""
    from wizard.i18n.words import joined, ms, path_name, say
    from wizard.ui.render_triage import remainder_text

    name = path_name(row["path"], lang)
    if "absent" in row:
        return say("labelled", lang, label=say("waterfall.compact", lang, path=name),
                   text=say(f"waterfall.absent.{row['absent']}", lang))  # fmt: skip
    parts = [f"{say('waterfall.short.' + p['hop'], lang)} {ms(p['ms'])} ms" for p in row["parts"]]
    if row["unexplained_ms"] is not None:
        parts.append(f"{say('waterfall.short.unexplained', lang)} "
                     f"{remainder_text(row['unexplained_ms'], lang)}")  # fmt: skip
    text = say("waterfall.compact_of", lang, client=ms(row["client_ttft_ms"]),
               parts=joined(parts, lang, "comma"))  # fmt: skip
    return say("labelled", lang, label=say("waterfall.compact", lang, path=name), text=text)
