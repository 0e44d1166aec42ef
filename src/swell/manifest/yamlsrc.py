"""YAML loading that remembers where every value came from, for file:line:col errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from swell.errors import ManifestError, Problem

try:  # the C loader is several times faster; fall back when libyaml is absent
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

Loc = tuple[str | int, ...]


@dataclass
class SourceMap:
    """Positions (1-based line, col) of values and mapping keys, by path."""

    file: str
    values: dict[Loc, tuple[int, int]] = field(default_factory=dict)
    keys: dict[Loc, tuple[int, int]] = field(default_factory=dict)

    def locate(self, loc: Loc, *, key: bool = False) -> tuple[int, int]:
        """Position of `loc`, or of its nearest ancestor that has one."""
        path = tuple(loc)
        if key and path in self.keys:
            return self.keys[path]
        while path:
            if path in self.values:
                return self.values[path]
            path = path[:-1]
        return self.values.get((), (1, 1))

    def problem(
        self, loc: Loc, message: str, *, key: bool = False, severity: str = "error"
    ) -> Problem:
        line, col = self.locate(loc, key=key)
        return Problem(self.file, line, col, message, severity)


@dataclass
class YamlDoc:
    data: Any
    source: SourceMap


def _pos(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _convert(
    loader: Any, node: yaml.Node, loc: Loc, smap: SourceMap, problems: list[Problem]
) -> Any:
    smap.values[loc] = _pos(node)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) and key is not None:
                problems.append(Problem(smap.file, *_pos(key_node), "mapping keys must be scalars"))
                continue
            key = str(key) if not isinstance(key, str) else key
            if key in out:
                problems.append(Problem(smap.file, *_pos(key_node), f"duplicate key '{key}'"))
                continue
            smap.keys[(*loc, key)] = _pos(key_node)
            out[key] = _convert(loader, value_node, (*loc, key), smap, problems)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [
            _convert(loader, item, (*loc, i), smap, problems) for i, item in enumerate(node.value)
        ]
    return loader.construct_object(node, deep=True)


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse one YAML document; syntax errors become a ManifestError at their position."""
    smap = SourceMap(file)
    loader = _Loader(text)
    problems: list[Problem] = []
    try:
        node = loader.get_single_node()
        data = None if node is None else _convert(loader, node, (), smap, problems)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        reason = exc.problem or exc.context or "invalid YAML"
        raise ManifestError([Problem(file, line, col, f"YAML syntax error: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise ManifestError([Problem(file, 1, 1, f"YAML error: {exc}")]) from None
    finally:
        loader.dispose()
    if problems:
        raise ManifestError(problems)
    return YamlDoc(data, smap)


def load_yaml(path: Path, display: str | None = None) -> YamlDoc:
    """Read and parse a YAML file; an unreadable file is a ManifestError too."""
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ManifestError([Problem(name, 0, 0, f"cannot read file: {exc.strerror}")]) from None
    except UnicodeDecodeError:
        raise ManifestError([Problem(name, 0, 0, "file is not valid UTF-8")]) from None
    return parse_yaml(text, name)
