"""`loop: {max_iterations, until, steps}`: repeat the step's own `pipeline:` (if any) and
then every sub-step, in dependency order (command and prompt steps too), until `until`
holds, at most `max_iterations` times; the same failure in a row as often as the
circuit breaker's limit ends it early (docs/composition.md).

Sub-steps run inside the loop's visit: what they record (artifacts, context values,
child runs) is recorded as the loop step's, and a sibling's outputs are read by its
id (`{{ SUB.out.NAME }}`) within the loop."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from swell.engine.loop.limits import normalize_error
from swell.engine.loop.policies import repeats, trips
from swell.engine.steps.base import StepKind
from swell.engine.steps.compose.step_out_refs import loaded_namespace, outputs_of
from swell.engine.steps.pipeline import run_pipeline
from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.finish import finish_visit, of_sub_step
from swell.errors import Problem
from swell.events.models import BaseEvent
from swell.manifest.conditions import ConditionError, parse_condition
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.templates.render import render_text

DONE_WORDS = ("true", "done", "yes")


def sub_steps(step: Step) -> list[Step]:
    """The loop's `steps`, as steps, in dependency order (a sibling before the steps that
    depend on it; dependencies on steps outside the loop are the loop's own)."""
    raw = step.loop.steps if step.loop else []
    subs = [Step.model_validate(s) for s in raw]
    ids = {s.id for s in subs}
    ordered: list[Step] = []
    placed: set[str] = set()
    while len(ordered) < len(subs):
        ready = [
            s
            for s in subs
            if s.id not in placed and all(d in placed for d in s.dependencies if d in ids)
        ]
        if not ready:  # a cycle: lint reports it; run the rest in file order
            ready = [s for s in subs if s.id not in placed]
        for s in ready:
            ordered.append(s)
            placed.add(s.id)
    return ordered


class Loop(StepKind):
    name = "loop"
    records_round = False

    def detail(self, step: Step) -> str | None:
        if step.loop is None:
            return None
        until = f" until {step.loop.until}" if step.loop.until else ""
        return f"at most {step.loop.max_iterations} times{until}"

    def problems(self, scope: LintScope) -> list[Problem]:
        step = scope.step
        if step.loop is None:
            return []
        out = []
        seen: set[str] = set()
        for index, raw in enumerate(step.loop.steps):
            try:
                sub = Step.model_validate(raw)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                out.append(
                    scope.problem(("loop", "steps", index), f"{where}: {first['msg']}".strip(": "))
                )
                continue
            if sub.id in seen or sub.id == step.id:
                out.append(
                    scope.problem(("loop", "steps", index, "id"), f"duplicate id '{sub.id}'")
                )
            seen.add(sub.id)
        return out

    async def run(self, ctx: VisitContext) -> StepResult:
        config = ctx.step.loop
        assert config is not None
        try:
            subs = sub_steps(ctx.step)
        except ValidationError as exc:
            return StepResult(outcome="failure", error=f"loop.steps: {exc}")
        limit = config.max_iterations or ctx.plan.options.max_cycles
        if not limit:
            return StepResult(outcome="failure", error="loop: no max_iterations (nor max_cycles)")
        breaker = ctx.plan.project.manifest.runtime.circuit_breaker.limit
        failed: tuple[str, int] | None = None  # the last error's key, and its repeats
        error: str | None = None
        for iteration in range(1, limit + 1):
            error = await _iteration(ctx, subs)
            if config.until and _until(
                ctx, config.until, error is None, await loaded_namespace(ctx, config.until)
            ):
                return _done(iteration, None)
            if error is None:
                failed = None
                continue
            key = normalize_error(error)
            failed = (key, repeats(failed, key))
            if trips(failed[1], breaker):
                return _done(
                    iteration,
                    f"loop stopped by the circuit breaker: iteration {iteration} failed "
                    f"{failed[1]} times in a row with the same error: {error}",
                )
        if config.until:
            last = f" (the last one failed: {error})" if error else ""
            return _done(limit, f"loop: `until` did not hold after {limit} iterations{last}")
        return _done(limit, error)


def _done(iterations: int, error: str | None) -> StepResult:
    return StepResult(
        outcome="failure" if error else "success",
        error=error,
        output_tail=f"{iterations} iteration{'s' if iterations != 1 else ''}",
        outputs={"iterations": iterations, "stdout": ""},
    )


def _until(ctx: VisitContext, until: str, ok: bool, ns: dict[str, Any]) -> bool:
    """`until` as an edge condition (`outcome=success`, `context.K=V`) over the
    iteration's outcome and the run's context; other text holds when it renders to
    true, done or yes."""
    text = render_text(until, ns).text.strip()
    if "=" in text:
        try:
            return parse_condition(text).holds("success" if ok else "failure", ctx.state.context)
        except ConditionError:
            return False
    return text.lower() in DONE_WORDS


async def _iteration(ctx: VisitContext, subs: list[Step]) -> str | None:
    """One pass: the step's own pipeline, then each sub-step whose siblings it depends
    on succeeded; the first error, or None."""
    errors: list[str] = []
    if ctx.step.pipeline:
        result = await run_pipeline(_in_loop(ctx), ctx.step.pipeline)
        ctx.emit(_restamp(ctx, result.events))
        if result.outcome == "failure":
            return result.error or "the loop's pipeline failed"
    failed: set[str] = set()
    outputs: dict[str, dict[str, str]] = {}
    for sub in subs:
        if any(d in failed for d in sub.dependencies):
            failed.add(sub.id)
            continue
        result = await _run_sub(ctx, sub, outputs)
        if result.outcome == "failure" and not sub.optional:
            failed.add(sub.id)
            errors.append(f"step '{sub.id}': {result.error or 'failure'}")
    return "; ".join(errors) or None


async def _run_sub(ctx: VisitContext, sub: Step, outputs: dict[str, dict[str, str]]) -> StepResult:
    """One sub-step, run by its kind in the loop's workspace and finished as a visit
    is; what it recorded is recorded as the loop step's before the next one starts."""
    ns = await loaded_namespace(ctx, sub.model_dump_json())
    for sid, recorded in outputs.items():  # siblings of this iteration, by their ids
        ns[sid] = outputs_of(None, recorded)
        ns["steps"] = {**ns.get("steps", {}), sid: {"artifacts": dict(recorded)}}
    sub_ctx = _in_loop(ctx).derive(step=sub, namespace=ns, recast=lambda evs: _restamp(ctx, evs))
    result = await ctx.services.step_kinds.of(sub).run(sub_ctx)
    finished = await finish_visit(sub_ctx, result, of_sub_step(sub))
    if sub.output_artifacts:
        outputs[sub.id] = finished.artifacts
    ctx.emit(_restamp(ctx, finished.result.events))
    return finished.result


def _in_loop(ctx: VisitContext) -> VisitContext:
    """The context an iteration's work runs in: nothing of it continues after a resume
    (an iteration starts afresh), so its gates wait rather than stop the run."""
    return ctx.derive(services=dataclasses.replace(ctx.services, stop_at_gates=False))


def _restamp(ctx: VisitContext, events: Sequence[BaseEvent]) -> list[BaseEvent]:
    """A sub-step's events as the loop's visit's: the run knows no other step."""
    return [ctx.event(e) for e in events]


KIND = Loop()
