"""The document and its source map from PyYAML's event stream (see yamlsrc.py).

A module of its own so that what only reads manifests that loaded before (from the
manifest cache) never imports PyYAML: `yamlsrc.parse_yaml` imports this on first use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NoReturn

import yaml

from swell.errors import ManifestError, Problem
from swell.manifest.yamldoc import MAX_DEPTH, MAX_VALUES, Loc, Pos, SourceMap, YamlDoc

try:  # the C parser is several times faster; fall back when libyaml is absent
    _Loader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover
    _Loader = yaml.SafeLoader

_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_VALUE_TAG = "tag:yaml.org,2002:value"
_STR_TAG = "tag:yaml.org,2002:str"
# tags a mapping or sequence may carry: read as plain mappings and lists
_COLLECTION_TAGS = (
    None,
    "!",
    *(f"tag:yaml.org,2002:{t}" for t in ("map", "seq", "set", "omap", "pairs")),
)


def _pos(mark: Any) -> Pos:
    return (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)


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


def parse(text: str, file: str, loader_type: type[yaml.SafeLoader] = _Loader) -> YamlDoc:
    """Parse one YAML document that `check_text` accepted; syntax errors and hostile
    structure become a ManifestError at their position."""
    loader = loader_type(text)
    builder = _Builder(loader, file)
    try:
        data = builder.document()
    except yaml.MarkedYAMLError as exc:
        if exc.problem == _LIBYAML_TOO_DEEP and loader_type is not yaml.SafeLoader:
            # libyaml (PyYAML 6.0.4 on) refuses 1,000 levels of flow nesting while it
            # scans ahead, before the builder sees the level past its own, lower limit;
            # PyYAML's own parser has no such limit, so the builder refuses it there
            return parse(text, file, yaml.SafeLoader)
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
