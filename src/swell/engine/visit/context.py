"""The context objects a visit runs with: what the run knows, and what the engine offers."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Protocol

from pydantic import PlainValidator

from swell.engine.agent.persona_names import (
    persona_variables,
    rendered_personas,
    templated,
    with_personas,
)
from swell.engine.loop import policies, retry
from swell.engine.loop.policies import ContractFailure
from swell.events.models import (
    BaseEvent,
    GateVerdict,
    Outcome,
    RunStatus,
    parse_event,
)
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.streaming import OutputSink

if TYPE_CHECKING:
    from swell.adapters.registry import AdapterRegistry
    from swell.contracts.registry import ContractTypes
    from swell.engine.loop.graph import Activation
    from swell.engine.loop.state import OpenVisit, RunState
    from swell.engine.steps.registry import StepKinds
    from swell.engine.visit.pipeline_outputs import OutputsReader
    from swell.events.redact import Redactor
    from swell.workspace.workspace import Workspace


@dataclass(frozen=True)
class GateDecision:
    decision: GateVerdict
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
class ChildRequest:
    """A sub-pipeline to run as a child run of `parent`, for one visit of `step`."""

    parent: RunPlan
    step: Step
    visit: int
    input: str
    resume_id: str | None  # continue this existing child instead of starting one
    on_start: Callable[[str, str], None]  # (child run id, pipeline) once it is recorded
    pipeline: str | None = None  # the pipeline to run (rendered), else `step.pipeline`
    options: RunOptions | None = None  # the child's own (env, handed artifacts), else the parent's
    own_workspace: bool = False  # a workspace of its own (iterate items), else the parent's
    item: int | None = None  # an iterate/matrix item's index (an engine keys its child by it)
    stop_at_gates: bool = False  # the parent visit's `Services.stop_at_gates`


@dataclass(frozen=True)
class ChildOutcome:
    run_id: str
    status: RunStatus
    error: str | None = None
    # what the child left: its artifacts (step -> name -> path) and context values
    artifacts: dict[str, dict[str, str]] = field(default_factory=dict)
    context: dict[str, str] = field(default_factory=dict)


class ChildRuns(Protocol):
    """Runs sub-pipelines as child runs."""

    async def run_child(self, request: ChildRequest) -> ChildOutcome: ...


@dataclass
class RunOptions:
    auto_approve: bool = False
    adapter: str | None = None  # `swell run --adapter`
    model: str | None = None  # `swell run --model`
    gate_poll_seconds: float = 0.5
    control_poll_seconds: float = 0.5
    # a sub-pipeline's, from its parent step's `config` (docs/composition.md)
    env: dict[str, str] = field(default_factory=dict)  # `{{ env.K }}`
    artifacts: dict[str, str] = field(default_factory=dict)  # `{{ artifacts.NAME }}`: paths
    max_cycles: int | None = None  # `loop.max_iterations` where a loop sets none
    no_sandbox: bool = False  # `swell run --no-sandbox`: runtime.sandbox is not applied
    # (source, item, pipeline): the work item this run is for, recorded with the run so
    # the item gets one run only (store/dispatch.py; `swell watch`, schedules, webhooks)
    dispatch_key: tuple[str, str, str] | None = None


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

    @functools.cached_property
    def forge(self) -> dict[str, str]:
        """`{{ forge.* }}`: detected (git runs) when a template first asks, then kept, so
        a run's prompts never change forge midway."""
        from swell.engine.visit.forge import detect

        return detect(self.project.root, self.project.manifest.metadata.forge).variables()

    @functools.cached_property
    def branch(self) -> dict[str, str]:
        """`{{ branch_name }}` and `{{ feature_num }}` of the project, at the run's start."""
        from swell.engine.visit.forge import git_variables

        return git_variables(self.project.root)

    def adapter_of(self, step: Step) -> str | None:
        """The adapter `step`'s visits run on: `--adapter` > the step's > its persona's."""
        personas = self.project.manifest.personas
        persona = personas.get(step.persona) if step.persona else None
        return self.options.adapter or step.adapter or (persona.adapter if persona else None)

    def __post_init__(self) -> None:
        # once here, every reader of `step.persona` sees the persona the visit runs as
        pipeline = self.pipeline.pipeline
        if any(templated(s.persona) for s in pipeline.steps):
            variables = persona_variables(
                self.project,
                forge=self.forge,
                branch=self.branch,
                run_id=self.run_id,
                pipeline_name=self.pipeline.name,
                env=self.options.env,
            )
            personas = rendered_personas(pipeline, variables)
            self.pipeline = dataclasses.replace(
                self.pipeline, pipeline=with_personas(pipeline, personas)
            )


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
    # where running visits' output is stored as it arrives (engine/visit/output_log.py); None:
    # only at the end of each visit, as `step.finished` and the log artifact
    output: OutputSink | None = None
    # masks secrets in a visit's output (engine/visit/output_log.py) and in text swell writes
    # outside the event log (a command's log file); events are masked by the bus
    redactor: Redactor | None = None
    # the project's stored runs, for pipeline outputs (engine/visit/pipeline_outputs.py): a
    # sub-pipeline's outputs, `inject_artifacts[].pipeline`; None: not available
    runs: OutputsReader | None = None
    # where the agents' native sessions of this visit are kept (an engine worker's
    # identity, recorded with each agent round): a thread resumes a session only from
    # a round recorded at the same place, else replays the transcript. None: in-process
    session_host: str | None = None
    # no one is asked here and nothing should wait: an approval gate with no decision
    # yet stops the run, `waiting` (`swell run` without a terminal, docs/cli.md)
    stop_at_gates: bool = False


_VISIT_FIELDS = ("step_id", "visit")


def _events(value: Any) -> list[BaseEvent]:
    return [e if isinstance(e, BaseEvent) else parse_event(e) for e in value]


# a visit's events as pydantic reads them back (the Temporal wire): each as the event
# its `type` names, not as the envelope
Events = Annotated[list[BaseEvent], PlainValidator(_events)]


@dataclass
class StepResult:
    """What a step kind returns; the runner turns it into events and routing. It crosses
    the Temporal wire as it is (pydantic's data converter: executors/temporal)."""

    outcome: Outcome
    error: str | None = None
    exit_code: int | None = None
    output_tail: str | None = None
    # namespace for `output.context` expressions (exit_code, stdout, stderr, json, ...)
    outputs: dict[str, Any] = field(default_factory=dict)
    stdout: str | None = None  # for `source: stdout` artifacts
    events: Events = field(default_factory=list)  # committed with the visit
    choice_key: str | None = None
    choice_target: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    adapter: str | None = None  # an agent visit's adapter and model, as resolved
    # what the step's declared output paths are relative to: a command step's script
    # directory (the project's mount, as Wave runs it); None: the workspace
    outputs_dir: Path | None = None
    model: str | None = None
    # a contract failure that decides what happens next (see engine/visit/handover.py)
    failure: ContractFailure | None = None
    # False: trying again cannot help (a script that cannot be rendered or found, a
    # missing input); `retry:` does not run such a failed visit again
    retryable: bool = True
    # the visit waits for a decision no one here can give (a gate, with no terminal to
    # ask and `--wait` not given): it stays open, and once nothing else can run the run
    # stops `waiting` for `swell approve` and `swell resume` (outcome and error unused)
    waiting: bool = False
    # how the visit reads in the run's history (`swell thread`)
    round_content: str | None = None
    round_meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class VisitContext:
    """Everything one visit of one step may use. Immutable: work inside the visit (a
    loop's iteration or sub-step) runs with a `derive`d context."""

    plan: RunPlan
    services: Services
    step: Step
    visit: int
    activation: Activation
    state: RunState
    namespace: dict[str, Any]
    sink: Callable[[Sequence[BaseEvent]], None]  # stamps and commits events now
    workspace: Workspace  # where this visit works
    resumed: OpenVisit | None = None  # set when continuing a visit after resume
    # what `emit` sent so far with this context, oldest first (the event_contains contract)
    emitted: list[BaseEvent] = field(default_factory=list)

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Commit `events` now, and remember them as this visit's."""
        self.sink(events)
        self.emitted.extend(events)

    def derive(
        self,
        *,
        step: Step | None = None,
        namespace: dict[str, Any] | None = None,
        services: Services | None = None,
        recast: Callable[[Sequence[BaseEvent]], Sequence[BaseEvent]] | None = None,
    ) -> VisitContext:
        """A context for work inside this visit. What it emits goes through this
        context's `emit`, as `recast` makes it (a sub-step's events as the loop's), so
        each event is in this visit's `emitted` once; the derived context has its own
        `emitted`. Nested work starts afresh after a resume: it continues no open visit."""
        emit = self.emit
        sink = emit if recast is None else lambda events: emit(recast(events))
        return dataclasses.replace(
            self,
            step=step or self.step,
            namespace=self.namespace if namespace is None else namespace,
            services=services or self.services,
            sink=sink,
            resumed=None,
            emitted=[],
        )

    def event(self, ev: BaseEvent) -> BaseEvent:
        """A copy of `ev` as this visit's (the caller's event is left as it was)."""
        # `model_copy(update=...)` without its checks, for a few µs of every visit: the
        # values are swell's own (as `events.codec.stamp` sets the envelope)
        copied = ev.__copy__()
        copied.__dict__.update(step_id=self.step.id, visit=self.visit)
        copied.__pydantic_fields_set__.update(_VISIT_FIELDS)
        return copied

    def swell_env(self) -> dict[str, str]:
        """Variables every process started for this visit can read."""
        env = {
            "SWELL_RUN_ID": self.plan.run_id,
            "SWELL_STEP_ID": self.step.id,
            "SWELL_VISIT": str(self.visit),
            "SWELL_ATTEMPT": str(retry.attempt_of(self.state, self.step.id, self.activation)),
            "SWELL_WORKSPACE": str(self.workspace.path),
            "SWELL_PROJECT_ROOT": str(self.plan.project.root),
        }
        rework = policies.rework_of(self.state, self.step.id, self.activation)
        if rework is not None and rework.feedback_path:
            env["SWELL_REVIEW_FEEDBACK"] = rework.feedback_path
        return env

    def command_env(self) -> dict[str, str]:
        """The environment of a command run for this visit: swell's own, plus the visit's."""
        env = _run_env(self.plan.run_id, str(self.workspace.path), str(self.plan.project.root))
        return {**env, **self.swell_env()}

    def retry_delay(self, attempt: int) -> float:
        """Seconds to wait before attempt `attempt` of this step (`retry:`; Wave's
        default cap is runtime.timeouts.retry_max_delay_seconds)."""
        cap = retry.retry_max_delay(
            self.plan.project.manifest.runtime.timeouts.retry_max_delay_seconds
        )
        return retry.delay_before(self.step.retry, attempt, cap)

    def timeout_seconds(self) -> float:
        """The step's timeout, else the manifest's default."""
        if self.step.timeout_minutes:
            return self.step.timeout_minutes * 60
        return self.plan.project.manifest.runtime.step_timeout_seconds


@functools.lru_cache(maxsize=16)
def _run_env(run_id: str, workspace: str, project_root: str) -> dict[str, str]:
    """swell's environment with the run's variables, built once per run and workspace
    (copying os.environ decodes every variable); callers copy it, never change it."""
    return {
        **os.environ,
        "SWELL_RUN_ID": run_id,
        "SWELL_WORKSPACE": workspace,
        "SWELL_PROJECT_ROOT": project_root,
    }
