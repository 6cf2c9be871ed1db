"""YAML loading that remembers where every value came from, so errors can say file:line."""

from __future__ import annotations

from typing import Any

import yaml

Path_ = tuple[str | int, ...]


# The most values the aliases of one document may stand for, counted expanded (an alias of a list
# of three scalars is four values). The shipped playbook's aliases stand for 254; a 283-byte
# "billion laughs" stands for 10^9 (79 s and 1.8 GB before this bound). 10,000 is ample for a
# hand-written file and reads in milliseconds.
MAX_ALIAS_VALUES = 10_000
# The deepest nesting of lists and mappings: the playbook's is 16, an answers file's 2. PyYAML
# composes recursively, so 70,000 "[" were a RecursionError traceback (found by the long fuzz run).
MAX_DEPTH = 100


class YamlError(ValueError):
    """Malformed YAML, with the line it broke on (``texts``: the message in every language, when
    it has its own words)."""

    def __init__(self, message: str, line: int | None, texts: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.line = line
        self.texts = texts or {"en": message}


class YamlBoundError(yaml.YAMLError):
    """YAML past the loader's bounds: aliases that stand for too many values, an alias inside the
    value it names, nesting too deep."""

    def __init__(self, key: str, line: int) -> None:
        from wizard.i18n.words import texts

        self.texts = texts(key, most=f"{MAX_ALIAS_VALUES:,}", depth=MAX_DEPTH)
        super().__init__(self.texts["en"])
        self.line = line


class BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing aliases past MAX_ALIAS_VALUES expanded values, or inside
    their own anchor's value (a loop every reader that walks it would follow for ever), and
    nesting deeper than MAX_DEPTH.

    Each node's expanded size is known once it is composed (its children were composed first);
    an alias adds the size of the node it names."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}
        self._open: set[str] = set()  # anchors whose collection is being composed
        self._alias_values = 0
        self._depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        anchor = getattr(event, "anchor", None)
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            if anchor in self._open:
                raise YamlBoundError("error.yaml_alias_loop", line)
            node = super().compose_node(parent, index)
            self._alias_values += self._sizes.get(id(node), 1)
            if self._alias_values > MAX_ALIAS_VALUES:
                raise YamlBoundError("error.yaml_aliases", line)
            return node
        nests = isinstance(event, yaml.CollectionStartEvent)
        if nests and self._depth == MAX_DEPTH:
            raise YamlBoundError("error.yaml_too_deep", line)
        self._depth += nests
        if anchor is not None:
            self._open.add(anchor)
        try:
            node = super().compose_node(parent, index)
        finally:
            if anchor is not None:
                self._open.discard(anchor)
            self._depth -= nests
        children: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        self._sizes[id(node)] = 1 + sum(self._sizes.get(id(child), 1) for child in children)
        return node


def located(path: object, line: int | None, said: dict[str, str]) -> dict[str, str]:
    """``said`` in every language, each as ``path:line: text``."""
    return {lang: f"{path}:{line or 1}: {text}" for lang, text in said.items()}


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` with aliases bounded (BoundedLoader): YamlBoundError past the bound."""
    return yaml.load(text, Loader=BoundedLoader)


def load_with_lines(text: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML (safe tags only, aliases bounded); return the data and a map from key path to
    1-based line."""
    try:
        root = yaml.compose(text, Loader=BoundedLoader)
    except YamlBoundError as exc:
        raise YamlError(str(exc), exc.line, exc.texts) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlError(f"invalid YAML: {_first_line(exc.problem or exc)}", line) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {_first_line(exc)}", None) from None
    lines: dict[Path_, int] = {}
    if root is None:
        return None, lines
    return _build(root, (), lines, yaml.SafeLoader("")), lines


def _first_line(said: object) -> str:
    """The first line of a PyYAML error (a ReaderError's text adds where it was on a second)."""
    return (str(said).splitlines() or [""])[0]


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int], scalars: yaml.SafeLoader) -> Any:
    """``scalars`` constructs each scalar: one loader for the whole document (one per scalar
    cost a third of a second on the playbook)."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = str(_constructed(key_node, scalars))
            if key in result:
                raise YamlError(f"duplicate key '{key}'", key_node.start_mark.line + 1)
            result[key] = _build(value_node, (*path, key), lines, scalars)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, (*path, index), lines, scalars) for index, item in enumerate(node.value)
        ]
    return _constructed(node, scalars)


def _constructed(node: yaml.Node, scalars: yaml.SafeLoader) -> Any:
    """A scalar (or a key) as PyYAML's safe loader builds it; YamlError at its line when it cannot
    (a tag it does not know, a 5,000-digit integer past int()'s limit, the date 2024-13-45)."""
    try:
        return scalars.construct_object(node)
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or exc
        raise YamlError(f"invalid YAML: {_first_line(problem)}", node.start_mark.line + 1) from None
    except ValueError:  # PyYAML's constructors raise it for values they recognised
        raise YamlError(
            "invalid YAML: a value that cannot be read (a number too long, a date that does not "
            "exist)",
            node.start_mark.line + 1,
        ) from None


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of ``path``, or of its nearest ancestor that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())
