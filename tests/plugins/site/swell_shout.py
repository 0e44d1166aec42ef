"""`type: shout`: a step kind from a plugin. Its `input` (a template), upper-cased and
said `times` times: a field of its own, beside the step's."""

from __future__ import annotations

from pydantic import BaseModel, Field

from swell.api import (
    LintScope,
    Problem,
    Step,
    StepKind,
    StepResult,
    VisitContext,
    output_namespace,
    render_text,
)


class ShoutFields(BaseModel):
    times: int = Field(default=1, ge=1, le=10)


class Shout(StepKind):
    name = "shout"
    progress = "answer"
    Fields = ShoutFields

    def detail(self, step: Step) -> str | None:
        return f"shout {step.input!r}"

    def problems(self, scope: LintScope) -> list[Problem]:
        if scope.step.input:
            return []
        return [scope.problem((), f"shout step '{scope.step.id}' needs `input`")]

    async def run(self, ctx: VisitContext) -> StepResult:
        times = ctx.step.fields(ShoutFields).times
        text = " ".join([render_text(ctx.step.input or "", ctx.namespace).text.upper()] * times)
        return StepResult(
            outcome="success",
            output_tail=text,
            stdout=text,
            outputs=output_namespace(text),
        )


KIND = Shout()
