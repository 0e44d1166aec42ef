"""Validate a file's data, and keep what is valid so the other checks still run.

`swell validate` reports a file's problems in one pass: a field typo must not hide the
reference, graph and template problems behind it. pydantic reports every field error
at once; then the offending values are removed (a field with a default, an unknown
key, a mapping entry, a list item when the item cannot stand without it) until the
rest validates, and lint runs on that. List items that were removed shift the later
ones, so the source map is rewritten to the pruned positions: lint's problems still
point at the right lines.
"""

from __future__ import annotations

import copy
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from swell.errors import Problem
from swell.manifest.yamldoc import Loc, SourceMap

M = TypeVar("M", bound=BaseModel)

MAX_ROUNDS = 50  # each round removes at least one value; files are small


def _members(annotation: Any) -> list[Any]:
    """The non-None members of a union, or the annotation itself."""
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return [a for a in args if a is not type(None)]
    return [annotation]


def _step(annotation: Any, part: str | int) -> Any:
    """The annotation of `part` inside a value of `annotation` (None: unknown)."""
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            for name, info in member.model_fields.items():
                if part in (name, info.alias):
                    return info.annotation
            continue
        origin, args = typing.get_origin(member), typing.get_args(member)
        if origin is dict and isinstance(part, str) and args:
            return args[-1]
        if origin is list and isinstance(part, int) and args:
            return args[0]
    return None


def _model(annotation: Any) -> type[BaseModel] | None:
    for member in _members(annotation):
        if isinstance(member, type) and issubclass(member, BaseModel):
            return member
    return None


def _removable(model: type[BaseModel], loc: Loc) -> Loc | None:
    """The value to remove for an error at `loc`: the nearest level that can go
    without making its parent invalid (a field with a default, an unknown key, a
    mapping entry, a list item)."""
    annotation: Any = model
    parents: list[Any] = []
    for part in loc:
        parents.append(annotation)
        annotation = _step(annotation, part) if annotation is not None else None
    for depth in range(len(loc), 0, -1):
        part, parent = loc[depth - 1], parents[depth - 1]
        if isinstance(part, int):
            return loc[:depth]
        parent_model = _model(parent) if parent is not None else None
        if parent_model is None:
            return loc[:depth]  # a mapping entry (adapters.NAME) or a free-form value
        info = next((i for n, i in parent_model.model_fields.items() if part in (n, i.alias)), None)
        if info is None or not info.is_required():
            return loc[:depth]  # unknown key, or a field that has a default
    return None


def _container(data: Any, loc: Loc) -> Any:
    for part in loc:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return None
    return data


def _to_original(loc: Loc, removed: dict[Loc, list[int]]) -> Loc:
    """A pruned-data path as a path into the file."""
    out: list[str | int] = []
    for part in loc:
        if isinstance(part, int):
            for gone in sorted(removed.get(tuple(out), [])):
                if gone <= part:
                    part += 1
        out.append(part)
    return tuple(out)


def _to_pruned(loc: Loc, removed: dict[Loc, list[int]]) -> Loc | None:
    """A path into the file as a path into the pruned data; None if it was removed."""
    out: list[str | int] = []
    original: list[str | int] = []
    for part in loc:
        if isinstance(part, int):
            gone = removed.get(tuple(original), [])
            if part in gone:
                return None
            original.append(part)
            out.append(part - sum(1 for g in gone if g < part))
        else:
            original.append(part)
            out.append(part)
    return tuple(out)


def _prune(work: Any, exc: ValidationError, model: type[BaseModel], tags: set[str],
           removed: dict[Loc, list[int]]) -> bool:  # fmt: skip
    """Remove what each error is about from `work`; False when nothing could go."""
    targets: list[Loc] = []
    for err in exc.errors():
        raw: Loc = tuple(err["loc"])
        cut = next((i for i, p in enumerate(raw) if isinstance(p, str) and p in tags), len(raw))
        target = _removable(model, raw[:cut])
        if target and target not in targets:
            targets.append(target)
    drops: list[tuple[Loc, Any, str | int]] = []
    for target in targets:
        parent = _container(work, target[:-1])
        if isinstance(parent, (dict, list)):
            drops.append((target[:-1], parent, target[-1]))
    lists: dict[int, tuple[Loc, list[Any], set[int]]] = {}
    for where, parent, key in drops:
        if isinstance(parent, dict):
            parent.pop(key, None)
        elif isinstance(key, int) and 0 <= key < len(parent):
            lists.setdefault(id(parent), (where, parent, set()))[2].add(key)
    for where, items, indices in lists.values():
        original = _to_original(where, removed)
        for index in sorted(indices, reverse=True):
            gone = _to_original((*where, index), removed)[-1]
            removed.setdefault(original, []).append(int(gone))
            del items[index]
    return bool(drops)


def pruned_source(source: SourceMap, removed: dict[Loc, list[int]]) -> SourceMap:
    """`source` with paths renumbered for list items removed from the data."""
    if not removed:
        return source

    def remap(table: dict[Loc, Any]) -> dict[Loc, Any]:
        out: dict[Loc, Any] = {}
        for loc, value in table.items():
            new = _to_pruned(loc, removed)
            if new is not None:
                out.setdefault(new, value)
        return out

    return SourceMap(source.file, remap(source.values), remap(source.keys), remap(source.aliases))


def validate_partially(
    model: type[M],
    data: dict[str, Any],
    problems_of: Callable[[ValidationError], list[Problem]],
    tags: set[str],
    source: SourceMap,
) -> tuple[M | None, list[Problem], SourceMap]:
    """The model of `data` with invalid values removed (None when even that fails),
    the problems of the data as written, and the source map of the pruned data."""
    work = copy.deepcopy(data)
    removed: dict[Loc, list[int]] = {}
    problems: list[Problem] = []
    for attempt in range(MAX_ROUNDS):
        try:
            return model.model_validate(work), problems, pruned_source(source, removed)
        except ValidationError as exc:
            if attempt == 0:
                problems = problems_of(exc)  # the file as written: every field problem
            if not _prune(work, exc, model, tags, removed):
                break
    return None, problems, source
