"""`swell run --dry-run`: the plan a run would follow, resolved as the engine resolves
it (personas, adapters, models, binaries), without creating a run or running anything."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from swell.manifest.graph_checks import entry_steps
from swell.manifest.loader import LoadedPipeline, Project
from swell.manifest.models import Step
from swell.ops import toolchain
from swell.ops.preflight import AgentUse, Finding, agent_uses
from swell.workspace.workspace import mount_target

if TYPE_CHECKING:
    from swell.ops.rerun import Reuse
    from swell.registries import Registries


@dataclass
class PlannedAgent:
    role: str  # step | review
    persona: str | None
    adapter: str
    adapter_type: str
    model: str | None  # None: the adapter's own default
    binary: str | None  # the CLI it runs, resolved ("not found: NAME" when missing)
    # the persona's settings the agent starts with (as Wave's dry run shows them)
    temperature: float | None = None
    allowed_tools: list[str] = field(default_factory=list)
    denied_tools: list[str] = field(default_factory=list)


@dataclass
class PlannedStep:
    id: str
    kind: str
    dependencies: list[str]
    detail: str | None
    agents: list[PlannedAgent]
    edges: list[str]  # "target if condition"
    contracts: list[str]
    outputs: list[str]  # "name (source)"
    reused: bool = False
    inputs: list[str] = field(default_factory=list)  # "STEP:ARTIFACT as NAME"
    mounts: list[str] = field(default_factory=list)  # "SOURCE → TARGET (MODE)"


@dataclass
class Plan:
    pipeline: str
    input: str
    entry: list[str]
    steps: list[PlannedStep]
    limits: dict[str, int]
    start_from: str | None = None
    previous_run: str | None = None
    problems: list[Finding] = field(default_factory=list)
    description: str | None = None

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = [{"message": f.message, "fix": f.fix} for f in self.problems]
        return data


def _agent(project: Project, registries: Registries, use: AgentUse) -> PlannedAgent:
    binary = toolchain.binary_for(project.root, project.manifest, use.adapter, registries.adapters)
    shown = None
    if binary is not None:
        shown = binary.path or f"not found: {binary.wanted}"
    persona = project.manifest.personas.get(use.persona or "")
    if persona is None:
        return PlannedAgent(use.role, use.persona, use.adapter, use.adapter_type, use.model, shown)
    return PlannedAgent(
        use.role,
        use.persona,
        use.adapter,
        use.adapter_type,
        use.model,
        shown,
        persona.temperature,
        list(persona.permissions.allowed_tools),
        list(persona.permissions.deny),
    )


def _inputs(step: Step) -> list[str]:
    return [
        f"{ref.pipeline or ref.step or '?'}:{ref.artifact} as {ref.as_ or ref.artifact}"
        for ref in step.memory.inject_artifacts
    ]


def _mounts(step: Step) -> list[str]:
    mounts = step.workspace.mount if step.workspace is not None else []
    return [f"{m.source} → {mount_target(m)} ({m.mode or 'readwrite'})" for m in mounts]


def make_plan(
    project: Project,
    registries: Registries,
    loaded: LoadedPipeline,
    *,
    input_text: str,
    adapter: str | None,
    model: str | None,
    problems: list[Finding],
    reuse: Reuse | None = None,
) -> Plan:
    """The run's plan: its steps in file order with what each would run."""
    pipeline = loaded.pipeline
    kinds = registries.step_kinds
    known_adapter = adapter is None or not any("--adapter" in p.message for p in problems)
    uses = agent_uses(project, loaded, registries, adapter, model) if known_adapter else []
    steps = []
    for step in pipeline.steps:
        kind = kinds.of(step)
        mine = [u for u in uses if u.step == step.id and u.pipeline == loaded.name]
        steps.append(
            PlannedStep(
                id=step.id,
                kind=step.kind,
                dependencies=list(step.dependencies),
                detail=kind.detail(step),
                agents=[_agent(project, registries, u) for u in mine],
                edges=[f"{e.target} if {e.condition}" if e.condition else e.target
                       for e in step.edges],
                contracts=[c.type for c in step.handover.all_contracts] if step.handover else [],
                outputs=[f"{a.name} ({a.source}: {a.path or a.name})"
                         for a in step.output_artifacts],
                reused=reuse is not None and step.id in reuse.reused,
                inputs=_inputs(step),
                mounts=_mounts(step),
            )
        )  # fmt: skip
    runtime = project.manifest.runtime
    return Plan(
        pipeline=loaded.name,
        input=input_text,
        entry=[reuse.start] if reuse else entry_steps(pipeline.steps, kinds.of),
        steps=steps,
        limits={
            "max_step_visits": pipeline.max_step_visits,
            "circuit_breaker": runtime.circuit_breaker.limit,
            "concurrency": runtime.concurrency,
        },
        start_from=reuse.start if reuse else None,
        previous_run=reuse.previous.id if reuse else None,
        problems=problems,
        description=pipeline.metadata.description,
    )


__all__ = ["Plan", "PlannedAgent", "PlannedStep", "make_plan"]
