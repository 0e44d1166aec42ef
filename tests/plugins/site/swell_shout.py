"""`type: shout`: a step kind from a plugin. Its `input` (a template), upper-cased."""

from __future__ import annotations

from swell.engine.context import StepResult, VisitContext
from swell.engine.outputs import output_namespace
from swell.engine.steps.base import StepKind
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.manifest.templates import render_text


class Shout(StepKind):
    name = "shout"
    progress = "answer"

    def detail(self, step: Step) -> str | None:
        return f"shout {step.input!r}"

    def problems(self, scope: LintScope) -> list[Problem]:
        if scope.step.input:
            return []
        return [scope.problem((), f"shout step '{scope.step.id}' needs `input`")]

    async def run(self, ctx: VisitContext) -> StepResult:
        text = render_text(ctx.step.input or "", ctx.namespace).text.upper()
        return StepResult(
            outcome="success",
            output_tail=text,
            stdout=text,
            outputs=output_namespace(text),
        )


KIND = Shout()
