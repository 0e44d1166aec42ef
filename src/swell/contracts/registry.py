"""Contract types by `type`; `swell validate` rejects a type the registry does not know.

Built-in types and plugins alike are entry points of the `swell.contract_types` group,
each imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swell.registry import Registry, builtin_entry_points

if TYPE_CHECKING:  # a run without contracts never imports them
    # both are named in ContractTypes' base, a string
    from typing import Any  # noqa: F401

    from swell.contracts.base import ContractType  # noqa: F401

GROUP = "swell.contract_types"
# swell's own types: entry points of the group plugins use (swell/registry.py)
BUILTIN = {
    "test_suite": "swell.contracts.test_suite:TYPE",
    "json_schema": "swell.contracts.json_schema:TYPE",
    "non_empty_file": "swell.contracts.non_empty_file:TYPE",
    "agent_review": "swell.contracts.agent_review:TYPE",
    "llm_judge": "swell.contracts.llm_judge:TYPE",
    "test_diff": "swell.contracts.test_diff:TYPE",
    "test_count_baseline": "swell.contracts.test_count_baseline:TYPE",
    "source_diff": "swell.contracts.source_diff:TYPE",
    "format": "swell.contracts.format:TYPE",
    "markdown_spec": "swell.contracts.markdown_spec:TYPE",
    "typescript_interface": "swell.contracts.typescript_interface:TYPE",
    "event_contains": "swell.contracts.event_contains:TYPE",
}


class ContractTypes(Registry["ContractType[Any]"]):
    def __init__(self) -> None:
        super().__init__("contract type", GROUP)


def default_contract_types() -> ContractTypes:
    """Built-in types plus any installed through entry points."""
    types = ContractTypes()
    types.add_entry_points(builtin_entry_points(GROUP, BUILTIN))
    return types
