"""Adapters by name: built-ins and plugins (entry-point group `swell.adapters`) alike.

An entry is a factory taking `AdapterSetup` (usually the adapter class); its `Options`
pydantic model, its `capabilities` and its `unenforced(allowed, denied, options)` (the
permission entries its CLI cannot hold to, if it has such a function) are read without
creating an adapter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from swell.adapters.permissions import Unenforced
from swell.errors import AdapterUnknown
from swell.registry import Registry, builtin_entry_points

if TYPE_CHECKING:
    from swell.adapters.base import AdapterSetup, AgentAdapter

Factory = Callable[["AdapterSetup"], "AgentAdapter"]

GROUP = "swell.adapters"
# swell's own adapters: entry points of the group plugins use (swell/registry.py), the
# "module:attribute" of a factory, imported when first used
BUILTIN = {
    "scripted": "swell.adapters.scripted:ScriptedAdapter",
    "codex": "swell.adapters.codex:CodexAdapter",
    "claude": "swell.adapters.claude:ClaudeAdapter",
    "openai": "swell.adapters.openai_api:OpenAIAdapter",
    "local": "swell.adapters.local:LocalAdapter",
    "gemini": "swell.adapters.gemini:GeminiAdapter",
    "opencode": "swell.adapters.opencode:OpencodeAdapter",
    "browser": "swell.adapters.browser:BrowserAdapter",
}


class AdapterRegistry(Registry[Factory]):
    def __init__(self) -> None:
        super().__init__("adapter", GROUP, error=AdapterUnknown)

    def options_model(self, type_name: str) -> type[BaseModel] | None:
        """The pydantic model of an adapter's `options:` settings, if it has any."""
        model = getattr(self.get(type_name), "Options", None)
        return model if isinstance(model, type) and issubclass(model, BaseModel) else None

    def enforces_permissions(self, type_name: str) -> bool:
        """Whether the adapter enforces allowed/denied tools (from its `capabilities`)."""
        caps = getattr(self.get(type_name), "capabilities", None)
        return bool(getattr(caps, "enforces_permissions", False))

    def permission_warnings(
        self,
        type_name: str,
        name: str,
        options: Mapping[str, Any],
        allowed: list[str],
        denied: list[str],
    ) -> list[str]:
        """What adapter `name` (of type `type_name`) cannot enforce of these permissions,
        one message each; an adapter without `unenforced` enforces all of them, unless
        its capabilities say it enforces none (then every denial is named)."""
        factory = self.get(type_name)
        check = getattr(factory, "unenforced", None)
        if callable(check):
            gaps: list[Unenforced] = check(allowed, denied, options)
        elif self.enforces_permissions(type_name):
            gaps = []
        else:
            why = "it refuses no tool"
            gaps = [Unenforced(entry, True, why) for entry in denied]
        return [gap.message(name) for gap in gaps]

    def create(self, type_name: str, setup: AdapterSetup) -> AgentAdapter:
        return self.get(type_name)(setup)


def default_registry() -> AdapterRegistry:
    """Built-in adapters plus any installed through entry points."""
    registry = AdapterRegistry()
    registry.add_entry_points(builtin_entry_points(GROUP, BUILTIN))
    return registry
