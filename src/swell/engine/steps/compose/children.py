"""Sub-pipeline runs for composition steps (`pipeline:`, `iterate`, `branch`, `loop`):
a step's `config` (env, handed artifacts, timeout, extract, stop condition), starting
or continuing one child run, and what the parent keeps of it (docs/composition.md)."""

from __future__ import annotations

import asyncio
import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell.engine.loop.retry import max_attempts
from swell.engine.steps.compose.step_out_refs import read_value, render_field
from swell.engine.visit.context import ChildOutcome, ChildRequest, RunOptions, VisitContext
from swell.engine.visit.pipeline_outputs import as_artifacts
from swell.errors import SwellError
from swell.events.models import ArtifactWritten, BaseEvent, ChildRunStarted, ContextSet, Warning
from swell.manifest.conditions import ConditionError, parse_condition
from swell.manifest.durations import parse_duration
from swell.manifest.loader import PIPELINE_DIRS, load_pipeline
from swell.manifest.models import Pipeline
from swell.templates.expressions import MissingVariable, lookup
from swell.templates.render import render_text
from swell.workspace import safe


@dataclass(frozen=True)
class ChildCall:
    """One child run a composition visit asks for."""

    pipeline: str
    input: str
    item: int | None = None  # an iterate item's index
    resume_id: str | None = None  # continue this child (after `swell resume`)
    own_workspace: bool = False


_NAME = re.compile(r"\w[\w.-]*")  # no separator: never a path


class NotAPipelineName(ValueError):
    """A rendered `pipeline:` that is not the name of a pipeline of the project."""


def rendered_pipeline(template: str, ns: Mapping[str, Any]) -> str:
    """The pipeline a `pipeline:` field (or a `branch` case) names for this visit.

    Written literally it is used as it is, a name or a path: the manifest's author
    chose it. Rendered, its value may come from what a step wrote (an item, an
    output), so it must be the name of a pipeline of the project, found in
    `.agents/pipelines/` or `.wave/pipelines/`: a path there would let a step that can
    only write files pick any pipeline file, and so any command, to run."""
    if "{{" not in template:
        return template
    name = render_field(template, ns).strip()
    if _NAME.fullmatch(name) and not name.endswith((".yaml", ".yml")):
        return name
    where = " or ".join(f"{d}/NAME.yaml" for d in PIPELINE_DIRS)
    raise NotAPipelineName(
        f"`pipeline: {template.strip()}` rendered to {name[:200]!r}, which is not the name of "
        f"a pipeline of the project; a rendered pipeline is named as NAME for {where} "
        "(a path must be written in the manifest itself)"
    )


def child_options(ctx: VisitContext) -> tuple[RunOptions, list[str]]:
    """The options a child of this visit runs with: the parent's, plus `config.env` over
    the inherited env, the artifacts handed down (every artifact of the step's direct
    dependencies, and each `config.inject` name) and `config.max_cycles`. Returns the
    problems too (an inject name nothing recorded)."""
    step, state, parent = ctx.step, ctx.state, ctx.plan.options
    handed = dict(parent.artifacts)
    for dep in step.dependencies:
        handed.update(state.artifacts.get(dep, {}))
    handed.pop("output", None)  # a command's log is no artifact to hand down
    config = step.config
    problems: list[str] = []
    for name in config.inject if config else []:
        found = ctx.namespace.get("artifacts", {}).get(name) or next(
            (arts[name] for dep, arts in state.artifacts.items() if name in arts), None
        )
        if found is None:
            problems.append(f"config.inject: no step has recorded an artifact named '{name}'")
        else:
            handed[name] = found
    env = {**parent.env, **(config.env if config else {})}
    cycles = config.max_cycles if config and config.max_cycles else parent.max_cycles
    options = dataclasses.replace(parent, env=env, artifacts=handed, max_cycles=cycles)
    return options, problems


def timeout_of(ctx: VisitContext) -> float | None:
    """`config.timeout` in seconds (validated at load, so it parses)."""
    config = ctx.step.config
    return parse_duration(config.timeout) if config and config.timeout else None


async def run_child(ctx: VisitContext, call: ChildCall, options: RunOptions) -> ChildOutcome:
    """Run (or continue) one child run; `config.timeout` ends it (as Ctrl-C would)."""
    children = ctx.services.children
    if children is None:
        return ChildOutcome("-", "failed", "sub-pipelines are not available in this runtime")

    def started(child_id: str, pipeline: str) -> None:
        event = ChildRunStarted(child_run_id=child_id, pipeline=pipeline, item=call.item)
        ctx.emit([ctx.event(event)])

    request = ChildRequest(
        parent=ctx.plan,
        step=ctx.step,
        visit=ctx.visit,
        input=call.input,
        resume_id=call.resume_id,
        on_start=started,
        pipeline=call.pipeline,
        options=options,
        own_workspace=call.own_workspace,
        item=call.item,
        stop_at_gates=ctx.services.stop_at_gates,
    )
    limit = timeout_of(ctx)
    if limit is None:
        return await children.run_child(request)
    try:
        return await asyncio.wait_for(children.run_child(request), limit)
    except TimeoutError:
        timeout = ctx.step.config.timeout if ctx.step.config else limit
        return ChildOutcome(
            call.resume_id or "-", "failed", f"sub-pipeline {call.pipeline} timed out ({timeout})"
        )


async def run_item(ctx: VisitContext, call: ChildCall, options: RunOptions) -> ChildOutcome:
    """One fan-out item's child run (`iterate`, a matrix's `child_pipeline`), run again
    while it fails and the step's `retry:` allows: each attempt is a new child run,
    after the backoff; an item continued by `swell resume` continues its count."""
    limit = max_attempts(ctx.step.retry)
    resumed = ctx.resumed.item_attempts if ctx.resumed and call.resume_id else {}
    attempt = resumed.get(call.item or 0, 1)
    outcome = await run_child(ctx, call, options)
    while outcome.status == "failed" and attempt < limit:
        attempt += 1
        delay = ctx.retry_delay(attempt)
        note = (
            f"item {call.item} failed; retrying in {delay:g}s (attempt {attempt} of {limit}): "
            + failure_text(outcome)
        )
        ctx.emit([ctx.event(Warning(message=note))])
        await asyncio.sleep(delay)
        outcome = await run_child(ctx, dataclasses.replace(call, resume_id=None), options)
    return outcome


def failure_text(outcome: ChildOutcome) -> str:
    return f"sub-pipeline run {outcome.run_id} {outcome.status}: {outcome.error or ''}".rstrip(": ")


# ------------------------------------------------------------------ what the parent keeps


def child_pipeline(ctx: VisitContext, name: str) -> Pipeline | None:
    """The child's pipeline as its file says (for its declared outputs), or None."""
    try:
        return load_pipeline(ctx.plan.project.root, name).pipeline
    except (SwellError, OSError):
        return None


def declared_output(pipeline: Pipeline | None, left: dict[str, dict[str, str]]) -> Any:
    """A child's own output, deterministically: its `pipeline_outputs` (one alias: its
    value; several: an object of them), else the first declared artifact of the last
    step (in file order) that recorded one; None when there is none."""
    if pipeline is None:
        return None
    if pipeline.pipeline_outputs:
        values = {}
        for alias, out in pipeline.pipeline_outputs.items():
            path = left.get(out.step, {}).get(out.artifact)
            value = read_value(path) if path else None
            if out.field and value is not None:
                try:
                    value = lookup(value, tuple(out.field.removeprefix(".").split(".")))
                except MissingVariable:
                    value = None
            values[alias] = value
        return next(iter(values.values())) if len(values) == 1 else values
    for step in reversed(pipeline.steps):
        for art in step.output_artifacts:
            path = left.get(step.id, {}).get(art.name)
            if path:
                return read_value(path)
    return None


def kept_artifacts(
    ctx: VisitContext, outcome: ChildOutcome, pipeline: Pipeline | None
) -> list[BaseEvent]:
    """The child's artifacts recorded again as this step's (`{{ STEP.out.NAME }}`,
    `inject_artifacts: {step: STEP}`); where two child steps use a name, the later
    step in the child's file wins."""
    order = [s.id for s in pipeline.steps] if pipeline else list(outcome.artifacts)
    found: dict[str, str] = {}
    for step_id in sorted(outcome.artifacts, key=lambda s: order.index(s) if s in order else -1):
        found.update(outcome.artifacts[step_id])
    found.pop("output", None)  # a command's log stays the child step's
    events: list[BaseEvent] = []
    for name, path in found.items():
        event = artifact_event(name, Path(path))
        if event is not None:
            events.append(ctx.event(event))
    return events


def artifact_event(name: str, path: Path, kind: str | None = None) -> ArtifactWritten | None:
    """An ArtifactWritten for an existing regular file, hashed now; None if it is gone."""
    try:
        sha, size = safe.digest_file(path)
    except (safe.UnsafePath, OSError):
        return None
    return ArtifactWritten(name=name, path=str(path), sha256=sha, size=size, artifact_type=kind)


def extracted(
    ctx: VisitContext, outcome: ChildOutcome, child: str
) -> tuple[list[BaseEvent], list[str]]:
    """`config.extract`: each named child artifact copied into this run's directory as
    the artifact `<child>.<name>` of this step; a name the child never recorded fails."""
    config = ctx.step.config
    events: list[BaseEvent] = []
    problems: list[str] = []
    for name in config.extract if config else []:
        source = next(
            (arts[name] for arts in reversed(list(outcome.artifacts.values())) if name in arts),
            None,
        )
        if source is None:
            problems.append(f"config.extract: sub-pipeline {child} recorded no artifact '{name}'")
            continue
        try:  # streamed, and only from a regular file (never a link, a FIFO, a device)
            rel = f"{ctx.step.id}/{ctx.visit}/{child}.{name}"
            path = safe.place(ctx.plan.run_dir, rel, "run directory")
            digest, size = safe.copy_file(Path(source), path)
        except (OSError, safe.UnsafePath) as exc:
            problems.append(f"config.extract: '{name}' could not be copied: {exc}")
            continue
        written = ArtifactWritten(name=f"{child}.{name}", path=str(path), sha256=digest, size=size)
        events.append(ctx.event(written))
    return events, problems


def merged_context(ctx: VisitContext, outcome: ChildOutcome) -> list[BaseEvent]:
    """The child's context values, set in the parent (the last writer wins), and
    `sub_pipeline_stop` once `config.stop_condition` holds in the child."""
    events: list[BaseEvent] = [
        ctx.event(ContextSet(key=k, value=v)) for k, v in outcome.context.items()
    ]
    config = ctx.step.config
    if config and config.stop_condition and stop_holds(config.stop_condition, ctx, outcome):
        events.append(ctx.event(ContextSet(key="sub_pipeline_stop", value="true")))
    return events


def stop_holds(condition: str, ctx: VisitContext, outcome: ChildOutcome) -> bool:
    """`context.K=V` (the condition language of edges) compares the child's context;
    any other text holds when it renders to true, done or yes."""
    ns = {**ctx.namespace, "context": dict(outcome.context)}
    text = render_text(condition, ns).text.strip()
    if "=" in text:
        try:
            return parse_condition(text).holds(
                "success" if outcome.status == "succeeded" else "failure", outcome.context
            )
        except ConditionError:
            return False
    return text.lower() in ("true", "done", "yes")


def after_child(
    ctx: VisitContext, outcome: ChildOutcome, child: str, *, keep: bool = True
) -> tuple[list[BaseEvent], list[str]]:
    """Everything a finished, succeeded child hands back to this visit: its context,
    its artifacts as this step's (unless `keep` is off) and the extracted copies."""
    events = merged_context(ctx, outcome)
    if keep:
        events += kept_artifacts(ctx, outcome, child_pipeline(ctx, child))
        # its `pipeline_outputs` by their names (engine/visit/pipeline_outputs.py)
        events += [ctx.event(e) for e in as_artifacts(ctx.services.runs, outcome.run_id)]
    copies, problems = extracted(ctx, outcome, child)
    return events + copies, problems


__all__ = [
    "ChildCall",
    "after_child",
    "child_options",
    "child_pipeline",
    "declared_output",
    "failure_text",
    "rendered_pipeline",
    "run_child",
    "run_item",
]
