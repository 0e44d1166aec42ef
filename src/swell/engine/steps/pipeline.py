"""`pipeline: NAME`: run a sub-pipeline as a child run; its outcome is the step's."""

from __future__ import annotations

from swell.engine.context import StepResult, VisitContext
from swell.events.models import ChildRunStarted
from swell.manifest.templates import render_text


async def run(ctx: VisitContext) -> StepResult:
    children = ctx.services.children
    if children is None:
        return StepResult(
            outcome="failure", error="sub-pipelines are not available in this runtime"
        )
    step = ctx.step
    child_input = render_text(step.input, ctx.namespace).text if step.input else ctx.plan.input
    resume_id = ctx.resumed.child_run_id if ctx.resumed else None

    def started(child_id: str, pipeline: str) -> None:
        ctx.emit([ctx.event(ChildRunStarted(child_run_id=child_id, pipeline=pipeline))])

    outcome = await children.run_child(ctx.plan, step, ctx.visit, child_input, resume_id, started)
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
        outputs={"outcome": "success" if ok else "failure", "run_id": outcome.run_id, "stdout": ""},
    )
