"""Contract types by name; each is a module with `async def check(ctx) -> ContractResult`.

Modules are imported on first use; `swell validate` rejects a `type` not listed here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import import_module

from swell.contracts.base import ContractCheck

BUILTIN = {
    "test_suite": "swell.contracts.test_suite",
    "json_schema": "swell.contracts.json_schema",
    "non_empty_file": "swell.contracts.non_empty_file",
    "agent_review": "swell.contracts.agent_review",
}
MECHANICAL = ("test_suite", "json_schema", "non_empty_file")


@dataclass
class ContractTypes:
    checks: dict[str, ContractCheck | str] = field(default_factory=dict)

    def register(self, name: str, check: ContractCheck | str) -> None:
        self.checks[name] = check

    def names(self) -> set[str]:
        return set(self.checks)

    def get(self, name: str) -> ContractCheck:
        check = self.checks[name]
        if isinstance(check, str):
            check = import_module(check).check
            self.checks[name] = check
        return check


def default_contract_types() -> ContractTypes:
    types = ContractTypes()
    for name, module in BUILTIN.items():
        types.register(name, module)
    return types
