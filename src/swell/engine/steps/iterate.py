"""`iterate: {over, mode, max_concurrent, on_failure}`: one child run of `pipeline:` per
item of a JSON array, in order or in parallel; the children's own outputs collected,
one slot per item, into the artifact `collected-output` (docs/composition.md)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from swell.engine.steps.base import StepKind
from swell.engine.steps.compose.children import (
    ChildCall,
    NotAPipelineName,
    after_child,
    child_options,
    child_pipeline,
    declared_output,
    failure_text,
    rendered_pipeline,
    run_item,
)
from swell.engine.steps.compose.step_out_refs import loaded_namespace, render_field
from swell.engine.visit.context import ChildOutcome, RunOptions, StepResult, VisitContext
from swell.errors import Problem
from swell.events.models import ArtifactWritten, BaseEvent, Warning
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Step
from swell.templates.render import render_text
from swell.workspace import safe
from swell.workspace.offload import off_loop

COLLECTED = "collected-output"


@dataclass
class Item:
    """One item: its index, its value, the pipeline and input rendered for it."""

    index: int
    value: Any
    pipeline: str
    input: str
    outcome: ChildOutcome | None = None
    error: str | None = None  # why it cannot run at all (its pipeline is refused)


class Iterate(StepKind):
    name = "iterate"
    retries = "own"
    records_round = False

    def detail(self, step: Step) -> str | None:
        if step.iterate is None:
            return None
        return f"{step.pipeline} for each of {step.iterate.over}"

    def problems(self, scope: LintScope) -> list[Problem]:
        if not scope.step.pipeline:
            return [scope.problem(("iterate",), "an `iterate` step needs `pipeline:`")]
        return []

    async def run(self, ctx: VisitContext) -> StepResult:
        config = ctx.step.iterate
        assert config is not None
        step = ctx.step
        ns = await loaded_namespace(ctx, config.over, step.pipeline or "", step.input or "")
        items, error = _items(ctx, config.over, ns)
        if error is not None:
            return StepResult(outcome="failure", error=error)
        options, problems = child_options(ctx)
        if problems:
            return StepResult(outcome="failure", error="; ".join(problems))
        parallel = config.mode == "parallel"
        width = (
            min(config.max_concurrent or len(items), ctx.plan.project.manifest.runtime.concurrency)
            if parallel
            else 1
        )
        keep_going = config.on_failure in ("continue", "skip")
        await _run_items(ctx, items, options, max(width, 1), keep_going)
        if any(i.outcome is not None and i.outcome.status == "waiting" for i in items):
            return StepResult(outcome="failure", waiting=True)  # an item stopped at a gate
        return _result(ctx, items, keep_going, await _values(ctx, items))


def _items(ctx: VisitContext, over: str, ns: dict[str, Any]) -> tuple[list[Item], str | None]:
    """The rendered `over` as items with their pipeline and input, or an error."""
    rendered = render_text(over, ns)
    text = rendered.text.strip()
    try:
        values = json.loads(text)
    except ValueError:
        values = None
    if not isinstance(values, list):
        missing = f" (no value for {', '.join(rendered.missing)})" if rendered.missing else ""
        shown = text if len(text) <= 200 else text[:200] + "..."
        return [], f"iterate.over must render to a JSON array{missing}; it rendered to {shown!r}"
    step = ctx.step
    items = []
    for index, value in enumerate(values):
        item_ns = {**ns, "item": value, "iteration": index}
        error = None
        try:
            pipeline = rendered_pipeline(step.pipeline or "", item_ns).strip()
        except NotAPipelineName as exc:
            pipeline, error = "", str(exc)
        text_input = render_field(step.input, item_ns) if step.input else ""
        items.append(Item(index, value, pipeline, text_input or ctx.plan.input, error=error))
    return items, None


async def _run_items(
    ctx: VisitContext, items: list[Item], options: RunOptions, width: int, keep_going: bool
) -> None:
    """Each item's child, `width` at a time; without `keep_going` the first failure
    stops the items not started yet (those running finish)."""
    resumed = ctx.resumed.children if ctx.resumed else {}
    gate = asyncio.Semaphore(width)
    stopped = False

    async def one(item: Item) -> None:
        nonlocal stopped
        async with gate:
            if stopped:
                return
            if item.error is not None:
                stopped = not keep_going
                return
            call = ChildCall(
                pipeline=item.pipeline,
                input=item.input,
                item=item.index,
                resume_id=resumed.get(item.index),
                own_workspace=True,
            )
            item.outcome = await run_item(ctx, call, options)
            if item.outcome.status != "succeeded" and not keep_going:
                stopped = True

    await asyncio.gather(*(one(item) for item in items))


async def _values(ctx: VisitContext, items: list[Item]) -> dict[int, Any]:
    """Each succeeded item's declared output, read off the event loop (a step wrote it)."""
    wanted = [
        (item.index, child_pipeline(ctx, item.pipeline), item.outcome.artifacts)
        for item in items
        if item.outcome is not None and item.outcome.status == "succeeded"
    ]
    if not wanted:
        return {}
    return await off_loop(lambda: {i: declared_output(p, arts) for i, p, arts in wanted})


def _result(
    ctx: VisitContext, items: list[Item], keep_going: bool, values: dict[int, Any]
) -> StepResult:
    events: list[BaseEvent] = []
    failures: list[str] = []
    slots: list[Any] = []
    for item in items:
        outcome = item.outcome
        if item.error is not None:
            failures.append(f"item {item.index}: {item.error}")
        if outcome is None:
            slots.append(None)
            continue
        if outcome.status != "succeeded":
            failures.append(f"item {item.index} ({item.pipeline}): {failure_text(outcome)}")
            slots.append(None)
            continue
        kept, problems = after_child(ctx, outcome, item.pipeline, keep=False)
        events += kept
        failures += [f"item {item.index}: {p}" for p in problems]
        slots.append(values.get(item.index))
    written, problem = _collect(ctx, slots)
    if written is not None:
        events.append(written)
    if problem:
        failures.append(problem)
    ran = sum(1 for i in items if i.outcome is not None)
    if failures and keep_going:
        note = f"{len(failures)} of {len(items)} items failed; went on (on_failure: continue): "
        events.append(ctx.event(Warning(message=note + "; ".join(failures))))
        failures = [] if problem is None else [problem]
    outputs = {"items": len(items), "ran": ran, "failed": len(failures), "stdout": ""}
    if failures:
        return StepResult(
            outcome="failure", error="; ".join(failures), events=events, outputs=outputs
        )
    return StepResult(outcome="success", events=events, outputs=outputs)


def _collect(ctx: VisitContext, slots: list[Any]) -> tuple[BaseEvent | None, str | None]:
    """`collected-output`: a JSON array with one slot per item, in item order, in the
    run's workspace (`.agents/output/<step>-collected.json`)."""
    raw = (json.dumps(slots, indent=2) + "\n").encode()
    rel = f".agents/output/{ctx.step.id}-collected.json"
    try:
        path = safe.place(ctx.workspace.path, rel)
        safe.replace(path, raw)
        sha, size = safe.digest_file(path)
    except (OSError, safe.UnsafePath) as exc:
        return None, f"{COLLECTED} could not be written: {exc}"
    written = ArtifactWritten(
        name=COLLECTED, path=str(path), sha256=sha, size=size, artifact_type="json"
    )
    return ctx.event(written), None


KIND = Iterate()
