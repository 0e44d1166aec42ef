"""`pipeline: NAME`: run a sub-pipeline as a child run; its outcome is the step's. The
step's `config` (env, inject, extract, timeout, max_cycles, stop_condition) is applied
as docs/composition.md says (engine/steps/compose/children.py)."""

from __future__ import annotations

from typing import Any

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose.children import (
    ChildCall,
    NotAPipelineName,
    after_child,
    child_options,
    failure_text,
    rendered_pipeline,
    run_child,
)
from swell.engine.steps.compose.step_out_refs import loaded_namespace, render_field
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import PipelineNotFound, Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.loader import resolve_pipeline
from swell.manifest.models import Step


class SubPipeline(StepKind):
    name = "pipeline"

    def detail(self, step: Step) -> str | None:
        return step.pipeline

    def problems(self, scope: LintScope) -> list[Problem]:
        step = scope.step
        if not step.pipeline:
            return [scope.problem((), f"pipeline step '{step.id}' needs `pipeline: NAME`")]
        if "{{" in step.pipeline:
            return []  # rendered at run time
        try:
            target = resolve_pipeline(scope.project.root, step.pipeline)
        except PipelineNotFound as exc:
            return [scope.problem(("pipeline",), str(exc))]
        if target.resolve() == scope.loaded.path.resolve():
            return [scope.problem(("pipeline",), "a pipeline cannot run itself as a sub-pipeline")]
        return []

    async def run(self, ctx: VisitContext) -> StepResult:
        return await run_pipeline(ctx, ctx.step.pipeline or "")


def child_input(ctx: VisitContext, ns: dict[str, Any]) -> str:
    """The step's `input:` rendered (step outputs included), else the parent's input."""
    step = ctx.step
    if not step.input:
        return ctx.plan.input
    return render_field(step.input, ns) or ctx.plan.input


async def run_pipeline(ctx: VisitContext, name: str) -> StepResult:
    """Run pipeline `name` as this visit's child (continuing it after a resume), and
    hand its context and artifacts back to the step (also used by `branch`)."""
    ns = await loaded_namespace(ctx, name, ctx.step.input or "")
    if "{{" in name:
        try:
            name = rendered_pipeline(name, ns)
        except NotAPipelineName as exc:
            return StepResult(outcome="failure", error=str(exc))
    options, problems = child_options(ctx)
    if problems:
        return StepResult(outcome="failure", error="; ".join(problems), retryable=False)
    resume = ctx.resumed.child_run_id if ctx.resumed else None
    call = ChildCall(pipeline=name, input=child_input(ctx, ns), resume_id=resume)
    outcome = await run_child(ctx, call, options)
    if outcome.status == "waiting":  # stopped at a gate: this visit waits with it
        return StepResult(outcome="failure", waiting=True)
    ok = outcome.status == "succeeded"
    events, problems = after_child(ctx, outcome, name) if ok else ([], [])
    error = None if ok else failure_text(outcome)
    if problems:
        ok, error = False, "; ".join(problems)
    return StepResult(
        outcome="success" if ok else "failure",
        error=error,
        outputs={"outcome": "success" if ok else "failure", "run_id": outcome.run_id, "stdout": ""},
        events=events,
    )


KIND = SubPipeline()
