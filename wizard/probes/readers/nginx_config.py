"""Static analysis of an nginx config for token streaming (crossplane parses; we walk the tree).

Input: a config file (its includes followed), a directory (its nginx.conf, else every *.conf), or
an ``nginx -T`` dump (split on its ``# configuration file PATH:`` markers; includes are resolved
among the dumped files, never against this machine's /etc/nginx). Pasted fragments work too: a bare
``location`` block, ``${VAR}`` template placeholders, comments, tabs.

For every location that proxies, the effective values with their inheritance (http -> server ->
location; an array directive set at an inner level replaces the outer ones), then findings. A value
never set is nginx's default, and ``*_from`` says so (``default``): ``proxy_http_version`` is
"1.0" before nginx 1.29.7 and "1.1" since; without an nginx version in the input (``nginx -V``'s
``nginx version: nginx/X.Y.Z`` pasted above the dump) the older default is reported, with a note.

What cannot be read is a line in ``notes`` (English; ``notes_texts`` has each in every language),
never a silent null: a value that is a template placeholder (``${VAR}``), an include that matches
none of the files given. An included file that does not parse is one line in ``errors``
(file:line: problem) and the rest is still analysed.
"""

from __future__ import annotations

import fnmatch
import math
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import crossplane

from wizard.errors import WizardError
from wizard.files import read_bytes
from wizard.i18n.nginx_words import nginx_message
from wizard.i18n.words import texts
from wizard.numbers import parse_float

DUMP_MARKER = re.compile(r"^# configuration file (?P<path>.+):\s*$", re.MULTILINE)
TIME_UNITS = {
    "ms": 0.001,
    "s": 1,
    "m": 60,
    "h": 3600,
    "d": 86400,
    "w": 604800,
    "M": 2592000,
    "y": 31536000,
}
DEFAULTS = {"proxy_buffering": "on", "proxy_read_timeout": "60s", "proxy_connect_timeout": "60s",
            "proxy_send_timeout": "60s", "gzip": "off", "gzip_types": "text/html", "proxy_cache": "off"}  # fmt: skip
# Directives whose every occurrence accumulates at one level and that an inner level replaces whole.
ARRAY_DIRECTIVES = {"proxy_ignore_headers", "proxy_set_header", "gzip_types", "add_header"}
INHERITED = {*DEFAULTS, *ARRAY_DIRECTIVES, "proxy_http_version", "proxy_buffer_size", "proxy_buffers",
             "proxy_busy_buffers_size", "proxy_max_temp_file_size"}  # fmt: skip
CONNECT_TIMEOUT_CAP_S = 75
# Bounded: a pasted "nginx/" followed by thousands of digits is no version (int() refuses it).
NGINX_VERSION = re.compile(r"nginx(?: version: nginx)?/(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?!\d)")
HTTP_11_DEFAULT_SINCE = (1, 29, 7)
TEMPLATE = re.compile(r"\$\{\w+\}")


class ConfigSyntaxError(WizardError):
    """The config does not parse; the message is ``file:line: problem``."""


@dataclass
class Level:
    """Directives set at one level (http, server or location), with where they were set."""

    name: str
    values: dict[str, list[list[str]]]
    lines: dict[str, int]


def parse_time(value: str) -> float | None:
    """nginx time (``60s``, ``1m30s``, ``500ms``, a bare number of seconds) in seconds."""
    total, matched = 0.0, False
    for number, unit in re.findall(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w|M|y)?", value):
        if (seconds := parse_float(number)) is None:
            return None
        total += seconds * TIME_UNITS.get(unit or "s", 1)
        matched = True
    return total if matched and math.isfinite(total) else None


# A config file or an `nginx -T` dump: a large site's dump, geo and map files included, is a few
# MB; 64 MiB of it is no config anyone pastes.
MAX_CONFIG_BYTES = 64 * 1024 * 1024


def load_files(source: Path) -> tuple[dict[str, str], list[str]]:
    """The config as ``{path: text}`` plus its root file(s)."""
    if source.is_dir():
        files = {
            str(p): read_bytes(p, MAX_CONFIG_BYTES, WizardError).decode("utf-8", "replace")
            for p in sorted(source.rglob("*.conf"))
        }
        main = source / "nginx.conf"
        if not files:
            raise WizardError.said("error.no_conf_files", path=source)
        return files, [str(main)] if str(main) in files else sorted(files)
    try:
        text = read_bytes(source, MAX_CONFIG_BYTES, WizardError).decode("utf-8", "replace")
    except OSError as exc:
        raise WizardError.cannot_read(source, exc) from None
    markers = list(DUMP_MARKER.finditer(text))
    if not markers:
        return {str(source): text}, [str(source)]
    files = {}
    for i, marker in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(text)
        body = text[marker.end() : end]
        files[marker.group("path")] = (
            body[1:] if body.startswith("\n") else body
        )  # the marker's newline
    return files, [markers[0].group("path")]


def _parse_one(path: str, text: str, display: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "nginx.conf"
        copy.write_text(text, encoding="utf-8")
        result = crossplane.parse(str(copy), single=True, check_ctx=False, check_args=False)
    if result["status"] != "ok":
        error = result["errors"][0]
        # crossplane gives no message for some text that is no nginx config at all (a YAML file).
        message = re.sub(r" in \S+:\d+$", "", str(error["error"])) or (
            "does not parse as an nginx config (is this the right file?)"
        )
        raise ConfigSyntaxError(f"{display}:{error.get('line') or 1}: {message}")
    parsed: list[dict[str, Any]] = result["config"][0]["parsed"]
    _tag(parsed, path)
    return parsed


def _tag(block: list[dict[str, Any]], path: str) -> None:
    for directive in block:
        directive["file"] = path
        if "block" in directive:
            _tag(directive["block"], path)


# An expanded config larger than this is no real nginx config: includes that multiply (one file
# included twice by each of twenty nested files) would otherwise take hours and all memory.
MAX_EXPANDED_DIRECTIVES = 200_000


@dataclass
class _Expansion:
    files: dict[str, str]
    parsed: dict[str, Any]
    base: str
    directives: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    notes: list[dict[str, str]] = field(default_factory=list)  # each in every language


def _expand(block: list[dict[str, Any]], expansion: _Expansion,
            chain: tuple[str, ...]) -> list[dict[str, Any]]:  # fmt: skip
    """Replace ``include`` directives with the included files' directives (globs among ``files``).

    ``chain`` is the files being included, outermost first: a file that would include one of them
    (itself too, through a glob that matches it) is a cycle, which nginx cannot load either.
    """
    out: list[dict[str, Any]] = []
    for directive in block:
        expansion.directives += 1
        if expansion.directives > MAX_EXPANDED_DIRECTIVES:
            raise ConfigSyntaxError(
                f"{directive['file']}:{directive.get('line', 1)}: the includes expand to more "
                f"than {MAX_EXPANDED_DIRECTIVES} directives"
            )
        if directive["directive"] == "include" and directive["args"]:
            pattern = directive["args"][0]
            if not PurePosixPath(pattern).is_absolute():
                pattern = str(PurePosixPath(expansion.base).parent / pattern)
            where = f"{directive['file']}:{directive.get('line', 1)}"
            matched = sorted(p for p in expansion.files if fnmatch.fnmatch(p, pattern))
            if not matched:
                expansion.notes.append(
                    texts("nginxnote.include_none", where=where, pattern=directive["args"][0])
                )
            for path in matched:
                if path in chain:
                    raise ConfigSyntaxError(
                        f"{where}: include cycle: "
                        + " -> ".join((*chain[chain.index(path) :], path))
                    )
                if path not in expansion.parsed:
                    try:
                        expansion.parsed[path] = _parse_one(path, expansion.files[path], path)
                    except ConfigSyntaxError as exc:  # one line; the including file still counts
                        expansion.errors.append(
                            {"file": path, "included_from": where, "error": str(exc)}
                        )
                        expansion.parsed[path] = []
                out.extend(_expand(expansion.parsed[path], expansion, (*chain, path)))
            continue
        if "block" in directive:
            directive = {**directive, "block": _expand(directive["block"], expansion, chain)}
        out.append(directive)
    return out


def _level(name: str, block: list[dict[str, Any]]) -> Level:
    values: dict[str, list[list[str]]] = {}
    lines: dict[str, int] = {}
    for directive in block:
        key = directive["directive"]
        if key in INHERITED:
            values.setdefault(key, []).append(directive["args"])
            lines.setdefault(key, directive["line"])
    return Level(name, values, lines)


def _effective(levels: list[Level], key: str) -> tuple[list[list[str]] | None, str]:
    for level in reversed(levels):  # the innermost level that sets it wins, whole
        if key in level.values:
            return level.values[key], level.name
    return None, "default"


def _single(levels: list[Level], key: str) -> tuple[str | None, str]:
    found, source = _effective(levels, key)
    if found is None:
        return DEFAULTS.get(key), "default"
    return " ".join(found[-1]), source


def _analyse_location(loc: dict[str, Any], levels: list[Level], server: dict[str, Any],
                      upstreams: dict[str, list[dict[str, Any]]],
                      http_11_default: bool) -> dict[str, Any] | None:  # fmt: skip
    block = loc.get("block", [])
    here = [*levels, _level("location", block)]
    proxy_pass = next(
        (d["args"][0] for d in block if d["directive"] == "proxy_pass" and d["args"]), None
    )
    if proxy_pass is None:
        return None
    buffering, buffering_from = _single(here, "proxy_buffering")
    ignore, _ = _effective(here, "proxy_ignore_headers")
    ignored = {arg.lower() for args in ignore or [] for arg in args}
    gzip_on, _ = _single(here, "gzip")
    types, _ = _effective(here, "gzip_types")
    type_names = {arg for args in types or [["text/html"]] for arg in args}
    version, version_from = _single(here, "proxy_http_version")
    if version is None:  # unset: the default of the nginx that runs it
        version = "1.1" if http_11_default else "1.0"
    upstream_name = re.sub(r"^https?://", "", proxy_pass).split("/")[0].split(":")[0]
    upstream = upstreams.get(upstream_name)
    return {
        "file": loc["file"], "line": loc["line"],
        "server_name": " ".join(_server_values(server, "server_name")) or None,
        "listen": " ".join(_server_values(server, "listen")) or None,
        "path": " ".join(loc["args"]), "proxy_pass": proxy_pass,
        "upstream": upstream_name if upstream is not None else None,
        "proxy_buffering": buffering, "proxy_buffering_from": buffering_from,
        "ignores_x_accel_buffering": "x-accel-buffering" in ignored,
        "proxy_read_timeout_s": parse_time(_single(here, "proxy_read_timeout")[0] or "60s"),
        "proxy_connect_timeout_s": parse_time(_single(here, "proxy_connect_timeout")[0] or "60s"),
        "proxy_send_timeout_s": parse_time(_single(here, "proxy_send_timeout")[0] or "60s"),
        "proxy_http_version": version, "proxy_http_version_from": version_from,
        "proxy_http_version_note": (
            "not set: 1.0 before nginx 1.29.7, 1.1 since" if version_from == "default" else None
        ),
        "upstream_keepalive": (
            None if upstream is None else any(d["directive"] == "keepalive" for d in upstream)
        ),
        "gzip_event_stream": gzip_on == "on" and bool({"text/event-stream", "*"} & type_names),
        "gzip_types": sorted(type_names) if gzip_on == "on" else [],
        "proxy_cache": _single(here, "proxy_cache")[0],
        "proxy_buffer_size": _single(here, "proxy_buffer_size")[0],
        "proxy_buffers": _single(here, "proxy_buffers")[0],
    }  # fmt: skip


def _server_values(server: dict[str, Any], key: str) -> list[str]:
    return [arg for d in server.get("block", []) if d["directive"] == key for arg in d["args"]]


@dataclass
class _Walk:
    upstreams: dict[str, list[dict[str, Any]]]
    http_11_default: bool
    out: list[dict[str, Any]]


def _walk(block: list[dict[str, Any]], levels: list[Level], server: dict[str, Any],
          walk: _Walk) -> None:  # fmt: skip
    for directive in block:
        name = directive["directive"]
        if name == "http":
            _walk(
                directive.get("block", []),
                [_level("http", directive.get("block", []))],
                server,
                walk,
            )
        elif name == "server":
            inner = directive.get("block", [])
            _walk(inner, [*levels, _level("server", inner)], directive, walk)
        elif name == "location":
            found = _analyse_location(
                directive, levels, server, walk.upstreams, walk.http_11_default
            )
            if found is not None:
                walk.out.append(found)
            inner = directive.get("block", [])
            _walk([d for d in inner if d["directive"] == "location"], [*levels, _level("location", inner)],
                  server, walk)  # fmt: skip


def _upstreams(block: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    return {name: upstream.get("block", []) for name, upstream in _upstream_blocks(block).items()}


def _upstream_blocks(block: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for directive in block:
        if directive["directive"] == "upstream" and directive["args"]:
            found[directive["args"][0]] = directive
        elif "block" in directive:
            found.update(_upstream_blocks(directive["block"]))
    return found


# How an upstream picks a server (nginx's default is weighted round-robin); the methods that pin
# a client to one server (the same key, the same server) are the sticky ones.
BALANCING = ("least_conn", "ip_hash", "hash", "random", "least_time", "sticky")
STICKY_METHODS = frozenset({"ip_hash", "hash", "sticky"})


def upstream_summary(directive: dict[str, Any]) -> dict[str, Any]:
    """One ``upstream`` block: its balancing method and its servers (address, weight, flags)."""
    block = directive.get("block", [])
    method = next((d for d in block if d["directive"] in BALANCING), None)
    servers = []
    for d in block:
        if d["directive"] != "server" or not d["args"]:
            continue
        flags = d["args"][1:]
        weight = next((parse_float(f[7:]) for f in flags if f.startswith("weight=")), None)
        servers.append({
            "address": d["args"][0], "weight": weight if weight is not None else 1.0,
            "down": "down" in flags, "backup": "backup" in flags, "line": d.get("line"),
        })  # fmt: skip
    return {
        "name": directive["args"][0], "file": directive.get("file"), "line": directive.get("line"),
        "method": method["directive"] if method else "round_robin",
        "method_args": method["args"] if method else [],
        "sticky": method is not None and method["directive"] in STICKY_METHODS,
        "servers": servers,
    }  # fmt: skip


def _directive(key: str, **values: Any) -> dict[str, Any]:
    """A fix said in words beside its directive: ``directive`` in English, ``directive_texts``."""
    said = texts(key, **values)
    return {"directive": said["en"], "directive_texts": said}


def findings_for(
    location: dict[str, Any], worst_gap_ms: float | None = None
) -> list[dict[str, Any]]:
    """What is wrong with one location for token streaming, each with the exact directive."""
    where = {"file": location["file"], "line": location["line"], "location": location["path"]}
    out = []
    buffering = location["proxy_buffering"] == "on"
    read = location["proxy_read_timeout_s"]
    connect = location["proxy_connect_timeout_s"]
    # The values a finding's message says, recorded with it: every language says it from them.
    values = {"source": location["proxy_buffering_from"], "read_s": read, "connect_s": connect,
              "worst_gap_ms": worst_gap_ms, "x_accel_honoured": not location["ignores_x_accel_buffering"]}  # fmt: skip
    if buffering and location["gzip_event_stream"]:
        out.append({**where, "code": "LAT002", "cause": "proxy_gzip_buffering", "severity": "fail",
                    **_directive("nginxfix.gzip_types")})  # fmt: skip
    if buffering:
        out.append({**where, "code": "LAT001", "cause": "proxy_buffering", "severity": "fail",
                    "directive": "proxy_buffering off;"})  # fmt: skip
    if worst_gap_ms is not None and read is not None and read * 1000 < worst_gap_ms:
        out.append({**where, "code": "LAT003", "cause": "proxy_read_timeout", "severity": "fail",
                    **_directive("nginxfix.read_timeout", seconds=max(60, int(worst_gap_ms / 1000 * 2) + 1))})  # fmt: skip
    if connect is not None and connect > CONNECT_TIMEOUT_CAP_S:
        out.append({**where, "code": "LAT004", "cause": "proxy_connect_timeout", "severity": "warn",
                    "directive": "proxy_connect_timeout 10s;"})  # fmt: skip
    if (
        location["proxy_http_version"] in (None, "1.0")
        and location["upstream_keepalive"] is not True
    ):
        out.append({**where, "code": "LAT005", "cause": "proxy_upstream_keepalive", "severity": "info",
                    "directive": 'proxy_http_version 1.1; proxy_set_header Connection ""; upstream keepalive 16;'})  # fmt: skip
    return [{**f, "message": nginx_message(f["code"], values, "en"), "values": values} for f in out]


def analyse(source: Path, worst_gap_ms: float | None = None) -> dict[str, Any]:
    """The ``probe nginx-config --json`` object."""
    files, roots = load_files(source)
    version = _nginx_version(source, files)
    http_11 = version is not None and version >= HTTP_11_DEFAULT_SINCE
    parsed: dict[str, Any] = {}
    locations: list[dict[str, Any]] = []
    upstreams: list[dict[str, Any]] = []
    errors: list[dict[str, Any]] = []
    notes: list[dict[str, str]] = []  # each in every language
    for root in roots:
        if root not in files:
            continue
        parsed[root] = _parse_one(root, files[root], root)
        expansion = _Expansion(files, parsed, root)
        tree = _expand(parsed[root], expansion, (root,))
        errors.extend(expansion.errors)
        notes.extend(expansion.notes)
        notes.extend(_template_notes(tree))
        # A pasted fragment (a bare server or location) is read as if inside http { }.
        http_levels = [] if any(d["directive"] == "http" for d in tree) else [_level("http", tree)]
        _walk(tree, http_levels, {}, _Walk(_upstreams(tree), http_11, locations))
        upstreams.extend(upstream_summary(d) for d in _upstream_blocks(tree).values())
    if version is None and any(loc["proxy_http_version_from"] == "default" for loc in locations):
        notes.append(texts("nginxnote.http_default"))
    findings = [f for location in locations for f in findings_for(location, worst_gap_ms)]
    return {
        "locations": locations,
        "upstreams": upstreams,
        "findings": findings,
        "errors": errors,
        "notes": [said["en"] for said in notes],
        "notes_texts": notes,
        "nginx_version": ".".join(map(str, version)) if version else None,
        "files": sorted(files),
        "causes": sorted({f["cause"] for f in findings}),  # for playbook conditions
    }


def _nginx_version(source: Path, files: dict[str, str]) -> tuple[int, int, int] | None:
    """The version ``nginx -V`` printed into the input, if it did (a dump's first lines)."""
    texts = list(files.values())
    if source.is_file():
        with source.open(encoding="utf-8", errors="replace") as handle:
            texts.insert(0, handle.read(4096))
    for text in texts:
        for line in text.splitlines()[:20]:
            if (match := NGINX_VERSION.search(line)) is not None:
                major, minor, patch = (int(part) for part in match.groups())
                return major, minor, patch
    return None


def _template_notes(tree: list[dict[str, Any]]) -> list[dict[str, str]]:
    """One note per directive whose value is a template placeholder (envsubst's ``${VAR}``)."""
    notes = []
    for directive in tree:
        if directive["directive"] in INHERITED and any(
            TEMPLATE.search(a) for a in directive["args"]
        ):
            value = " ".join(directive["args"])
            notes.append(texts("nginxnote.template", where=f"{directive['file']}:{directive.get('line', 1)}",
                               directive=directive["directive"], value=value))  # fmt: skip
        if "block" in directive:
            notes.extend(_template_notes(directive["block"]))
    return notes


async def probe(ctx: Any, params: dict[str, Any]) -> dict[str, Any]:
    """Walk probe: analyse the config the operator handed over (``--nginx-conf`` or an answer)."""
    path = params.get("path") or getattr(ctx, "nginx_conf", None)
    if not path:
        raise WizardError(
            "no nginx config given (pass --nginx-conf PATH, or paste `nginx -T` output to a file)"
        )
    return analyse(Path(str(path)).expanduser(), params.get("worst_gap_ms"))
