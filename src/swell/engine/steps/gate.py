"""`gate:` steps: wait for a person (approval) or for time (timer).

An approval is found in the store (`swell approve` from another terminal, later the
dashboard), asked for on this terminal when one is attached, or given up front with
`--auto-approve`. The wait survives the process: `swell resume` picks it up.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from swell.engine.steps.base import StepKind
from swell.engine.visit.context import GateDecision, StepResult, VisitContext
from swell.errors import Problem
from swell.events.models import BaseEvent, GateChoiceInfo, GateResolved, GateWaiting, RunWaiting
from swell.manifest.durations import parse_duration
from swell.manifest.lint_context import LintScope
from swell.manifest.models import Gate, Step
from swell.templates.render import render_text

TERMINALS = ("_complete", "_fail")


def _deadline(gate: Gate) -> datetime | None:
    if gate.timeout is None:
        return None
    return datetime.now(UTC) + timedelta(seconds=parse_duration(gate.timeout))


def _resolve(gate: Gate, decision: GateDecision, ctx: VisitContext) -> StepResult:
    return resolve(gate, decision, ctx.step.id, ctx.visit)


def resolve(gate: Gate, decision: GateDecision, step_id: str, visit: int) -> StepResult:
    """The gate visit's result for `decision`; also for a wait kept elsewhere (a Temporal
    workflow's update or timer, executors/temporal/)."""
    choice = None
    if decision.decision == "approved":
        key = decision.choice or gate.default or (gate.choices[0].key if gate.choices else None)
        choice = next((c for c in gate.choices if c.key == key), None)
        if key and gate.choices and choice is None:
            decision = GateDecision("rejected", reason=f"unknown choice '{key}'", by=decision.by)
    resolved = GateResolved(
        decision=decision.decision,
        choice=choice.key if choice else None,
        target=choice.target if choice else None,
        reason=decision.reason,
        by=decision.by,
        step_id=step_id,
        visit=visit,
    )
    approved = decision.decision == "approved"
    return StepResult(
        outcome="success" if approved else "failure",
        error=None
        if approved
        else f"gate {decision.decision}: {decision.reason or 'no reason given'}",
        events=[resolved],
        choice_key=choice.key if choice else None,
        choice_target=choice.target if choice else None,
    )


def timed_out(gate: Gate) -> GateDecision:
    """The decision a gate takes when its timeout passes."""
    if gate.type == "timer":
        return GateDecision("approved", reason="timer elapsed", by="timer")
    if gate.default:
        return GateDecision(
            "approved", choice=gate.default, reason="timed out; default choice", by="timeout"
        )
    return GateDecision("timeout", reason="no decision before the gate's timeout", by="timeout")


class GateKind(StepKind):
    name = "gate"
    retries = None
    changes_workspace = False

    def choice_targets(self, step: Step) -> list[str | None]:
        return [c.target for c in step.gate.choices] if step.gate else []

    def problems(self, scope: LintScope) -> list[Problem]:
        gate = scope.step.gate
        if gate is None:
            return []
        found: list[Problem] = []
        if gate.type in ("pr_merge", "ci_pass"):
            found.append(
                scope.problem(("gate", "type"), f"gate type `{gate.type}` is not supported yet")
            )
        keys = [c.key for c in gate.choices]
        for j, choice in enumerate(gate.choices):
            if keys.count(choice.key) > 1:
                found.append(
                    scope.problem(
                        ("gate", "choices", j, "key"), f"duplicate choice key '{choice.key}'"
                    )
                )
            if choice.target and choice.target not in scope.ids and choice.target not in TERMINALS:
                found.append(
                    scope.problem(
                        ("gate", "choices", j, "target"),
                        f"choice targets unknown step '{choice.target}'",
                    )
                )
        if gate.default and gate.choices and gate.default not in keys:
            found.append(
                scope.problem(("gate", "default"), f"default '{gate.default}' is not a choice key")
            )
        if gate.timeout is not None:
            try:
                parse_duration(gate.timeout)
            except ValueError as exc:
                found.append(scope.problem(("gate", "timeout"), str(exc)))
        elif gate.type == "timer":
            found.append(scope.problem(("gate",), "a timer gate needs a timeout"))
        return found

    async def run(self, ctx: VisitContext) -> StepResult:
        return await _wait(ctx)


def gate_message(step: Step, namespace: dict[str, Any]) -> str:
    """What the gate asks, rendered with a visit's template variables."""
    gate = step.gate or Gate()
    return render_text(gate.message or gate.prompt or f"Continue past '{step.id}'?", namespace).text


def waiting_events(
    gate: Gate, step_id: str, visit: int, message: str, deadline: datetime | None
) -> list[BaseEvent]:
    """What a gate that starts to wait records: its question, and that the run waits."""
    waiting = GateWaiting(
        gate_type=gate.type,
        message=message,
        choices=[GateChoiceInfo(key=c.key, label=c.label, target=c.target) for c in gate.choices],
        deadline=deadline.isoformat().replace("+00:00", "Z") if deadline else None,
        default=gate.default,
        step_id=step_id,
        visit=visit,
    )
    return [waiting, RunWaiting(gates=[step_id])]


def waits_for_decision(gate: Gate, auto_approve: bool) -> bool:
    """Whether the gate waits at all (an `auto` gate, or an approval under
    `--auto-approve`, is approved at once)."""
    return not (gate.auto or (auto_approve and gate.type == "approval"))


async def _wait(ctx: VisitContext) -> StepResult:
    gate = ctx.step.gate or Gate()
    message = gate_message(ctx.step, ctx.namespace)
    if not waits_for_decision(gate, ctx.plan.options.auto_approve):
        return _resolve(gate, GateDecision("approved", reason="auto-approved", by="auto"), ctx)

    if ctx.resumed is not None and ctx.resumed.gate is not None:
        stored = ctx.resumed.gate.deadline
        deadline = datetime.fromisoformat(stored.replace("Z", "+00:00")) if stored else None
    else:
        deadline = _deadline(gate)
        ctx.emit(waiting_events(gate, ctx.step.id, ctx.visit, message, deadline))

    prompt_task: asyncio.Task[GateDecision | None] | None = None
    if gate.type == "approval" and ctx.services.prompter is not None:
        prompt_task = asyncio.create_task(
            ctx.services.prompter.ask(ctx.plan.run_id, ctx.step, message)
        )
    # nobody here is asked and nothing should wait: a decision made elsewhere is taken,
    # else the visit stays open and the run stops `waiting` (engine/loop/runner.py)
    stops = gate.type == "approval" and prompt_task is None and ctx.services.stop_at_gates
    poll = ctx.plan.options.gate_poll_seconds
    try:
        while True:
            if gate.type == "approval" and ctx.services.gates is not None:
                found = ctx.services.gates.gate_decision(ctx.plan.run_id, ctx.step.id, ctx.visit)
                if found is not None:
                    return _resolve(gate, found, ctx)
            if prompt_task is not None and prompt_task.done():
                answer = prompt_task.result()
                if answer is not None:
                    return _resolve(gate, answer, ctx)
                prompt_task = None
            now = datetime.now(UTC)
            if deadline is not None and now >= deadline:
                return _resolve(gate, timed_out(gate), ctx)
            if stops:
                return StepResult(outcome="failure", waiting=True)
            wait = poll if deadline is None else min(poll, (deadline - now).total_seconds())
            await asyncio.sleep(max(wait, 0.0))
    finally:
        if prompt_task is not None and not prompt_task.done():
            prompt_task.cancel()


KIND = GateKind()
