"""Finishing a visit, once for every way a visit runs (a run's own visit, a loop's
sub-step, a fan-out worker): its declared output artifacts are collected, its
contracts checked (a failed `rework` one writes review-feedback.json for the rework
visit), its `output.context` set where no run loop completes it, and its deliverables
(`outcomes`) recorded."""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from swell.engine.loop.policies import ContractFailure
from swell.engine.visit.context import StepResult, VisitContext
from swell.engine.visit.output_context import evaluate_context
from swell.events.models import ArtifactWritten, BaseEvent, ContextSet, Warning
from swell.manifest.models import Step
from swell.workspace import artifacts, safe, versions
from swell.workspace.offload import off_loop


@dataclass(frozen=True)
class Finishing:
    """What finishing does beyond collecting the declared outputs: it depends on who
    runs the visit and what follows it."""

    checked_by: tuple[Step, ...] = ()  # whose contracts check the visit, in order
    # `artifact.written` for what was collected (a worker's are aggregated instead)
    record: bool = True
    context: bool = False  # set `output.context` here: no run loop completes this visit
    deliverables: bool = False  # record `outcomes` once the visit succeeded
    feedback: bool = False  # a failed rework contract hands its feedback to the rework


def of_visit(step: Step, owner: Step) -> Finishing:
    """A run's visit; a rework visit is checked by its own step's contracts first, then
    by those of the step it reworks (as in Wave). The run loop sets its context."""
    checked = (step, owner) if owner is not step else (step,)
    return Finishing(checked_by=checked, deliverables=True, feedback=True)


def of_sub_step(step: Step) -> Finishing:
    """A loop's sub-step: checked by its own contracts; no run loop completes it."""
    return Finishing(checked_by=(step,), context=True, deliverables=True)


# a fan-out worker: its outputs are read, then aggregated as the step's (engine/steps/compose/fanout.py)
OF_WORKER = Finishing(record=False)


@dataclass
class Finished:
    result: StepResult  # the visit's result with what finishing added
    artifacts: dict[str, str] = field(default_factory=dict)  # collected: name -> path


async def finish_visit(
    ctx: VisitContext,
    result: StepResult,
    how: Finishing,
    problems: Sequence[str] = (),
) -> Finished:
    """Finish one visit whose kind returned `result`; `problems` (the workspace's)
    fail it as a missing artifact does. The caller's `result` is left as it was."""
    result = copy.copy(result)  # as `dataclasses.replace`, without running __init__ again
    result.events = list(result.events)
    step, found = ctx.step, {}
    problems = list(problems)
    if step.output_artifacts:
        base = result.outputs_dir or ctx.workspace.path
        declared, stdout = step.output_artifacts, result.stdout
        written, missing = await off_loop(lambda: artifacts.collect(base, declared, stdout))
        found = {a.name: a.path for a in written}
        if how.record:
            result.events += [ctx.event(a) for a in written]
            run_dir = ctx.plan.run_dir  # each visit's bytes stay readable (workspace/versions.py)
            kept = await off_loop(lambda: versions.keep(run_dir, written))
            result.events += [ctx.event(Warning(message=p)) for p in kept]
        problems += missing
    if problems and result.outcome == "success":
        result.outcome = "failure"
        result.error = "; ".join(filter(None, [result.error, *problems]))
    for subject in how.checked_by:
        if result.outcome != "success" or not (subject.handover and subject.handover.all_contracts):
            continue
        await _check(ctx, result, subject, how.feedback)
    if result.outcome == "success" and how.deliverables and step.outcomes:
        from swell.engine.visit import deliverables

        extracted = await off_loop(lambda: deliverables.extract(step, ctx.workspace.path))
        result.events += [ctx.event(e) for e in extracted]
    if how.context and step.output and step.output.context:
        values, unset = evaluate_context(step.output.context, result.outputs)
        result.events += [ctx.event(ContextSet(key=k, value=v)) for k, v in values.items()]
        result.events += [ctx.event(Warning(message=p)) for p in unset]
    return Finished(result, found)


async def _check(ctx: VisitContext, result: StepResult, subject: Step, feedback: bool) -> None:
    """`subject`'s contracts on the visit; the first failure that changes what happens
    next fails it."""
    from swell.engine.visit import handover  # contracts (and agents) only when a step has some

    failed = await handover.check(ctx, result, subject)
    if failed is None:
        return
    if failed.policy == "rework" and feedback:
        failed = _write_feedback(ctx, failed, result)
    result.failure = failed
    result.outcome = "failure"
    result.error = (
        f"contract {failed.index + 1} ({failed.contract_type}) of step "
        f"'{subject.id}' failed: {failed.error}"
    )


def _write_feedback(
    ctx: VisitContext, failure: ContractFailure, result: StepResult
) -> ContractFailure:
    """The failure as the artifact `review-feedback.json` of this visit, which the
    rework visit is given."""
    data: dict[str, Any] = {
        "step": failure.owner.id,
        "contract": {"index": failure.index, "type": failure.contract_type},
        "reviewer": failure.reviewer,
        "error": failure.error,
    }
    if failure.feedback is not None:
        data |= failure.feedback.model_dump()
    raw = (json.dumps(data, indent=2) + "\n").encode()
    rel = f"{ctx.step.id}/{ctx.visit}/review-feedback.json"
    try:
        path = artifacts.write_run_file(ctx.plan.run_dir, rel, raw)
    except safe.UnsafePath as exc:
        error = f"{failure.error}; the review feedback could not be written: {exc}"
        return dataclasses.replace(failure, policy="fail", error=error)
    written: BaseEvent = ArtifactWritten(
        name="review-feedback",
        path=str(path),
        sha256=hashlib.sha256(raw).hexdigest(),
        size=len(raw),
        artifact_type="json",
    )
    result.events.append(ctx.event(written))
    return dataclasses.replace(failure, feedback_path=str(path))
