"""`pipeline: NAME`: run a sub-pipeline as a child run; its outcome is the step's."""

from __future__ import annotations

from swell.engine.context import ChildRequest, StepResult, VisitContext
from swell.engine.steps.base import StepKind
from swell.errors import PipelineNotFound, Problem
from swell.events.models import ChildRunStarted
from swell.manifest.lint_context import LintScope
from swell.manifest.loader import resolve_pipeline
from swell.manifest.models import Step
from swell.manifest.templates import render_text


class SubPipeline(StepKind):
    name = "pipeline"

    def detail(self, step: Step) -> str | None:
        return step.pipeline

    def problems(self, scope: LintScope) -> list[Problem]:
        step = scope.step
        if not step.pipeline:
            return [scope.problem((), f"pipeline step '{step.id}' needs `pipeline: NAME`")]
        try:
            target = resolve_pipeline(scope.project.root, step.pipeline)
        except PipelineNotFound as exc:
            return [scope.problem(("pipeline",), str(exc))]
        if target.resolve() == scope.loaded.path.resolve():
            return [scope.problem(("pipeline",), "a pipeline cannot run itself as a sub-pipeline")]
        return []

    async def run(self, ctx: VisitContext) -> StepResult:
        children = ctx.services.children
        if children is None:
            return StepResult(
                outcome="failure", error="sub-pipelines are not available in this runtime"
            )
        step = ctx.step
        child_input = render_text(step.input, ctx.namespace).text if step.input else ctx.plan.input

        def started(child_id: str, pipeline: str) -> None:
            ctx.emit([ctx.event(ChildRunStarted(child_run_id=child_id, pipeline=pipeline))])

        outcome = await children.run_child(
            ChildRequest(
                parent=ctx.plan,
                step=step,
                visit=ctx.visit,
                input=child_input,
                resume_id=ctx.resumed.child_run_id if ctx.resumed else None,
                on_start=started,
            )
        )
        ok = outcome.status == "succeeded"
        error = (
            None
            if ok
            else f"sub-pipeline run {outcome.run_id} {outcome.status}: {outcome.error or ''}".rstrip(
                ": "
            )
        )
        return StepResult(
            outcome="success" if ok else "failure",
            error=error,
            outputs={
                "outcome": "success" if ok else "failure",
                "run_id": outcome.run_id,
                "stdout": "",
            },
        )


KIND = SubPipeline()
