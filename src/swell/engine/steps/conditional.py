"""`type: conditional`: runs nothing; routes on the outcome of the visit that led here."""

from __future__ import annotations

from swell.engine.context import StepResult, VisitContext


async def run(ctx: VisitContext) -> StepResult:
    source, visit = ctx.activation.source_step, ctx.activation.source_visit
    outcome = ctx.state.outcomes.get((source, visit), "success") if source and visit else "success"
    error = f"'{source}' failed" if outcome == "failure" else None
    return StepResult(outcome=outcome, error=error)
