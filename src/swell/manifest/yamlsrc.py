"""YAML loading that remembers where every value came from, for file:line:col errors.

Hostile files are refused early and cheaply, each with one located problem
(docs/security.md, "Hostile input"): a file over `MAX_BYTES`, bytes that are not UTF-8,
characters YAML does not allow (NUL, other control characters), nesting deeper than
`MAX_DEPTH`, and more than `MAX_VALUES` values once every alias is expanded (a "billion
laughs" file). The document is built from the parser's events with an explicit stack,
never by recursion, so neither deep nesting nor an alias inside the value it names
reaches Python's recursion limit or the C stack of libyaml's composer. An alias is not
copied: its value is shared, its expanded size is counted, and the source map sends
paths below it to the anchor's positions.
"""

from __future__ import annotations

import functools
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from swell.errors import ManifestError, Problem

# A Wave pipeline or manifest is a few kB; these are orders of magnitude above any real
# file and far below what costs noticeable time or memory (docs/security.md).
MAX_BYTES = 1024 * 1024  # size of a file
MAX_DEPTH = 64  # nesting of mappings and sequences, aliases expanded
MAX_VALUES = 100_000  # values (scalars, mappings, sequences), aliases expanded

Loc = tuple[str | int, ...]
Pos = tuple[int, int]

_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # YAML's line breaks


@functools.cache
def _not_allowed() -> re.Pattern[str]:
    """Characters a YAML 1.1 stream may not hold (what PyYAML's reader refuses); compiled
    when a file is first parsed (3 ms), not by every command that imports this."""
    return re.compile("[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


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


def _line_col(text: str, index: int) -> Pos:
    """1-based line and column of `text[index]`, counting YAML's line breaks."""
    line, start = 1, 0
    for match in _BREAK.finditer(text, 0, index):
        line, start = line + 1, match.end()
    return line, index - start + 1


def _describe(char: str) -> str:
    if char == "\x00":
        return "a NUL byte (U+0000)"
    control = ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0
    return f"the {'control ' if control else ''}character U+{ord(char):04X}"


def check_text(text: str, file: str) -> None:
    """Refuse text too large to parse or holding characters YAML forbids, at their place."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        prefix = text.encode("utf-8", "surrogatepass")[:MAX_BYTES].decode("utf-8", "ignore")
        line, col = _line_col(prefix, len(prefix))
        raise ManifestError(
            [Problem(file, line, col, f"file is larger than {MAX_BYTES:,} bytes; not read")]
        )
    bad = _not_allowed().search(text)
    if bad is not None:
        line, col = _line_col(text, bad.start())
        message = f"{_describe(bad.group())} is not allowed in YAML (is this a binary file?)"
        raise ManifestError([Problem(file, line, col, message)])


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse one YAML document; syntax errors and hostile input become a ManifestError
    at their position."""
    check_text(text, file)
    from swell.manifest.yamlparse import parse  # PyYAML only when a file is parsed

    return parse(text, file)


def read_text(path: Path, display: str | None = None) -> str:
    """A manifest or pipeline file's text: a regular file, at most MAX_BYTES, UTF-8."""
    name = display or str(path)

    def refuse(message: str, line: int = 0, col: int = 0) -> NoReturn:
        raise ManifestError([Problem(name, line, col, message)])

    try:
        info = path.stat()
        if stat.S_ISDIR(info.st_mode):
            refuse("is a directory, not a YAML file")
        if not stat.S_ISREG(info.st_mode):
            refuse("is not a regular file")
        with path.open("rb") as fh:
            raw = fh.read(MAX_BYTES + 1)
    except OSError as exc:
        refuse(f"cannot read file: {exc.strerror or exc}")
    except ValueError:  # a NUL in the path
        refuse("cannot read file: invalid file name")
    if len(raw) > MAX_BYTES:
        prefix = raw[:MAX_BYTES].decode("utf-8", "ignore")
        refuse(
            f"file is larger than {MAX_BYTES:,} bytes; not read",
            *_line_col(prefix, len(prefix)),
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        prefix = raw[: exc.start].decode("utf-8", "replace")
        line, col = _line_col(prefix, len(prefix))
        refuse(f"file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})", line, col)


def load_yaml(path: Path, display: str | None = None) -> YamlDoc:
    """Read and parse a YAML file; an unreadable file is a ManifestError too."""
    name = display or str(path)
    return parse_yaml(read_text(path, name), name)
