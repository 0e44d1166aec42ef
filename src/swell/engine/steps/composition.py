"""Wave's composition steps (`iterate`, `aggregate`, `branch`, `loop`): accepted and
checked, not run yet. `swell validate` warns about each (the field's NOT_RUN entry);
a run that reaches one fails it with the same words, never silently skipping it."""

from __future__ import annotations

from swell.engine.context import StepResult, VisitContext
from swell.engine.steps.base import StepKind
from swell.errors import PipelineNotFound, Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.loader import resolve_pipeline
from swell.manifest.models import Step

FIELDS = ("iterate", "aggregate", "branch", "loop")


def composition_field(step: Step) -> str:
    """Which composition field the step sets (the first, in Wave's precedence)."""
    return next((name for name in FIELDS if getattr(step, name) is not None), "composition")


class Composition(StepKind):
    name = "composition"
    records_round = False

    def problems(self, scope: LintScope) -> list[Problem]:
        step, out = scope.step, []
        if step.iterate is not None and not step.pipeline:
            out.append(scope.problem(("iterate",), "an `iterate` step needs `pipeline:`"))
        if step.aggregate is not None and step.aggregate.into.startswith(("/", "..")):
            out.append(
                scope.problem(("aggregate", "into"), "`into` must stay inside the workspace")
            )
        for key, target in step.branch.cases.items() if step.branch else []:
            if target == "skip" or "{{" in target:
                continue
            try:
                resolve_pipeline(scope.project.root, target)
            except PipelineNotFound as exc:
                out.append(scope.problem(("branch", "cases", key), str(exc)))
        return out

    async def run(self, ctx: VisitContext) -> StepResult:
        name = composition_field(ctx.step)
        return StepResult(
            outcome="failure",
            error=f"swell does not run `{name}` steps yet (Wave composition); see docs/manifest.md",
        )


KIND = Composition()
