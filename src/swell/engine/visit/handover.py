"""The step boundary: a visit's contracts, in order, cheap ones first by convention.

Each contract either passes or fails with a policy (`on_failure`): `fail` (default),
`retry` (the step again, with the error), `rework` (the `rework_step`, then the
contracts again), `continue`/`warn` (record and go on), `skip` (stop checking, pass).
Checking stops at the first failure whose policy is not continue/warn/skip.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from swell.contracts.base import (
    AgentAnswer,
    AgentCall,
    ContractContext,
    ContractResult,
    ContractType,
    RunAgent,
)
from swell.engine.agent.agents import HelperCall, run_helper
from swell.engine.loop.policies import ContractFailure
from swell.engine.loop.retry import max_attempts
from swell.engine.visit.context import StepResult, VisitContext
from swell.events import models as ev
from swell.events.models import Policy
from swell.manifest.models import Contract, Step
from swell.workspace import artifacts, safe


def policy_of(contract: Contract) -> Policy:
    if contract.on_failure:
        return contract.on_failure
    return "warn" if contract.must_pass is False else "fail"


def _artifacts(ctx: VisitContext, result: StepResult) -> dict[str, str]:
    """Artifact name -> path: every step's latest, then this step's injected ones, then
    what this visit just wrote (so the nearest wins)."""
    found: dict[str, str] = {}
    for arts in ctx.state.artifacts.values():
        found.update(arts)
    # injected ones by name (`artifacts.<dep>` holds a dependency's, by name, a level down)
    found.update(
        (k, v) for k, v in ctx.namespace.get("artifacts", {}).items() if isinstance(v, str)
    )
    for event in result.events:
        if isinstance(event, ev.ArtifactWritten) and event.name != "output":
            found[event.name] = event.path
    return found


def _run_agent(ctx: VisitContext) -> RunAgent:
    """How contracts ask a persona: a helper run for this visit, on the cheapest tier
    of its adapter unless the contract names a model."""

    async def run_agent(call: AgentCall) -> AgentAnswer:
        helper = HelperCall(
            role="review",
            persona=call.persona,
            system=call.system,
            prompt=call.prompt,
            visit=ctx.visit,
            timeout_s=call.timeout_s,
            model=call.model,
            tier="cheapest",
            json_schema=call.json_schema,
        )
        return await run_helper(ctx, helper)

    return run_agent


def _context(
    ctx: VisitContext, result: StepResult, owner: Step, settings: Any, index: int
) -> ContractContext[Any]:
    return ContractContext(
        settings=settings,
        index=index,
        step=owner,
        workspace=ctx.workspace.path,
        project_root=ctx.plan.project.root,
        run_dir=ctx.plan.run_dir,
        visit=ctx.visit,
        namespace=ctx.namespace,
        command_env=ctx.command_env(),
        artifacts=_artifacts(ctx, result),
        stdout=result.stdout,
        diff=ctx.workspace.diff,
        diff_from=ctx.workspace.diff_from,
        default_timeout=ctx.timeout_seconds(),
        run_agent=_run_agent(ctx),
        git=ctx.workspace.git,
        events=lambda: [*ctx.emitted, *result.events],
        outputs_dir=result.outputs_dir,
    )


async def _run_one(kind: ContractType[Any], cctx: ContractContext[Any]) -> ContractResult:
    try:
        return await kind.check(cctx)
    except Exception as exc:  # a bug in a contract type must not lose the run
        return ContractResult(passed=False, error=f"contract error: {exc!r}")


async def check(ctx: VisitContext, result: StepResult, owner: Step) -> ContractFailure | None:
    """Run `owner`'s contracts for this visit; the failure that stops the visit, if any.

    As in Wave, a `fail` on a step whose `retry:` allows more than one attempt is a
    retry: the step runs again with an attempt context (`attempt_context`)."""
    errors: list[tuple[str, str]] = []  # (contract type, error) of each failed contract
    failure = await _check(ctx, result, owner, errors)
    if (
        failure is not None
        and failure.policy == "fail"
        and owner.id == ctx.step.id
        and max_attempts(owner.retry) > 1
    ):
        failure = dataclasses.replace(failure, policy="retry")
    if failure is not None and failure.policy == "retry":
        _write_attempt(ctx, result, errors)
    return failure


ATTEMPT_FILE = "attempt-context.json"
OUTPUT_TAIL = 2000  # characters of the failed attempt's output the next one sees
MAX_ATTEMPT_FILE = 10 * 1024 * 1024


def _write_attempt(ctx: VisitContext, result: StepResult, errors: list[tuple[str, str]]) -> None:
    """What the next attempt is told (see `attempt_context`), kept in the run directory
    next to the visit's other files."""
    data = {
        "error": result.error,
        "contract_errors": errors,
        "output_tail": (result.stdout or result.output_tail or "")[-OUTPUT_TAIL:],
    }
    rel = f"{ctx.step.id}/{ctx.visit}/{ATTEMPT_FILE}"
    with contextlib.suppress(safe.UnsafePath):  # the retry still says the error itself
        artifacts.write_run_file(ctx.plan.run_dir, rel, json.dumps(data, indent=2).encode())


def attempt_context(run_dir: Path, request: ev.RetryRequested) -> str:
    """The block a retried step's prompt begins with, as Wave's RETRY CONTEXT: which
    attempt this is, the previous error, every contract error, the end of the previous
    attempt's output, and to fix the work rather than start over."""
    data: dict[str, Any] = {}
    path = run_dir / (request.step_id or "") / str(request.visit or 0) / ATTEMPT_FILE
    with contextlib.suppress(OSError, ValueError, safe.UnsafePath):  # a step can reach it
        data = json.loads(safe.read_limited(path, MAX_ATTEMPT_FILE))
    lines = [
        f"RETRY CONTEXT (attempt {request.attempt} of {request.max_attempts})",
        f"Your previous attempt failed its checks:\n{request.reason}",
    ]
    others = [(t, e) for t, e in data.get("contract_errors", []) if e != request.reason]
    if others:
        lines.append("Other contract errors:\n" + "\n".join(f"- {t}: {e}" for t, e in others))
    if data.get("output_tail"):
        lines.append(f"The end of your previous output:\n```\n{data['output_tail'].rstrip()}\n```")
    lines.append(
        "Fix what the checks found, building on the work already in the workspace; "
        "do not start over."
    )
    return "\n\n".join(lines) + "\n\n"


async def _check(
    ctx: VisitContext, result: StepResult, owner: Step, errors: list[tuple[str, str]]
) -> ContractFailure | None:
    types = ctx.services.contract_types
    for_step = owner.id if owner.id != ctx.step.id else None
    contracts = owner.handover.all_contracts if owner.handover else []
    for index, contract in enumerate(contracts):
        kind = types.get(contract.type)
        started = time.monotonic()
        try:
            settings = kind.Settings.model_validate(contract.settings)
        except ValidationError as exc:  # `swell validate` reports these at their lines
            settings, reviewer, notes = None, None, []
            outcome = ContractResult(passed=False, error=f"invalid {contract.type} contract: {exc}")
        else:
            reviewer = kind.reviewer(settings)
            if reviewer is not None:
                ctx.emit([ctx.event(ev.ReviewStarted(index=index, reviewer=reviewer))])
            cctx = _context(ctx, result, owner, settings, index)
            cctx.must_pass = contract.must_pass
            outcome = await _run_one(kind, cctx)
            notes = cctx.notes
        events: list[ev.BaseEvent] = [ev.Warning(message=note) for note in notes]
        if reviewer is not None:
            events.append(_review_event(index, reviewer, outcome, started, for_step))
        policy = policy_of(contract)
        if outcome.passed:
            note = "reviewer unavailable; passed because fail_open" if outcome.unavailable else None
            if outcome.details.get("recovered"):
                note = "JSON recovered: " + ", ".join(outcome.details["recovered"])
            if outcome.details.get("warn"):
                note = str(outcome.details["warn"])
            events.append(
                ev.ContractPassed(
                    index=index, contract_type=contract.type, note=note, for_step=for_step
                )
            )
            ctx.emit([ctx.event(e) for e in events])
            continue
        verdict = outcome.feedback.verdict if outcome.feedback else None
        errors.append((contract.type, outcome.error or "failed"))
        events.append(
            ev.ContractFailed(
                index=index,
                contract_type=contract.type,
                policy=policy,
                error=outcome.error or "failed",
                verdict=verdict,
                for_step=for_step,
            )
        )
        ctx.emit([ctx.event(e) for e in events])
        if policy == "skip":
            return None
        if policy == "continue" or policy == "warn":
            continue
        return ContractFailure(
            policy=policy,
            index=index,
            contract_type=contract.type,
            error=outcome.error or "failed",
            owner=owner,
            rework_step=contract.rework_step or (owner.retry.rework_step if owner.retry else None),
            reviewer=reviewer,
            feedback=outcome.feedback,
        )
    return None


def _review_event(
    index: int, reviewer: str, outcome: ContractResult, started: float, for_step: str | None
) -> ev.ReviewCompleted:
    review, feedback = outcome.review, outcome.feedback
    elapsed = int((time.monotonic() - started) * 1000)
    return ev.ReviewCompleted(
        index=index,
        reviewer=reviewer,
        adapter=review.adapter if review else None,
        model=review.model if review else None,
        verdict=feedback.verdict if feedback else None,
        issues=list(feedback.issues) if feedback else [],
        suggestions=list(feedback.suggestions) if feedback else [],
        confidence=feedback.confidence if feedback else None,
        summary=feedback.summary if feedback else None,
        error=None if outcome.passed else outcome.error,
        tokens_in=review.tokens_in if review else 0,
        tokens_out=review.tokens_out if review else 0,
        cost_usd=review.cost_usd if review else 0.0,
        duration_ms=review.duration_ms if review and review.attempts else elapsed,
        for_step=for_step,
    )


def requirements(ctx: VisitContext) -> str:
    """What the step's prompt says of the checks its work will meet, before it works: a
    block per contract that has something to say (a JSON schema, a test command, the
    judge's criteria), as Wave appends "Output Requirements" to the prompt."""
    types = ctx.services.contract_types
    contracts = ctx.step.handover.all_contracts if ctx.step.handover else []
    before = StepResult(outcome="success")  # nothing was done yet
    blocks = []
    for index, contract in enumerate(contracts):
        if contract.type not in types:
            continue
        kind = types.get(contract.type)
        try:
            settings = kind.Settings.model_validate(contract.settings)
        except ValidationError:
            continue  # the check after the visit reports it
        text = kind.brief(_context(ctx, before, ctx.step, settings, index))
        if text:
            blocks.append(f"### Check {index + 1}: {contract.type}\n{text}")
    if not blocks:
        return ""
    return "\n## Output requirements\n" + "\n\n".join(blocks) + "\n"


def rework_header(request: ev.ReworkRequested, feedback_in_workspace: str | None) -> str:
    """The block a rework step's prompt begins with."""
    feedback = request.feedback
    if feedback is not None:
        lines = [
            f"The implementation was reviewed by {request.reviewer} and needs rework.",
            f"Review verdict: {feedback.verdict}",
        ]
        if feedback.issues:
            lines.append("Issues:")
            for issue in feedback.issues:
                where = issue.file or ""
                if where and issue.line is not None:
                    where += f":{issue.line}"
                lines.append(
                    f"- [{issue.severity}] {issue.detail}" + (f" ({where})" if where else "")
                )
        if feedback.suggestions:
            lines.append("Suggestions:")
            lines += [f"- {s}" for s in feedback.suggestions]
    elif request.contract_type:
        lines = [
            f"The output of step '{request.for_step}' failed its {request.contract_type} contract "
            "and needs rework.",
            f"Error: {request.reason}",
        ]
    else:  # the step itself failed all its attempts (`retry.on_failure: rework`)
        lines = [
            f"Step '{request.for_step}' failed all its attempts and needs rework.",
            f"Error: {request.reason}",
        ]
    if feedback_in_workspace:
        lines.append(f"Full review: {feedback_in_workspace}")
    return "\n".join(lines) + "\n\n"


__all__ = ["attempt_context", "check", "policy_of", "requirements", "rework_header"]
