"""A parsed YAML document and its source map: where every value came from, for
file:line:col errors (yamlsrc.py reads and checks a file, yamlparse.py builds these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from swell.errors import Problem

MAX_DEPTH = 64  # nesting of mappings and sequences, aliases expanded
MAX_VALUES = 100_000  # values (scalars, mappings, sequences), aliases expanded

Loc = tuple[str | int, ...]
Pos = tuple[int, int]


@dataclass
class SourceMap:
    """Positions (1-based line, col) of values and mapping keys, by path."""

    file: str
    values: dict[Loc, Pos] = field(default_factory=dict)
    keys: dict[Loc, Pos] = field(default_factory=dict)
    # the path of an alias (or of a key a `<<` merge brought in) -> the path it repeats
    aliases: dict[Loc, Loc] = field(default_factory=dict)

    def locate(self, loc: Loc, *, key: bool = False) -> Pos:
        """Position of `loc` (through aliases), or of its nearest ancestor that has one."""
        path = tuple(loc)
        for _ in range(len(self.aliases) + 1):  # each hop goes to an earlier anchor
            if key and path in self.keys:
                return self.keys[path]
            if path in self.values:
                return self.values[path]
            target = self._through_alias(path)
            if target is None:
                break
            path = target
        while path:
            path = path[:-1]
            if path in self.values:
                return self.values[path]
        return self.values.get((), (1, 1))

    def _through_alias(self, path: Loc) -> Loc | None:
        for cut in range(len(path), 0, -1):
            target = self.aliases.get(path[:cut])
            if target is not None:
                return (*target, *path[cut:])
        return None

    def problem(
        self, loc: Loc, message: str, *, key: bool = False, severity: str = "error"
    ) -> Problem:
        line, col = self.locate(loc, key=key)
        return Problem(self.file, line, col, message, severity)


@dataclass
class YamlDoc:
    data: Any
    source: SourceMap
    text: str = ""  # what was parsed
