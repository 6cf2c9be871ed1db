"""What a person must never read in the wizard's output: an English sentence in a Chinese walk, and
raw values in either language (``None``, ``True``, a Python repr, a snake_case key, a float with
its binary noise, a negative duration).

Both checks leave out what is code or a name: code spans (backticks, HTML code/pre), URLs, file
paths, flags, finding ids and units. A snake_case name is allowed when it is one the engineer
types or reads elsewhere: a vLLM argument, an nginx directive, a Prometheus metric, a parameter a
finding changes, a cause id or a round's label (the playbook's own vocabulary).
"""

from __future__ import annotations

import re
from functools import cache
from html import unescape

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")

# An English sentence: three or more English words in a row (lower case, the first may be
# capitalised), once code (backticks, code blocks, HTML code/pre/style), URLs, paths, flags and
# snake_case ids are taken out. Names (MLPerf LoadGen, TTFT p50) and pairs (API server) are not.
ENGLISH_RUN = re.compile(
    r"(?<![A-Za-z0-9_./-])[A-Za-z]?[a-z]+(?:'[a-z]+)?(?:[ ,]+[a-z]{2,}(?:'[a-z]+)?){2,}(?![A-Za-z0-9_./-])"
)
# Python's spellings of values and containers, as str() or f"{x}" would write them.
PYTHON_WORDS = re.compile(r"(?<![A-Za-z0-9_`-])(?:None|True|False|nan|inf)(?![A-Za-z0-9_`-])")
PYTHON_REPR = re.compile(r"\[\]|\{\}|\[['\"{]|\{['\"]")
SNAKE = re.compile(r"(?<![A-Za-z0-9_:.$/-])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![A-Za-z0-9_:(-])")
# A fact's key path (``session.endpoint``, ``nginxconf.locations.0.proxy_read_timeout_s``); a
# file name (``vllm.log``) is a name.
DOTTED_KEY = re.compile(r"(?<![A-Za-z0-9_./-])[a-z_]{2,}(?:\.[a-z0-9_]+)+(?![A-Za-z0-9_/-])")
FILE_SUFFIXES = {"log", "conf", "csv", "yaml", "yml", "json", "ndjson", "md", "html", "txt", "py"}
# A float with more than three decimals (a fraction or ms printed as Python computed it).
LONG_FLOAT = re.compile(r"(?<![A-Za-z0-9_.])-?\d+\.\d{4,}(?![A-Za-z0-9_.])")
# A negative duration: minus, a number, and a time unit (a change column says "-108.1" bare).
NEGATIVE_DURATION = re.compile(r"(?<![A-Za-z0-9_\[,(])-\d+(?:\.\d+)?\s?(?:ms|s)\b")


def plain_text(text: str, html: bool = False) -> str:
    """What a person reads: without terminal escapes and, for HTML, without tags and code."""
    text = ANSI.sub("", text)
    if html:
        text = re.sub(r"<(style|code|pre|script|desc)\b.*?</\1>", " ", text, flags=re.S)
        text = unescape(re.sub(r"<[^>]+>", "\n", text))
    return text


def _without_code(text: str) -> str:
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"`[^`]*`", " ", text)  # a wrapped terminal line may split a code span
    text = re.sub(r"[!-~]*(?:https?://|/)[!-~]*", " ", text)  # URLs and paths (ASCII: not the
    # Chinese text that touches them)
    return re.sub(r"(?<!\w)--?[a-z][\w-]*", " ", text)  # flags


def english_sentences(text: str, html: bool = False) -> list[str]:
    """Runs of three or more English words outside code, paths, flags and ids."""
    text = _without_code(plain_text(text, html))
    text = re.sub(r"[!-~]*(?:_|\.[A-Za-z0-9])[!-~]*", " ", text)
    return [match.group(0) for match in ENGLISH_RUN.finditer(text)]


@cache
def known_names() -> frozenset[str]:
    """The snake_case names an engineer reads as names: the playbook's parameters, causes and
    rounds, vLLM's arguments and metrics, nginx's directives (all from the wizard's own tables)."""
    from wizard import playbook
    from wizard.probes.readers import nginx_config, vllm_args

    book = playbook.load()
    names = {*vllm_args.FIELDS, *vllm_args.NAMESPACE_KEYS, *nginx_config.INHERITED}
    names |= {"proxy_read_timeout", "proxy_connect_timeout", "ignore_eos", "max_tokens",
              "enable_prefix_caching", "enable_chunked_prefill", "kv_cache_usage_perc",
              "gpu_cache_usage_perc", "upstream_keepalive"}  # fmt: skip
    for finding in book.findings.values():
        names.add(finding.cause)
        if finding.change:
            names.add(str(finding.change.get("parameter")))
    for node in book.nodes.values():
        names.update(call.as_ for call in node.probes)
    return frozenset(names)


def raw_values(text: str, html: bool = False) -> list[str]:
    """Values printed as the program holds them rather than as a person reads them."""
    text = _without_code(plain_text(text, html))
    found = [m.group(0) for m in PYTHON_WORDS.finditer(text)]
    found += [m.group(0) for m in PYTHON_REPR.finditer(text)]
    found += [
        m.group(0)
        for m in DOTTED_KEY.finditer(text)
        if m.group(0).rsplit(".", 1)[1] not in FILE_SUFFIXES
    ]
    found += [m.group(0) for m in SNAKE.finditer(text) if m.group(0) not in known_names()]
    found += [m.group(0) for m in LONG_FLOAT.finditer(text)]
    found += [m.group(0) for m in NEGATIVE_DURATION.finditer(text)]
    return found
