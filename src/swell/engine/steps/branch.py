"""`branch: {on, cases}`: run the pipeline the rendered `on` picks (`cases[value]`, else
`cases.default`) as a child run; a case naming `skip` runs nothing (docs/composition.md)."""

from __future__ import annotations

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose.step_out_refs import loaded_namespace, render_field
from swell.engine.steps.pipeline import run_pipeline
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import PipelineNotFound, Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.loader import resolve_pipeline
from swell.manifest.models import Step

SKIP = "skip"
DEFAULT = "default"


class Branch(StepKind):
    name = "branch"
    records_round = False

    def detail(self, step: Step) -> str | None:
        return f"on {step.branch.on}" if step.branch else None

    def problems(self, scope: LintScope) -> list[Problem]:
        out = []
        for key, target in scope.step.branch.cases.items() if scope.step.branch else []:
            if target == SKIP or "{{" in target:
                continue
            try:
                resolve_pipeline(scope.project.root, target)
            except PipelineNotFound as exc:
                out.append(scope.problem(("branch", "cases", key), str(exc)))
        return out

    async def run(self, ctx: VisitContext) -> StepResult:
        config = ctx.step.branch
        assert config is not None
        value = render_field(config.on, await loaded_namespace(ctx, config.on)).strip()
        key = value if value in config.cases else DEFAULT
        shown = value if len(value) <= 200 else f"{value[:200]}… ({len(value):,} characters)"
        target = config.cases.get(key)
        if target is None:
            known = ", ".join(sorted(config.cases)) or "none"
            return StepResult(
                outcome="failure",
                error=f"branch: no case for {shown!r} and no `default` (cases: {known})",
            )
        picked = f"branch on {shown!r}: case '{key}' -> {target}"
        if target == SKIP:
            return StepResult(
                outcome="success",
                output_tail=picked + " (nothing runs)",
                outputs={"case": key, "pipeline": "", "stdout": ""},
            )
        result = await run_pipeline(ctx, target)
        result.outputs |= {"case": key, "pipeline": target}
        result.output_tail = result.output_tail or picked
        return result


KIND = Branch()
