"""Adapter registry: explicit `register(name, factory)`; built-ins and plugins alike.

Third-party adapters register through the `swell.adapters` entry-point group: the
entry point names a callable that receives the registry and calls `register`.
Entry points are only scanned when a name is not built in, so runs that use
built-in adapters do not pay for the scan.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import import_module
from typing import TYPE_CHECKING

from pydantic import BaseModel

from swell.errors import AdapterUnknown

if TYPE_CHECKING:
    from swell.adapters.base import AdapterSetup, AgentAdapter

Factory = Callable[["AdapterSetup"], "AgentAdapter"]

# name -> "module:attribute" of a factory, imported when first used
BUILTIN = {
    "scripted": "swell.adapters.scripted:ScriptedAdapter",
    "codex": "swell.adapters.codex:CodexAdapter",
    "claude": "swell.adapters.claude:ClaudeAdapter",
    "openai": "swell.adapters.openai_api:OpenAIAdapter",
    "local": "swell.adapters.local:LocalAdapter",
    "gemini": "swell.adapters.gemini:GeminiAdapter",
    "opencode": "swell.adapters.opencode:OpencodeAdapter",
}


@dataclass
class AdapterRegistry:
    factories: dict[str, Factory | str] = field(default_factory=dict)
    _plugins_loaded: bool = False

    def register(self, name: str, factory: Factory | str) -> None:
        """Add an adapter: a factory, or "module:attribute" naming one (imported on use)."""
        self.factories[name] = factory

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        from importlib.metadata import entry_points

        for ep in entry_points(group="swell.adapters"):
            ep.load()(self)

    def __contains__(self, name: object) -> bool:
        if name not in self.factories:
            self._load_plugins()
        return name in self.factories

    def __iter__(self) -> Iterator[str]:
        self._load_plugins()
        return iter(sorted(self.factories))

    def __len__(self) -> int:
        self._load_plugins()
        return len(self.factories)

    def names(self) -> AdapterRegistry:
        """A container of known names (`in` and iteration), scanning plugins lazily."""
        return self

    def factory(self, type_name: str) -> Factory:
        if type_name not in self:
            raise AdapterUnknown(f"unknown adapter '{type_name}' (known: {', '.join(self)})")
        factory = self.factories[type_name]
        if isinstance(factory, str):
            module, attr = factory.split(":")
            factory = getattr(import_module(module), attr)
            self.factories[type_name] = factory
        return factory

    def options_model(self, type_name: str) -> type[BaseModel] | None:
        """The pydantic model of an adapter's `options:` settings, if it has any."""
        model = getattr(self.factory(type_name), "Options", None)
        return model if isinstance(model, type) and issubclass(model, BaseModel) else None

    def enforces_permissions(self, type_name: str) -> bool:
        """Whether the adapter enforces allowed/denied tools (from its `capabilities`)."""
        caps = getattr(self.factory(type_name), "capabilities", None)
        return bool(getattr(caps, "enforces_permissions", False))

    def create(self, type_name: str, setup: AdapterSetup) -> AgentAdapter:
        return self.factory(type_name)(setup)


def default_registry() -> AdapterRegistry:
    """Built-in adapters plus any installed through entry points."""
    registry = AdapterRegistry()
    for name, target in BUILTIN.items():
        registry.register(name, target)
    return registry
