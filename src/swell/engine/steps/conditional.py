"""`type: conditional`: runs nothing; routes on the outcome of the visit that led here."""

from __future__ import annotations

from swell.engine.loop.graph import Activation
from swell.engine.loop.state import RunState
from swell.engine.steps.base import StepKind
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step


class Conditional(StepKind):
    name = "conditional"
    retries = None
    inherits_outcome = True
    records_round = False  # a router did no work worth remembering
    counts_for_breaker = False  # its failures are the failures of the step it routes
    progress = "hidden"  # its route line says what it decided
    changes_workspace = False

    def problems(self, scope: LintScope) -> list[Problem]:
        if scope.step.edges:
            return []
        return [scope.problem((), f"conditional step '{scope.step.id}' needs edges")]

    async def run(self, ctx: VisitContext) -> StepResult:
        return _outcome_of_source(ctx.activation, ctx.state)

    def route(self, step: Step, activation: Activation, state: RunState) -> StepResult | None:
        # a router with files to take in or hand over needs its visit's workspace
        if step.output_artifacts or step.handover or step.memory.inject_artifacts:
            return None
        return _outcome_of_source(activation, state)


def _outcome_of_source(activation: Activation, state: RunState) -> StepResult:
    source, visit = activation.source_step, activation.source_visit
    outcome = state.outcomes.get((source, visit), "success") if source and visit else "success"
    error = f"'{source}' failed" if outcome == "failure" else None
    return StepResult(outcome=outcome, error=error)


KIND = Conditional()
