"""The registries a process knows (step kinds, adapters, contract types), and what
lint is told of them.

Apart from swell/runtime.py, which wires the engine: `swell validate` and the
catalog commands need the registries but must not import the run loop to get them
(the start-up they would pay is most of their time). Each registry imports an entry
on its first use only.
"""

from __future__ import annotations

from dataclasses import dataclass

from swell.adapters.registry import AdapterRegistry, default_registry
from swell.contracts.registry import ContractTypes, default_contract_types
from swell.engine.steps.registry import StepKinds, default_step_kinds
from swell.manifest.lint_context import LintContext


@dataclass
class Registries:
    """The step kinds, adapters and contract types this process knows."""

    adapters: AdapterRegistry
    step_kinds: StepKinds
    contract_types: ContractTypes

    def lint_context(self) -> LintContext:
        return LintContext(
            step_kinds=self.step_kinds,
            adapter_types=self.adapters,
            contract_types=self.contract_types,
            adapter_options=self.adapters.options_model,
            permission_warnings=self.adapters.permission_warnings,
        )


def open_registries() -> Registries:
    return Registries(default_registry(), default_step_kinds(), default_contract_types())


__all__ = ["Registries", "open_registries"]
