"""The step boundary: a visit's contracts, in order, cheap ones first by convention.

Each contract either passes or fails with a policy (`on_failure`): `fail` (default),
`retry` (the step again, with the error), `rework` (the `rework_step`, then the
contracts again), `continue`/`warn` (record and go on), `skip` (stop checking, pass).
Checking stops at the first failure whose policy is not continue/warn/skip.
"""

from __future__ import annotations

import functools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from swell.contracts.base import AgentAnswer, ContractContext, ContractResult
from swell.engine.agents import drive, helper_request, make_adapter, permissions
from swell.engine.context import StepResult, VisitContext
from swell.errors import SwellError
from swell.events import models as ev
from swell.manifest.models import Contract, Step

POLICIES = ("fail", "retry", "rework", "continue", "warn", "skip")


@dataclass
class Failure:
    """A contract failure that changes what happens next (fail, retry or rework)."""

    policy: str
    index: int
    contract: Contract
    result: ContractResult
    owner: Step  # whose contracts (a rework visit checks another step's)


def policy_of(contract: Contract) -> str:
    if contract.on_failure:
        return contract.on_failure
    return "warn" if contract.must_pass is False else "fail"


def _artifacts(ctx: VisitContext, result: StepResult) -> dict[str, str]:
    """Artifact name -> path: every step's latest, then this step's injected ones, then
    what this visit just wrote (so the nearest wins)."""
    found: dict[str, str] = {}
    for arts in ctx.state.artifacts.values():
        found.update(arts)
    found.update(ctx.namespace.get("artifacts", {}))
    for event in result.events:
        if isinstance(event, ev.ArtifactWritten) and event.name != "output":
            found[event.name] = event.path
    return found


async def _run_agent(
    ctx: VisitContext,
    persona_name: str,
    system: str,
    prompt: str,
    schema: dict[str, Any] | None,
    timeout: float,
    model: str | None,
) -> AgentAnswer:
    """Run a persona for a contract (a reviewer): its own adapter, permissions and prompt."""
    manifest = ctx.plan.project.manifest
    persona = manifest.personas.get(persona_name)
    if persona is None:
        return AgentAnswer(
            success=False, error=f"unknown persona '{persona_name}'", error_kind="agent"
        )
    adapter_name = persona.adapter or ""
    try:
        adapter = make_adapter(ctx, adapter_name)
    except SwellError as exc:
        # a configuration problem: not "unavailable", so fail_open won't hide it
        return AgentAnswer(success=False, error=str(exc), error_kind="agent")
    config = manifest.adapters.get(adapter_name)
    # reviews are cheap by default: the adapter's cheapest tier unless a model is named
    cheapest = config.tier_models.get("cheapest") if config else None
    chosen = model or persona.model or cheapest or (config.default_model if config else None)
    allowed, denied = permissions(ctx, persona, adapter_name)
    request = helper_request(
        ctx,
        adapter,
        persona,
        role="review",
        system=system,
        prompt=prompt,
        visit=ctx.visit,
        model=chosen,
        allowed_tools=allowed,
        denied_tools=denied,
        json_schema=schema,
        timeout_s=timeout,
        temperature=persona.temperature,
    )
    result = (await drive(adapter, request, None)).result
    if result is None:
        return AgentAnswer(
            success=False, error="the reviewer ended without a result", error_kind="crash"
        )
    return AgentAnswer(
        success=result.success,
        text=result.text,
        structured=result.structured,
        error=result.error,
        error_kind=result.error_kind,
        tokens_in=result.usage.input_tokens + result.usage.cache_read_tokens,
        tokens_out=result.usage.output_tokens,
        cost_usd=result.usage.cost_usd or 0.0,
        adapter=adapter_name,
        model=chosen,
    )


def _context(
    ctx: VisitContext, result: StepResult, owner: Step, contract: Contract, index: int
) -> ContractContext:
    return ContractContext(
        contract=contract,
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
        default_timeout=ctx.timeout_seconds(),
        run_agent=functools.partial(_run_agent, ctx),
    )


async def check(ctx: VisitContext, result: StepResult, owner: Step) -> Failure | None:
    """Run `owner`'s contracts for this visit; the failure that stops the visit, if any."""
    types = ctx.services.contract_types
    for_step = owner.id if owner.id != ctx.step.id else None
    contracts = owner.handover.all_contracts if owner.handover else []
    for index, contract in enumerate(contracts):
        reviewer = contract.reviewer or contract.persona
        if contract.type == "agent_review":
            ctx.emit([ctx.event(ev.ReviewStarted(index=index, reviewer=reviewer or "?"))])
        started = time.monotonic()
        cctx = _context(ctx, result, owner, contract, index)
        try:
            outcome = await types.get(contract.type)(cctx)
        except Exception as exc:
            outcome = ContractResult(passed=False, error=f"contract error: {exc!r}")
        events: list[ev.BaseEvent] = [ev.Warning(message=note) for note in cctx.notes]
        if contract.type == "agent_review":
            events.append(_review_event(index, reviewer or "?", outcome, started, for_step))
        policy = policy_of(contract)
        if outcome.passed:
            note = "reviewer unavailable; passed because fail_open" if outcome.unavailable else None
            events.append(
                ev.ContractPassed(
                    index=index, contract_type=contract.type, note=note, for_step=for_step
                )
            )
            ctx.emit([ctx.event(e) for e in events])
            continue
        verdict = outcome.feedback.verdict if outcome.feedback else None
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
        if policy in ("continue", "warn"):
            continue
        return Failure(policy, index, contract, outcome, owner)
    return None


def _review_event(
    index: int, reviewer: str, outcome: ContractResult, started: float, for_step: str | None
) -> ev.ReviewCompleted:
    details, feedback = outcome.details, outcome.feedback
    return ev.ReviewCompleted(
        index=index,
        reviewer=reviewer,
        adapter=details.get("adapter"),
        model=details.get("model"),
        verdict=feedback.verdict if feedback else None,
        issues=[i.model_dump() for i in feedback.issues] if feedback else [],
        suggestions=list(feedback.suggestions) if feedback else [],
        confidence=feedback.confidence if feedback else None,
        summary=feedback.summary if feedback else None,
        error=None if outcome.passed else outcome.error,
        tokens_in=int(details.get("tokens_in", 0)),
        tokens_out=int(details.get("tokens_out", 0)),
        cost_usd=float(details.get("cost_usd", 0.0)),
        duration_ms=int(details.get("duration_ms", (time.monotonic() - started) * 1000)),
        for_step=for_step,
    )


def write_feedback(
    run_dir: Path, failure: Failure, step_id: str, visit: int
) -> tuple[Path, dict[str, Any]]:
    """The failure as the artifact `review-feedback.json` of the failing visit."""
    contract, outcome = failure.contract, failure.result
    data: dict[str, Any] = {
        "step": failure.owner.id,
        "contract": {"index": failure.index, "type": contract.type},
        "reviewer": contract.reviewer or contract.persona,
        "error": outcome.error,
    }
    if outcome.feedback is not None:
        data |= outcome.feedback.model_dump()
    path = run_dir / step_id / str(visit) / "review-feedback.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path, data


def rework_header(request: ev.ReworkRequested, feedback_in_workspace: str | None) -> str:
    """The block a rework step's prompt begins with."""
    data = request.feedback or {}
    if data.get("verdict"):
        lines = [
            f"The implementation was reviewed by {request.reviewer} and needs rework.",
            f"Review verdict: {data['verdict']}",
        ]
        issues = data.get("issues") or []
        if issues:
            lines.append("Issues:")
            for issue in issues:
                where = issue.get("file") or ""
                if where and issue.get("line") is not None:
                    where += f":{issue['line']}"
                lines.append(
                    f"- [{issue['severity']}] {issue['detail']}" + (f" ({where})" if where else "")
                )
        suggestions = data.get("suggestions") or []
        if suggestions:
            lines.append("Suggestions:")
            lines += [f"- {s}" for s in suggestions]
    else:
        lines = [
            f"The output of step '{request.for_step}' failed its {request.contract_type} contract "
            "and needs rework.",
            f"Error: {request.reason}",
        ]
    if feedback_in_workspace:
        lines.append(f"Full review: {feedback_in_workspace}")
    return "\n".join(lines) + "\n\n"


def retry_block(request: ev.RetryRequested) -> str:
    return (
        f"RETRY CONTEXT (attempt {request.attempt} of {request.max_attempts})\n"
        f"Your previous attempt failed its checks:\n{request.reason}\n\n"
    )


__all__ = [
    "POLICIES",
    "Failure",
    "check",
    "policy_of",
    "retry_block",
    "rework_header",
    "write_feedback",
]
