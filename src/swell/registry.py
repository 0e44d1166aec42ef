"""One lazy registry for everything swell looks up by name: adapters, step kinds,
contract types.

An entry is an object, or "module:attribute" naming one; the module is imported the
first time the name is used, so a run loads only what it uses. Plugins register
through an entry-point group: the entry point's name is the registered name and its
value the object, e.g. in a plugin's pyproject.toml

    [project.entry-points."swell.step_kinds"]
    echo = "swell_echo:KIND"

Entry points are scanned only when a name is not built in.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import import_module
from typing import Generic, TypeVar

from swell.errors import SwellError

T = TypeVar("T")


class UnknownName(SwellError):
    """A name no registry entry (built-in or plugin) answers to."""


@dataclass
class Registry(Generic[T]):
    """Name -> object, imported on first use; `what` names the entries in messages."""

    what: str  # "adapter", "step type", "contract type"
    group: str  # the entry-point group plugins use
    entries: dict[str, T | str] = field(default_factory=dict)
    error: type[SwellError] = UnknownName
    _plugins_loaded: bool = False

    def register(self, name: str, entry: T | str) -> None:
        """Add an entry: the object, or "module:attribute" naming it (imported on use)."""
        self.entries[name] = entry

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            self.entries.setdefault(ep.name, ep.value)

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
        if name not in self:
            raise self.error(f"unknown {self.what} '{name}' (known: {', '.join(self)})")
        entry = self.entries[name]
        if not isinstance(entry, str):
            return entry
        module, _, attr = entry.partition(":")
        try:
            loaded: T = getattr(import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise self.error(f"{self.what} '{name}' cannot be loaded from {entry}: {exc}") from None
        self.entries[name] = loaded
        return loaded
