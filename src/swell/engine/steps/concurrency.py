"""`concurrency: N` (N > 1): N identical agents run the step's prompt at once, each in
a workspace of its own; the step succeeds when all of them do (the first failure
starts no more), and their outputs are aggregated (docs/composition.md)."""

from __future__ import annotations

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose import fanout
from swell.engine.visit.context import StepResult, VisitContext
from swell.errors import Problem
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step

DEFAULT_CAP = 10  # Wave's `runtime.max_concurrency` default


def agents(step: Step, cap: int | None) -> int:
    """How many agents a visit runs: `concurrency`, capped by `runtime.max_concurrency`."""
    return min(step.concurrency or 1, cap or DEFAULT_CAP)


def fan_out_problems(scope: LintScope, field: str) -> list[Problem]:
    """A fan-out step runs its prompt: no command step, and what a prompt step needs."""
    step = scope.step
    if step.script is not None or step.type not in (None, "prompt"):
        what = "`script`" if step.script is not None else f"`type: {step.type}`"
        return [scope.problem((field,), f"{field} fans out the step's prompt; {what} cannot")]
    return scope.lint.step_kinds.get("prompt").problems(scope)


class Concurrency(StepKind):
    name = "concurrency"
    retries = "own"
    records_round = False

    def detail(self, step: Step) -> str | None:
        return f"{step.concurrency} agents at once"

    def problems(self, scope: LintScope) -> list[Problem]:
        step, cap = scope.step, scope.project.manifest.runtime.max_concurrency
        if (step.concurrency or 0) < 2:
            return [scope.problem(("type",), "a concurrency step needs `concurrency` of 2 or more")]
        problems = fan_out_problems(scope, "concurrency")
        if step.strategy is not None and step.strategy.type == "matrix":
            problems.append(
                scope.problem(
                    ("concurrency",),
                    "concurrency and a matrix strategy cannot be combined; use one of them",
                )
            )
        if (step.concurrency or 0) > (cap or DEFAULT_CAP):
            problems.append(
                scope.problem(
                    ("concurrency",),
                    f"concurrency {step.concurrency} is capped at {agents(step, cap)} "
                    "(runtime.max_concurrency)",
                    severity="warning",
                )
            )
        return problems

    async def run(self, ctx: VisitContext) -> StepResult:
        count = agents(ctx.step, ctx.plan.project.manifest.runtime.max_concurrency)
        workers = [fanout.Worker(i, f"agent-{i}") for i in range(count)]

        async def job(worker: fanout.Worker) -> None:
            await fanout.run_agent(ctx, worker, {})

        await fanout.schedule(workers, count, job, fail_fast=True)
        return await fanout.step_result(ctx, workers, "agent", "concurrency", check_conflicts=False)


KIND = Concurrency()
