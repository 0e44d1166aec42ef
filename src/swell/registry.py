"""One lazy registry for everything swell looks up by name: adapters, step kinds,
contract types.

Every entry arrives as an entry point (`importlib.metadata.EntryPoint`: a name and a
"module:attribute" value), built-in or not: swell's own kinds, types and adapters are
entry points of the groups plugins use, listed in each registry module's `BUILTIN`
rather than in a `.dist-info`. A plugin's pyproject.toml says, e.g.

    [project.entry-points."swell.step_kinds"]
    echo = "swell_echo:KIND"

An entry is imported the first time its name is used, so a run loads only what it
uses. Installed entry points are scanned only when a name is not built in (or the
names are listed); a built-in name wins over a plugin of the same name.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import reduce
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar

from swell.errors import SwellError

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

T = TypeVar("T")


class UnknownName(SwellError):
    """A name no registry entry (built-in or plugin) answers to."""


class Entry(NamedTuple):
    """An entry point as a registry keeps it: what `importlib.metadata.EntryPoint`
    holds and loads, without importing `importlib.metadata` (with `email` and the
    rest, tens of milliseconds of every command's start-up) until a name is not
    built in and the installed ones are scanned."""

    name: str
    value: str  # "module:attribute" (the attribute may be dotted)
    group: str

    def load(self) -> Any:
        """The object the value names, as `EntryPoint.load` finds it."""
        module, _, attrs = self.value.partition("[")[0].partition(":")  # no `[extras]`
        found = importlib.import_module(module.strip())
        return reduce(getattr, filter(None, attrs.strip().split(".")), found)


def builtin_entry_points(group: str, table: Mapping[str, str]) -> list[Entry]:
    """swell's own entries of `group` (name -> "module:attribute") as entry points."""
    return [Entry(name, value, group) for name, value in table.items()]


def installed_entry_points(group: str) -> Iterable[EntryPoint]:
    """The entry points installed packages declare for `group` (plugins)."""
    from importlib.metadata import entry_points

    return entry_points(group=group)


@dataclass
class Registry(Generic[T]):
    """Name -> object, imported on first use; `what` names the entries in messages."""

    what: str  # "adapter", "step type", "contract type"
    group: str  # the entry-point group built-ins and plugins register through
    entries: dict[str, T | Entry] = field(default_factory=dict)
    error: type[SwellError] = UnknownName
    _plugins_loaded: bool = False

    def add_entry_points(self, eps: Iterable[Entry | EntryPoint]) -> None:
        """Register entry points of this registry's group; names already taken stay."""
        for ep in eps:
            if ep.group == self.group:
                self.entries.setdefault(ep.name, Entry(ep.name, ep.value, ep.group))

    def register(self, name: str, entry: T) -> None:
        """Add (or replace) an entry by its object: a test's stand-in, a scripted twin."""
        self.entries[name] = entry

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        self.add_entry_points(installed_entry_points(self.group))

    def __contains__(self, name: object) -> bool:
        if name not in self.entries:
            self._load_plugins()
        return name in self.entries

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(sorted(self.entries))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self.entries)

    def get(self, name: str) -> T:
        """The entry called `name`; an unknown name is an error listing the known ones."""
        entry = self.entries.get(name)
        if entry is not None and not isinstance(entry, Entry):
            return entry  # loaded: asked for at every visit
        if name not in self:
            raise self.error(f"unknown {self.what} '{name}' (known: {', '.join(self)})")
        entry = self.entries[name]
        if not isinstance(entry, Entry):
            return entry
        try:
            loaded: T = entry.load()
        except (ImportError, AttributeError) as exc:
            raise self.error(
                f"{self.what} '{name}' cannot be loaded from {entry.value}: {exc}"
            ) from None
        self.entries[name] = loaded
        return loaded
