"""Which of swell's events a hook hears, and the JSON it is given (Wave's `HookEvent`
fields, plus swell's)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swell.events import models as ev

# Wave's event names (internal/hooks/hooks.go) swell sends, plus `gate_waiting`
EVENTS = (
    "run_start",
    "run_completed",
    "run_failed",
    "step_start",
    "step_completed",
    "step_failed",
    "gate_waiting",
)


def hook_event(event: ev.BaseEvent) -> str | None:
    """The hook event name `event` fires, or None."""
    if isinstance(event, ev.RunStarted):
        return "run_start"
    if isinstance(event, ev.RunFinished):
        return "run_completed" if event.status == "succeeded" else "run_failed"
    if isinstance(event, ev.StepStarted):
        return "step_start"
    if isinstance(event, ev.StepFinished):
        return "step_completed" if event.outcome == "success" else "step_failed"
    if isinstance(event, ev.GateWaiting):
        return "gate_waiting"
    return None


def payload(name: str, event: ev.BaseEvent, pipeline: str, workspace: str) -> dict[str, Any]:
    """The JSON a hook receives: Wave's fields (`pipeline_id` is the run, as in Wave)
    and swell's (`run_id`, `pipeline`, `seq`, `ts`, `status`, `gate`)."""
    body: dict[str, Any] = {
        "type": name,
        "pipeline_id": event.run_id,
        "run_id": event.run_id,
        "pipeline": pipeline,
        "step_id": event.step_id or "",
        "visit": event.visit,
        "workspace": workspace,
        "seq": event.seq,
        "ts": event.ts,
    }
    if isinstance(event, ev.RunStarted):
        body["input"] = event.input
    if isinstance(event, ev.RunFinished):
        body.update(status=event.status, error=event.error or "", visits=event.visits)
    if isinstance(event, ev.StepFinished):
        body.update(outcome=event.outcome, error=event.error or "", exit_code=event.exit_code)
    if isinstance(event, ev.GateWaiting):
        body["gate"] = {
            "type": event.gate_type,
            "message": event.message,
            "choices": [c.model_dump() for c in event.choices],
            "default": event.default,
            "deadline": event.deadline,
        }
    return body


def fired(events: Sequence[ev.BaseEvent]) -> list[tuple[str, ev.BaseEvent]]:
    found = []
    for event in events:
        name = hook_event(event)
        if name is not None:
            found.append((name, event))
    return found
