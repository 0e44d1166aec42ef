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

import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

import yaml

from swell.errors import ManifestError, Problem

try:  # the C parser is several times faster; fall back when libyaml is absent
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

# A Wave pipeline or manifest is a few kB; these are orders of magnitude above any real
# file and far below what costs noticeable time or memory (docs/security.md).
MAX_BYTES = 1024 * 1024  # size of a file
MAX_DEPTH = 64  # nesting of mappings and sequences, aliases expanded
MAX_VALUES = 100_000  # values (scalars, mappings, sequences), aliases expanded

Loc = tuple[str | int, ...]
Pos = tuple[int, int]

_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"
# tags a mapping or sequence may carry: read as plain mappings and lists
_COLLECTION_TAGS = (
    None,
    "!",
    *(f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "set", "omap", "pairs")),
)
_BREAK = re.compile("\r\n|[\r\n\x85\u2028\u2029]")  # YAML's line breaks
# characters a YAML 1.1 stream may hold (what PyYAML's reader accepts)
_NOT_ALLOWED = re.compile(
    "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


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


def _pos(mark: Any) -> Pos:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


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
    bad = _NOT_ALLOWED.search(text)
    if bad is not None:
        line, col = _line_col(text, bad.start())
        message = f"{_describe(bad.group())} is not allowed in YAML (is this a binary file?)"
        raise ManifestError([Problem(file, line, col, message)])


# ------------------------------------------------------------------ events -> data


class _Unset:
    """A marker for the state of a mapping's pending key."""


_NO_KEY, _SKIP, _MERGE = _Unset(), _Unset(), _Unset()


@dataclass(slots=True)
class _Anchor:
    value: Any
    loc: Loc | None  # None: its positions were not recorded (inside a rejected key)
    size: int  # values in it, aliases expanded
    height: int  # levels of nesting in it (a scalar: 0)


@dataclass(slots=True)
class _Node:
    """A value being read: where it goes, and (for a mapping) the key waiting for its value."""

    data: Any
    loc: Loc
    pos: Pos
    record: bool  # False inside a rejected key: nothing to locate there
    anchor: str | None = None
    size: int = 1
    height: int = 1
    key: Any = _NO_KEY
    merges: list[list[tuple[dict[Any, Any], Loc]]] = field(default_factory=list)


class _Builder:
    """Data and source map from a parser's events, with an explicit stack."""

    def __init__(self, loader: Any, file: str) -> None:
        self.loader = loader
        self.source = SourceMap(file)
        self.problems: list[Problem] = []
        self.anchors: dict[str, _Anchor | None] = {}  # None while the anchored value is open
        self.stack: list[_Node] = []
        self.count = 0

    def fail(self, mark: Any, message: str) -> NoReturn:
        raise ManifestError([self._at(mark, message)])

    def _at(self, mark: Any, message: str) -> Problem:
        return Problem(self.source.file, *_pos(mark), message)

    def document(self) -> Any:
        loader = self.loader
        loader.get_event()  # stream start
        if loader.check_event(yaml.StreamEndEvent):
            return None
        loader.get_event()  # document start
        data = self.value()
        loader.get_event()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            self.fail(
                loader.get_event().start_mark,
                "YAML syntax error: expected a single document, but found another",
            )
        return data

    def value(self) -> Any:
        """Read events until the value that starts here is complete."""
        while True:
            event = self.loader.get_event()
            if isinstance(event, yaml.CollectionStartEvent):
                self.open(event)
                continue
            if isinstance(event, yaml.CollectionEndEvent):
                node = self.stack.pop()
                data = self.close(node)
                loc, pos, size, height = node.loc, node.pos, node.size, node.height
            elif isinstance(event, yaml.AliasEvent):
                loc, record = self.where()
                pos = _pos(event.start_mark)
                data, size, height = self.alias(event, loc, record)
            elif isinstance(event, yaml.ScalarEvent):
                loc, record = self.where()
                pos = _pos(event.start_mark)
                data, size, height = self.scalar(event, loc, record), 1, 0
            else:  # pragma: no cover - the parser's grammar allows nothing else here
                self.fail(event.start_mark, "YAML syntax error: unexpected event")
            if not self.stack:
                return data
            self.add(self.stack[-1], data, loc, pos, size, height)

    def where(self) -> tuple[Loc, bool]:
        """The path of the value that starts now, and whether to record its position."""
        if not self.stack:
            return (), True
        parent = self.stack[-1]
        if isinstance(parent.data, list):
            return (*parent.loc, len(parent.data)), parent.record
        if parent.key is _NO_KEY:  # a key: its position is recorded under its name
            return (*parent.loc, "<key>"), False
        if parent.key is _SKIP:
            return (*parent.loc, "<skipped>"), False
        name = "<<" if parent.key is _MERGE else parent.key
        return (*parent.loc, name), parent.record

    def counted(self, size: int, mark: Any, alias: str | None = None) -> None:
        self.count += size
        if self.count > MAX_VALUES and alias:
            self.fail(
                mark,
                f"alias *{alias} expands the file past {MAX_VALUES:,} values; not read "
                "(aliases of aliases multiply: a 'billion laughs' file?)",
            )
        if self.count > MAX_VALUES:
            self.fail(mark, f"the file has more than {MAX_VALUES:,} values; not read")

    def define(self, anchor: str | None, mark: Any) -> None:
        if anchor is None:
            return
        if anchor in self.anchors:
            self.fail(mark, f"YAML syntax error: duplicate anchor &{anchor}")
        self.anchors[anchor] = None

    def open(self, event: Any) -> None:
        loc, record = self.where()
        mark = event.start_mark
        if len(self.stack) >= MAX_DEPTH:
            self.fail(mark, f"nesting is deeper than {MAX_DEPTH} levels; not read")
        self.counted(1, mark)
        self.define(event.anchor, mark)
        pos = _pos(mark)
        if event.tag not in _COLLECTION_TAGS:  # `!!python/object/apply:...` and the like
            self.problems.append(self._at(mark, f"unsupported YAML tag '{event.tag}'"))
        data: Any = {} if isinstance(event, yaml.MappingStartEvent) else []
        if record:
            self.source.values[loc] = pos
        self.stack.append(_Node(data, loc, pos, record, event.anchor))

    def close(self, node: _Node) -> Any:
        data = node.data
        if node.merges:
            data = self.merged(node)
        if node.anchor is not None:
            loc = node.loc if node.record else None
            self.anchors[node.anchor] = _Anchor(data, loc, node.size, node.height)
        return data

    def merged(self, node: _Node) -> dict[Any, Any]:
        """`<<` keys as YAML defines them: keys written in the mapping win, then later
        `<<` keys, then the first mapping of a `<<` list."""
        brought: dict[Any, Any] = {}
        for group in reversed(node.merges):
            for source, source_loc in group:
                for key, value in source.items():
                    if key in node.data or key in brought:
                        continue
                    brought[key] = value
                    if node.record:
                        self.source.aliases[(*node.loc, key)] = (*source_loc, key)
        return {**brought, **node.data}

    def alias(self, event: Any, loc: Loc, record: bool) -> tuple[Any, int, int]:
        name, mark = event.anchor, event.start_mark
        if name not in self.anchors:
            self.fail(mark, f"YAML syntax error: undefined alias *{name}")
        anchor = self.anchors[name]
        if anchor is None:
            self.fail(mark, f"alias *{name} is inside the value it names (a recursive alias)")
        if len(self.stack) + anchor.height > MAX_DEPTH:
            self.fail(mark, f"alias *{name} nests values deeper than {MAX_DEPTH} levels")
        self.counted(anchor.size, mark, alias=name)
        if record:
            self.source.values[loc] = _pos(mark)
            if anchor.loc is not None:
                self.source.aliases[loc] = anchor.loc
        return anchor.value, anchor.size, anchor.height

    def scalar(self, event: Any, loc: Loc, record: bool) -> Any:
        mark = event.start_mark
        self.counted(1, mark)
        self.define(event.anchor, mark)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.loader.resolve(yaml.ScalarNode, event.value, event.implicit)
        parent = self.stack[-1] if self.stack else None
        is_key = parent is not None and isinstance(parent.data, dict) and parent.key is _NO_KEY
        if tag == _MERGE_TAG and is_key:
            return _MERGE
        if tag in (_MERGE_TAG, _VALUE_TAG):  # `<<` or `=` anywhere else is just text
            tag = _STR_TAG
        node = yaml.ScalarNode(tag, event.value, mark, event.end_mark, style=event.style)
        try:
            value = self.loader.construct_object(node, deep=True)
        except (ValueError, TypeError, OverflowError) as exc:
            reason = str(exc).split(";")[0]
            kind = tag.rsplit(":", 1)[-1]
            self.problems.append(
                self._at(mark, f"cannot read {event.value[:40]!r} as {kind}: {reason}")
            )
            value = event.value
        if record:
            self.source.values[loc] = _pos(mark)
        if event.anchor is not None:
            self.anchors[event.anchor] = _Anchor(value, loc if record else None, 1, 0)
        return value

    def add(self, parent: _Node, data: Any, loc: Loc, pos: Pos, size: int, height: int) -> None:
        parent.size += size
        parent.height = max(parent.height, height + 1)
        if isinstance(parent.data, list):
            parent.data.append(data)
        elif parent.key is _NO_KEY:
            parent.key = self.key(parent, data, pos)
        else:
            if parent.key is _MERGE:
                self.merge(parent, data, loc, pos)
            elif parent.key is not _SKIP:
                parent.data[parent.key] = data
            parent.key = _NO_KEY

    def key(self, parent: _Node, key: Any, pos: Pos) -> Any:
        file = self.source.file
        if key is _MERGE:
            return _MERGE
        if not isinstance(key, str | int | float | bool) and key is not None:
            self.problems.append(Problem(file, *pos, "mapping keys must be scalars"))
            return _SKIP
        name = key if isinstance(key, str) else str(key)
        if name in parent.data:
            self.problems.append(Problem(file, *pos, f"duplicate key '{name}'"))
            return _SKIP
        if parent.record:
            self.source.keys[(*parent.loc, name)] = pos
        return name

    def merge(self, parent: _Node, data: Any, loc: Loc, pos: Pos) -> None:
        if isinstance(data, dict):
            parent.merges.append([(data, loc)])
        elif isinstance(data, list) and all(isinstance(item, dict) for item in data):
            parent.merges.append([(item, (*loc, i)) for i, item in enumerate(data)])
        else:
            message = "'<<' (merge) needs a mapping or a list of mappings"
            self.problems.append(Problem(self.source.file, *pos, message))


def parse_yaml(text: str, file: str) -> YamlDoc:
    """Parse one YAML document; syntax errors and hostile input become a ManifestError
    at their position."""
    check_text(text, file)
    loader = _Loader(text)
    builder = _Builder(loader, file)
    try:
        data = builder.document()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        reason = exc.problem or exc.context or "invalid YAML"
        raise ManifestError([Problem(file, line, col, f"YAML syntax error: {reason}")]) from None
    except yaml.YAMLError as exc:
        raise ManifestError([Problem(file, 1, 1, f"YAML error: {exc}")]) from None
    finally:
        loader.dispose()
    if builder.problems:
        raise ManifestError(builder.problems)
    return YamlDoc(data, builder.source, text)


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
