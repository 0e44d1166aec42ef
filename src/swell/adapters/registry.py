"""Adapter registry: explicit `register(name, factory)`; built-ins and plugins alike.

Third-party adapters register through the `swell.adapters` entry-point group: the
entry point names a callable that receives the registry and calls `register`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from swell.adapters.base import AdapterSetup, AgentAdapter
from swell.errors import AdapterUnknown

Factory = Callable[[AdapterSetup], AgentAdapter]
OptionsCheck = Callable[[dict[str, object]], list[str]]


@dataclass
class AdapterRegistry:
    factories: dict[str, Factory] = field(default_factory=dict)
    option_checks: dict[str, OptionsCheck] = field(default_factory=dict)

    def register(self, name: str, factory: Factory, check_options: OptionsCheck | None = None) -> None:
        self.factories[name] = factory
        if check_options:
            self.option_checks[name] = check_options

    def names(self) -> set[str]:
        return set(self.factories)

    def create(self, type_name: str, setup: AdapterSetup) -> AgentAdapter:
        try:
            factory = self.factories[type_name]
        except KeyError:
            known = ", ".join(sorted(self.factories))
            raise AdapterUnknown(f"unknown adapter '{type_name}' (known: {known})") from None
        return factory(setup)


def default_registry() -> AdapterRegistry:
    """Built-in adapters plus any installed through entry points."""
    from importlib.metadata import entry_points

    from swell.adapters import scripted

    registry = AdapterRegistry()
    scripted.register(registry)
    for ep in entry_points(group="swell.adapters"):
        ep.load()(registry)
    return registry
