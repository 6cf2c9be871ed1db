"""vLLM's server arguments where engineers paste them, outside vLLM's own ``non-default args`` line.

- A command line: ``vllm serve MODEL --flag value``, ``python -m vllm.entrypoints.openai.api_server
  --model M`` (or the older ``vllm.entrypoints.api_server``), ``docker run ... vllm/vllm-openai:TAG
  --flag``; continued over lines by a trailing backslash (a script, a heredoc), values quoted or
  written ``--flag=value``, flags with ``-`` or ``_``.
- A Kubernetes manifest or compose file: ``command:``/``args:`` as inline lists, one item a line, a
  ``- |`` block of shell, or a plain string; an ``args:`` list without a vLLM command counts when
  the container's ``image:`` is vLLM's.
- The ``args: Namespace(...)`` dump of 2023-2024 ``api_server.py`` (a benchmark client's Namespace,
  with ``num_prompts`` or ``request_rate``, is not the server's).

Values the paste does not hold (a shell variable, ``auto``) are unknown and said so in ``notes``.
Collection is bounded (``MAX_COMMAND_CHARS``): a runaway continuation cannot take memory.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from wizard.i18n.words import texts
from wizard.numbers import MAX_DIGITS, parse_float, parse_int
from wizard.playbook.yamlines import safe_load

MAX_COMMAND_CHARS = 64 * 1024
# The start of vLLM's own command; what follows it are its arguments. A backtick or a word right
# after it (vLLM's deprecation warning quotes the module name) is prose, not a command.
COMMAND_START = re.compile(
    r"(?:\bvllm\s+serve|-m\s+vllm\.entrypoints\.(?:openai\.)?api_server|\bvllm/vllm-openai\S*)"
    r"(?=[\s\"',\]\\]|$)"
)
# vLLM's own log lines mention commands in prose ("Restart vllm serve with --enable-scale-out"):
# a command start after a log prefix is not a pasted command.
LOG_PREFIX = re.compile(r"(?:INFO|WARNING|ERROR|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d")
# A container key of a manifest: "args:", "- command:", with what follows it on the line.
MANIFEST_KEY = re.compile(r"^(?P<indent>\s*)(?:-\s+)?(?P<key>args|command):\s*(?P<rest>.*)$")
MANIFEST_FIRST = " \t-aci"  # how a manifest's args:/command:/image: line can begin
LIST_ITEM = re.compile(r"^(?P<indent>\s*)-\s+(?P<item>.*)$")
IMAGE = re.compile(r"^\s*(?:-\s+)?image:\s*(?P<image>\S+)")
NAMESPACE_NEEDLE = "Namespace("
# What may stand before a command on its line: a prompt, assignments, a wrapper, a python.
WRAPPERS = frozenset({"exec", "nohup", "sudo", "time", "env", "command", "-", "&&", "||", ";", "|",
                      "then", "do", "sh", "bash", "-c", "uv", "run", "poetry", "conda"})  # fmt: skip
# A benchmark client's Namespace has these; the server's never does.
CLIENT_KEYS = re.compile(r"\b(?:num_prompts|request_rate|dataset_name|dataset_path|backend)=")
# field name on the reader's Run -> kind of value
FIELDS = {
    "model": "str", "tensor_parallel_size": "int", "pipeline_parallel_size": "int",
    "max_model_len": "len", "max_num_batched_tokens": "int", "max_num_seqs": "int",
    "gpu_memory_utilization": "fraction", "chunked_prefill": "bool", "enforce_eager": "bool",
    "num_gpu_blocks_override": "int", "block_size": "int", "api_server_count": "int",
}  # fmt: skip
# command-line flag (without dashes, "_" as "-") -> field
FLAGS = {
    "model": "model", "tensor-parallel-size": "tensor_parallel_size", "tp": "tensor_parallel_size",
    "pipeline-parallel-size": "pipeline_parallel_size", "pp": "pipeline_parallel_size",
    "max-model-len": "max_model_len", "max-num-batched-tokens": "max_num_batched_tokens",
    "max-num-seqs": "max_num_seqs", "gpu-memory-utilization": "gpu_memory_utilization",
    "enable-chunked-prefill": "chunked_prefill", "enforce-eager": "enforce_eager",
    "num-gpu-blocks-override": "num_gpu_blocks_override", "block-size": "block_size",
    "api-server-count": "api_server_count",
}  # fmt: skip
# Namespace attribute -> field (the positional model of `vllm serve` is model_tag)
NAMESPACE_KEYS = {**{name: name for name in FIELDS if name != "chunked_prefill"},
                  "enable_chunked_prefill": "chunked_prefill", "model_tag": "model"}  # fmt: skip
SHELL_VARIABLE = re.compile(
    r"^\$\{?(?P<name>\w+)(?::?-(?P<default>[^}]*))?\}?$|^\$\((?P<k8s>\w+)\)$"
)


@dataclass
class ServerArgs:
    """The settings one pasted command (or Namespace dump) gives, and what could not be read."""

    line: int
    source: str  # "command line", "manifest", "Namespace dump"
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[dict[str, str]] = field(default_factory=list)  # each in every language


def _value(kind: str, raw: str) -> Any:
    """``raw`` as the field's kind, else None (the caller notes it)."""
    text = raw.strip()
    if kind == "str":
        return text or None
    if kind == "bool":
        return {"true": True, "false": False}.get(text.lower())
    if kind == "fraction":
        number = parse_float(text)
        return number if number is not None and 0 < number <= 1 else None
    if kind == "len":  # vLLM takes 1k (1,000), 1K (1,024), 25.6k
        if (match := re.fullmatch(r"(\d+(?:\.\d+)?)([kKmM]?)", text)) is None:
            return None
        scale = {"": 1, "k": 1000, "K": 1024, "m": 10**6, "M": 2**20}[match.group(2)]
        number = parse_float(match.group(1))
        return (
            int(number * scale) if number is not None and number * scale < 10**MAX_DIGITS else None
        )
    number_int = parse_int(text)
    return number_int if number_int else None


def _resolve(flag: str, raw: str, kind: str, notes: list[dict[str, str]], line: int) -> Any:
    """A value, a shell variable's default, or None with a note saying why."""
    if (variable := SHELL_VARIABLE.match(raw.strip())) is not None:
        default = variable.group("default")
        name = variable.group("name") or variable.group("k8s")
        if default:
            notes.append(texts("lognote.args_default", line=line, flag=flag, raw=raw,
                               default=default, name=name))  # fmt: skip
            raw = default
        else:
            notes.append(texts("lognote.args_variable", line=line, flag=flag, raw=raw))
            return None
    if kind == "len" and raw.strip().lower() in ("auto", "-1"):
        notes.append(texts("lognote.args_auto", line=line, flag=flag, raw=raw))
        return None
    value = _value(kind, raw)
    if value is None:
        notes.append(texts("lognote.args_bad", line=line, flag=flag, raw=repr(raw)))
    return value


def parse_tokens(tokens: list[str], args: ServerArgs, positional_model: bool) -> None:
    """Read vLLM's flags out of ``tokens`` (the words after the command) into ``args``."""
    index = 0
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if not token.startswith("-"):
            if positional_model and "model" not in args.settings and index == 1:
                args.settings["model"] = token
            continue
        name, has_value, inline = token.lstrip("-").replace("_", "-").partition("=")
        negated = name.startswith("no-") and name[3:] in FLAGS
        target = FLAGS.get(name[3:] if negated else name)
        if target is None:
            continue
        kind = FIELDS[target]
        if kind == "bool":
            value: Any = not negated
            # 2024's --enable-chunked-prefill took an optional True/False
            if has_value:
                value = _value("bool", inline)
            elif index < len(tokens) and tokens[index].lower() in ("true", "false"):
                value = tokens[index].lower() == "true"
                index += 1
            if value is not None:
                args.settings[target] = value
            continue
        if not has_value:
            if index >= len(tokens) or tokens[index].startswith("--"):
                args.notes.append(texts("lognote.args_no_value", line=args.line, flag=token))
                continue
            inline = tokens[index]
            index += 1
        if (
            value := _resolve(token.split("=")[0], inline, kind, args.notes, args.line)
        ) is not None:
            args.settings[target] = value


def split_shell(text: str) -> tuple[list[str], str | None]:
    """Shell words up to the first operator (``|``, ``&&``, ``;``, ``>``); shlex's words when a
    quote does not close."""
    text = text.replace("\\\r\n", " ").replace("\\\n", " ").replace("`", " ")
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words: list[str] = []
    try:
        for word in lexer:
            if word and all(c in "();<>|&" for c in word):
                break
            words.append(word)
    except ValueError as exc:  # an unclosed quote: read what came before it
        return words, str(exc)
    return words, None


def _after_start(words: list[str]) -> tuple[list[str], bool] | None:
    """The words after vLLM's command among ``words``, and whether a positional model may follow."""
    for i, word in enumerate(words):
        if word == "serve" and i > 0 and words[i - 1].rsplit("/", 1)[-1] == "vllm":
            return words[i + 1 :], True
        if (
            word.startswith("vllm.entrypoints.")
            and word.endswith("api_server")
            and i > 0
            and words[i - 1] == "-m"
        ):
            return words[i + 1 :], False
        if word.startswith("vllm/vllm-openai"):
            return words[i + 1 :], False
    return None


def read_namespace(line: str, number: int) -> ServerArgs | None:
    """The server arguments of an ``args: Namespace(...)`` line, else None."""
    at = line.find(NAMESPACE_NEEDLE)
    if at < 0:
        return None
    body = line[at + len(NAMESPACE_NEEDLE) :]
    if CLIENT_KEYS.search(body):
        return None
    args = ServerArgs(number, "Namespace dump")
    for key, target in NAMESPACE_KEYS.items():
        match = re.search(rf"\b{key}=('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^,()\s]+)", body)
        if match is None:
            continue
        try:
            value = ast.literal_eval(match.group(1))
        except (ValueError, SyntaxError):
            continue
        if value is None or isinstance(value, bool) != (FIELDS[target] == "bool"):
            continue
        value = _value(FIELDS[target], str(value)) if not isinstance(value, bool) else value
        if value is not None:
            args.settings[target] = value
    return args if args.settings else None


class ArgsCollector:
    """Feed every line of a paste; completed command lines and manifests come back as ServerArgs.

    Only lines that can be part of one are looked at (``wants``, a few substring tests), so a long
    log pays little for it.
    """

    def __init__(self) -> None:
        self.busy = False
        self._reset()
        self._vllm_container = False
        self._pending_command: list[str] = []  # a manifest's command: before its args:

    def _reset(self) -> None:
        self._shell: list[str] = []  # a command continued by trailing backslashes
        self._shell_line = 0
        self._list: list[str] | None = None  # the items of a block list (args:/command:)
        self._list_indent = 0
        self._list_line = 0
        self._block: list[str] | None = None  # a "- |" shell block inside a list
        self._block_indent = 0
        self._list_key = "args"
        self._chars = 0

    @staticmethod
    def wants(line: str) -> bool:
        """Whether ``line`` may start a command or be part of a manifest (cheap: every line of a
        long log asks; a manifest's key starts its line, after indentation or a list dash)."""
        return "vllm" in line or (
            line[:1] in MANIFEST_FIRST
            and ("args:" in line or "command:" in line or "image:" in line)
        )

    def feed(self, line: str, number: int) -> list[ServerArgs]:
        """One line; the commands it completed (usually none)."""
        done = self._feed(line, number)
        # Collecting a command or a list: every line comes here until it ends. An attribute, not
        # a property: every line of a long log reads it.
        self.busy = bool(self._shell) or self._list is not None
        return done

    def _feed(self, line: str, number: int) -> list[ServerArgs]:
        done: list[ServerArgs] = []
        if self._chars > MAX_COMMAND_CHARS:
            done.extend(self._give_up(number))
        if self._block is not None:
            if self._in_block(line):
                return done
            self._end_block()
        if self._list is not None:
            if self._list_item(line):
                return done
            done.extend(self._end_list())
        if self._shell:
            self._shell.append(line)
            self._chars += len(line)
            if not line.rstrip().endswith("\\"):
                done.extend(self._end_shell())
            return done
        if (image := IMAGE.match(line)) is not None:  # a container's image: no command itself
            self._vllm_container = "vllm" in image.group("image")
            self._pending_command = []
            return done
        if (key := MANIFEST_KEY.match(line)) is not None and "non-default args" not in line:
            done.extend(self._manifest_key(key, number))
            return done
        start = COMMAND_START.search(line)
        if start is not None and _starts_a_command(line, start):
            self._shell, self._shell_line, self._chars = [line[start.start() :]], number, len(line)
            if not line.rstrip().endswith("\\"):
                done.extend(self._end_shell())
        return done

    def flush(self) -> list[ServerArgs]:
        """End of input: whatever was being collected."""
        done: list[ServerArgs] = []
        if self._block is not None:
            self._end_block()
        if self._list is not None:
            done.extend(self._end_list())
        if self._shell:
            done.extend(self._end_shell())
        return done

    def _give_up(self, number: int) -> list[ServerArgs]:
        line = self._shell_line or self._list_line
        self._reset()
        note = ServerArgs(line, "command line")
        note.notes.append(
            texts("lognote.args_too_long", line=line, most=MAX_COMMAND_CHARS, to=number)
        )
        return [note]

    def _end_shell(self) -> list[ServerArgs]:
        text, line = "\n".join(self._shell), self._shell_line
        self._shell, self._chars = [], 0
        return self._from_words(text, line, "command line", container=False)

    def _from_words(self, text: str, line: int, source: str, container: bool,
                    words: list[str] | None = None) -> list[ServerArgs]:  # fmt: skip
        note = None
        if words is None:
            words, note = split_shell(text)
        found = _after_start(words)
        if found is None and not container:
            return []
        tokens, positional = found if found is not None else (words, False)
        args = ServerArgs(line, source)
        if note:
            args.notes.append(texts("lognote.args_quoting", line=line, why=note))
        parse_tokens(tokens, args, positional)
        return [args] if args.settings or args.notes else []

    def _manifest_key(self, key: re.Match[str], number: int) -> list[ServerArgs]:
        rest = key.group("rest").strip()
        if rest.startswith("#"):
            rest = ""
        if not rest or rest in ("|", ">", "|-", ">-"):
            self._list, self._list_indent, self._list_line = [], len(key.group("indent")), number
            self._list_key = key.group("key")
            if rest:  # a block scalar right under the key: one shell text
                self._block, self._block_indent = [], len(key.group("indent"))
            return []
        if rest.startswith("["):
            items = flow_list(rest)
            if items is None:
                args = ServerArgs(number, "manifest")
                args.notes.append(
                    texts("lognote.args_open_list", line=number, name=key.group("key"))
                )
                return [args]
            return self._from_items(items, key.group("key"), number)
        return self._from_items([_unquote(rest)], key.group("key"), number, scalar=True)

    def _list_item(self, line: str) -> bool:
        """Whether ``line`` continues the block list (an item, a blank line or a comment)."""
        assert self._list is not None
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            return True
        item = LIST_ITEM.match(line)
        if item is None or len(item.group("indent")) < self._list_indent:
            return False
        value = item.group("item").strip()
        if value in ("|", ">", "|-", ">-"):
            self._block, self._block_indent = [], len(item.group("indent"))
            return True
        self._list.append(_unquote(value))
        self._chars += len(line)
        return True

    def _in_block(self, line: str) -> bool:
        assert self._block is not None
        indent = len(line) - len(line.lstrip())
        if line.strip() and indent <= self._block_indent:
            return False
        self._block.append(line.strip())
        self._chars += len(line)
        return True

    def _end_block(self) -> None:
        assert self._block is not None and self._list is not None
        self._list.append("\n".join(self._block))
        self._block = None

    def _end_list(self) -> list[ServerArgs]:
        assert self._list is not None
        items, key, line = self._list, self._list_key, self._list_line
        self._list, self._chars = None, 0
        return self._from_items(items, key, line)

    def _from_items(
        self, items: list[str], key: str, line: int, scalar: bool = False
    ) -> list[ServerArgs]:
        """A manifest's list: words already split, except a shell script item (``sh -c``)."""
        scripts = [i for i in items if "\n" in i or COMMAND_START.search(i)]
        if scripts or scalar:
            read: list[ServerArgs] = []
            for script in scripts or items:
                container = self._vllm_container and (key == "args" or scalar)
                read.extend(self._from_words(script, line, "manifest", container=container))
            return read
        if key == "command":
            found = _after_start(items)
            if found is None:
                return []
            self._vllm_container = True
            if not found[0]:  # the command alone: its args: follow
                self._pending_command = items
                return []
            return self._from_words("", line, "manifest", container=False, words=items)
        words, self._pending_command = [*self._pending_command, *items], []
        if _after_start(words) is None and not self._vllm_container:
            return []
        return self._from_words("", line, "manifest", container=True, words=words)


def _starts_a_command(line: str, start: re.Match[str]) -> bool:
    """Whether the command ``start`` found in ``line`` is one, not prose about one."""
    if LOG_PREFIX.search(line, 0, start.start()) is not None:
        return False
    if start.group().startswith("vllm/"):  # an image name after docker's own flags
        return True
    for word in line[: start.start()].split():
        word = word.strip("`'\"")
        if not (not word or word.endswith(("$", "#", ">", "%")) or "=" in word or word in WRAPPERS
                or "python" in word or (word.startswith("(") and word.endswith(")"))):  # fmt: skip
            return False
    return True


# Possessive throughout: a lazy plain item between two \s* tried every split of a run of spaces
# (cubic: 61 s of CPU on "[" and 3,000 spaces). A plain item's trailing spaces are cut in Python.
FLOW_ITEM = re.compile(
    r'\s*+(?:"((?:[^"\\]|\\.)*+)"\s*+|\'((?:[^\']|\'\')*+)\'\s*+|([^,\]]*+))(,|\])'
)


def flow_list(text: str) -> list[str] | None:
    """The items of a YAML flow list of scalars (``["--model", 'm', 2]``), read without a YAML
    loader: a pasted line with anchors and aliases cannot make it expand."""
    items, at = [], 1
    while at < len(text):
        match = FLOW_ITEM.match(text, at)
        if match is None:
            return None
        quoted, single, plain, end = match.groups()
        value = (
            quoted
            if quoted is not None
            else single.replace("''", "'")
            if single is not None
            else plain.rstrip()
        )
        if value or quoted is not None or single is not None:
            items.append(value.replace('\\"', '"'))
        at = match.end()
        if end == "]":
            return items
    return None


def _unquote(text: str) -> str:
    """A YAML scalar's value (quotes removed, a trailing comment dropped)."""
    try:
        value = safe_load(text)  # aliases and nesting bounded
    except yaml.YAMLError:
        return text
    return text if value is None or isinstance(value, dict | list) else str(value)
