"""YAML loading that remembers where every value came from, so errors can say file:line."""

from __future__ import annotations

from typing import Any

import yaml

Path_ = tuple[str | int, ...]
# libyaml's parser when PyYAML has it: the pure-Python one took 1 s of CPU on the playbook (most
# of `run`'s time before its first request); both keep every node's line.
COMPOSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(ValueError):
    """Malformed YAML, with the line it broke on."""

    def __init__(self, message: str, line: int | None) -> None:
        super().__init__(message)
        self.line = line


def load_with_lines(text: str) -> tuple[Any, dict[Path_, int]]:
    """Parse YAML (safe tags only); return the data and a map from key path to 1-based line."""
    try:
        root = yaml.compose(text, Loader=COMPOSER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise YamlError(f"invalid YAML: {exc.problem or exc}", line) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", None) from None
    lines: dict[Path_, int] = {}
    if root is None:
        return None, lines
    return _build(root, (), lines, yaml.SafeLoader("")), lines


def _build(node: yaml.Node, path: Path_, lines: dict[Path_, int], scalars: yaml.SafeLoader) -> Any:
    """``scalars`` constructs each scalar: one loader for the whole document (one per scalar
    cost a third of a second on the playbook)."""
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = scalars.construct_object(key_node)
            key = str(key)
            if key in result:
                raise YamlError(f"duplicate key '{key}'", key_node.start_mark.line + 1)
            result[key] = _build(value_node, (*path, key), lines, scalars)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return result
    if isinstance(node, yaml.SequenceNode):
        return [
            _build(item, (*path, index), lines, scalars) for index, item in enumerate(node.value)
        ]
    return scalars.construct_object(node)


def line_of(lines: dict[Path_, int], path: Path_) -> int | None:
    """The line of ``path``, or of its nearest ancestor that has one."""
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())
