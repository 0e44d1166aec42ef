"""What lint is handed: the registries' knowledge, and where a rule is checking.

Step kinds and contract types bring their own lint rules; lint reaches them through
the protocols here, so this package imports no engine or contract code.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from swell.errors import Problem
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.manifest.yamldoc import Loc

T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True)
class LintScope:
    """Where a rule is checking: a step of a pipeline, or one of its contracts (`loc`)."""

    project: Project
    loaded: LoadedPipeline
    step: Step
    loc: Loc  # of the step, or of the contract being checked
    ids: Mapping[str, int]  # step id -> index in the pipeline
    lint: LintContext

    def problem(
        self, path: Loc, message: str, *, severity: str = "error", key: bool = False
    ) -> Problem:
        """A problem at `path` below `loc` (its file:line:col from the YAML)."""
        return self.loaded.source.problem((*self.loc, *path), message, severity=severity, key=key)


def contract_loc(step_loc: Loc, step: Step, index: int) -> Loc:
    """Where the index-th of `handover.all_contracts` is written: `contract` or `contracts[i]`."""
    handover = step.handover
    single = handover is not None and handover.contract is not None and not handover.contracts
    if single and index == 0:
        return (*step_loc, "handover", "contract")
    return (*step_loc, "handover", "contracts", index - (1 if single else 0))


class StepRules(Protocol):
    """What lint and the graph checks ask of a step kind (engine/steps/base.py)."""

    @property
    def Fields(self) -> type[BaseModel] | None:
        """The model of the step fields the kind adds to a step's own; None: none."""
        ...

    @property
    def inherits_outcome(self) -> bool:
        """Routes on the outcome of the visit that led to it (a `conditional` router)."""
        ...

    @property
    def retries(self) -> str | None:
        """What `retry:` does for the kind ("visit", "own"); None: it cannot be retried."""
        ...

    def choice_targets(self, step: Step) -> list[str | None]:
        """Where a visit may route by choice (a gate's choices); None: on as usual."""
        ...

    def script_fields(self, step: Step) -> list[Loc]:
        """The step's fields that are shell scripts (their values must stay data)."""
        ...

    def problems(self, scope: LintScope) -> list[Problem]: ...


class ContractRules(Protocol):
    """What lint asks of a contract type (contracts/base.py)."""

    @property
    def Settings(self) -> type[BaseModel]: ...  # the type's settings model

    @property
    def mechanical(self) -> bool: ...

    @property
    def script_fields(self) -> tuple[str, ...]:
        """Settings that are shell scripts (their values must stay data)."""
        ...

    def problems(self, settings: Any, scope: LintScope) -> list[Problem]: ...

    def reviewer(self, settings: Any) -> str | None: ...


class Lookup(Protocol[T_co]):
    """A registry as lint sees it: known names, and the entry of one."""

    def __contains__(self, name: object) -> bool: ...

    def __iter__(self) -> Iterator[str]: ...

    def get(self, name: str) -> T_co: ...


PermissionWarnings = Callable[[str, str, Mapping[str, Any], list[str], list[str]], list[str]]


@dataclass
class LintContext:
    """What the registries know, handed in so this package imports no engine code."""

    step_kinds: Lookup[StepRules]
    adapter_types: Collection[str]
    contract_types: Lookup[ContractRules]
    # adapter type -> the pydantic model of its `options:` (None: takes no options)
    adapter_options: Callable[[str], type[BaseModel] | None] | None = None
    # (adapter type, adapter name, its options, allowed, denied) -> one message for each
    # permission entry the adapter cannot enforce
    permission_warnings: PermissionWarnings | None = None


__all__ = ["ContractRules", "LintContext", "LintScope", "Lookup", "StepRules", "contract_loc"]
