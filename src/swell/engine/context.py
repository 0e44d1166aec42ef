"""The context objects a visit runs with: what the run knows, and what the engine offers."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from swell.events.models import BaseEvent
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step

if TYPE_CHECKING:
    from swell.adapters.registry import AdapterRegistry
    from swell.contracts.registry import ContractTypes
    from swell.engine.graph import Activation
    from swell.engine.state import OpenVisit, RunState
    from swell.engine.steps import StepKinds
    from swell.workspace.workspace import Workspace


@dataclass(frozen=True)
class GateDecision:
    decision: str  # approved | rejected
    choice: str | None = None
    reason: str | None = None
    by: str | None = None


class GateDecisions(Protocol):
    """Where approvals made elsewhere (another terminal, the dashboard) are found."""

    def gate_decision(self, run_id: str, step_id: str, visit: int) -> GateDecision | None: ...


class GatePrompter(Protocol):
    """Asks a person at this terminal; returns None if nobody answered."""

    async def ask(self, run_id: str, step: Step, message: str) -> GateDecision | None: ...


class RunControl(Protocol):
    def cancel_requested(self, run_id: str) -> bool: ...


@dataclass(frozen=True)
class ChildOutcome:
    run_id: str
    status: str
    error: str | None = None


class ChildRuns(Protocol):
    """Runs a sub-pipeline as a child run; `resume_id` continues an existing child."""

    async def run_child(
        self,
        parent: RunPlan,
        step: Step,
        visit: int,
        input_text: str,
        resume_id: str | None,
        on_start: Callable[[str, str], None],
    ) -> ChildOutcome: ...


@dataclass
class RunOptions:
    auto_approve: bool = False
    adapter: str | None = None  # `swell run --adapter`
    model: str | None = None  # `swell run --model`
    gate_poll_seconds: float = 0.5
    control_poll_seconds: float = 0.5


@dataclass
class RunPlan:
    """One run: which pipeline, on what input, where."""

    run_id: str
    project: Project
    pipeline: LoadedPipeline
    input: str
    workspace: Path
    run_dir: Path  # swell's own files for this run (logs), outside the workspace
    parent_run_id: str | None = None
    parent_step_id: str | None = None
    options: RunOptions = field(default_factory=RunOptions)


@dataclass
class Services:
    """What the engine gets from outside; the runtime wires the real ones."""

    step_kinds: StepKinds
    adapters: AdapterRegistry
    contract_types: ContractTypes
    gates: GateDecisions | None = None
    prompter: GatePrompter | None = None
    control: RunControl | None = None
    children: ChildRuns | None = None


@dataclass
class StepResult:
    """What a step kind returns; the runner turns it into events and routing."""

    outcome: str  # success | failure
    error: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    # namespace for `output.context` expressions (exit_code, stdout, stderr, json, ...)
    outputs: dict[str, Any] = field(default_factory=dict)
    stdout: str | None = None  # for `source: stdout` artifacts
    events: list[BaseEvent] = field(default_factory=list)  # committed with the visit
    choice_key: str | None = None
    choice_target: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    error_key_override: str | None = None
    # a contract failure that decides what happens next (see engine/handover.py)
    failure: Any = None
    # how the visit reads in the run's history (`swell thread`)
    round_content: str | None = None
    round_meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class VisitContext:
    """Everything one visit of one step may use."""

    plan: RunPlan
    services: Services
    step: Step
    visit: int
    activation: Activation
    state: RunState
    namespace: dict[str, Any]
    emit: Callable[[Sequence[BaseEvent]], None]  # stamps and commits events now
    workspace: Workspace  # where this visit works
    resumed: OpenVisit | None = None  # set when continuing a visit after resume

    def event(self, ev: BaseEvent) -> BaseEvent:
        ev.step_id = self.step.id
        ev.visit = self.visit
        return ev

    def swell_env(self) -> dict[str, str]:
        """Variables every process started for this visit can read."""
        env = {
            "SWELL_RUN_ID": self.plan.run_id,
            "SWELL_STEP_ID": self.step.id,
            "SWELL_VISIT": str(self.visit),
            "SWELL_WORKSPACE": str(self.workspace.path),
            "SWELL_PROJECT_ROOT": str(self.plan.project.root),
        }
        rework = (
            self.state.reworks.get(self.step.id) if self.activation.reason == "rework" else None
        )
        if rework is not None and rework.feedback_path:
            env["SWELL_REVIEW_FEEDBACK"] = rework.feedback_path
        return env

    def command_env(self) -> dict[str, str]:
        """The environment of a command run for this visit: swell's own, plus the visit's."""
        return {**_process_env(), **self.swell_env()}

    def timeout_seconds(self) -> float:
        """The step's timeout, else the manifest's default."""
        if self.step.timeout_minutes:
            return self.step.timeout_minutes * 60
        return self.plan.project.manifest.runtime.step_timeout_seconds


@functools.cache
def _process_env() -> dict[str, str]:
    # copying os.environ decodes every variable; do it once per process
    return dict(os.environ)
