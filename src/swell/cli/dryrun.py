"""`swell run --dry-run`: print the plan a run would follow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from swell.cli.common import print_json

if TYPE_CHECKING:
    from swell.manifest.loader import LoadedPipeline
    from swell.ops.plan import PlannedAgent
    from swell.ops.preflight import Finding
    from swell.ops.rerun import Reuse
    from swell.runtime import Runtime


def _agent(agent: PlannedAgent) -> str:
    who = f"persona {agent.persona} → " if agent.persona else ""
    kind = f" ({agent.adapter_type})" if agent.adapter_type != agent.adapter else ""
    model = agent.model or "adapter default"
    binary = f", {agent.binary}" if agent.binary else ""
    role = "review: " if agent.role == "review" else ""
    temp = f", temperature {agent.temperature:g}" if agent.temperature is not None else ""
    return f"{role}{who}adapter {agent.adapter}{kind}, model {model}{binary}{temp}"


def _tools(agent: PlannedAgent) -> list[str]:
    lines = [f"tools {', '.join(agent.allowed_tools)}"] if agent.allowed_tools else []
    return lines + ([f"denied {', '.join(agent.denied_tools)}"] if agent.denied_tools else [])


def show_plan(
    rt: Runtime,
    loaded: LoadedPipeline,
    input_text: str,
    adapter: str | None,
    model: str | None,
    findings: list[Finding],
    reuse: Reuse | None,
    *,
    json: bool,
) -> None:
    from swell.ops.plan import make_plan

    plan = make_plan(
        rt.project,
        rt.registries,
        loaded,
        input_text=input_text,
        adapter=adapter,
        model=model,
        problems=findings,
        reuse=reuse,
    )
    if json:
        print_json(plan.as_json())
        return
    print(f"plan for pipeline {plan.pipeline} (dry run: nothing runs, no run is recorded)")
    if plan.description:
        print(f"about     {plan.description.strip().splitlines()[0]}")
    print(f"input     {plan.input!r}" if plan.input else "input     (none)")
    if plan.start_from:
        print(f"from      step {plan.start_from} of run {plan.previous_run}")
    print(f"entry     {', '.join(plan.entry) or '(none)'}")
    limits = plan.limits
    print(
        f"limits    max_step_visits {limits['max_step_visits']}, circuit breaker "
        f"{limits['circuit_breaker']}, concurrency {limits['concurrency']}"
    )
    print("steps")
    width = max((len(s.id) for s in plan.steps), default=4)
    for step in plan.steps:
        after = f"  after {', '.join(step.dependencies)}" if step.dependencies else ""
        reused = "  (reused)" if step.reused else ""
        print(f"  {step.id:<{width}}  {step.kind}{after}{reused}")
        lines = [line for a in step.agents for line in (_agent(a), *_tools(a))]
        lines += [f"mount {m}" for m in step.mounts]
        lines += [f"input {i}" for i in step.inputs]
        if step.detail and not step.agents:
            lines.append(step.detail.splitlines()[0][:100] if step.detail.strip() else "")
        lines += [f"→ {edge}" for edge in step.edges]
        lines += [f"contract {c}" for c in step.contracts]
        lines += [f"artifact {o}" for o in step.outputs]
        for line in filter(None, lines):
            print(f"  {'':<{width}}    {line}")
    if plan.problems:
        print(f"\n{len(plan.problems)} problem(s) would stop this run:")
        for finding in plan.problems:
            print(f"  - {finding}")
    else:
        print("\nchecks    ok (adapters, agent CLIs, credentials, tools, input)")
