"""`type: event_contains`: the visit's event log shows what had to happen.

`events: [{state, contains?}]`: each pattern must match at least one event of the
visit being checked (from its start up to this contract: the agent's text and tool
calls, warnings, written artifacts, earlier contracts' results, ...). `state` is the
event's type as `swell logs -o json` shows it (`agent.tool_call`, `warning`,
`contract.passed`, ...) or one of Wave's state names that has a swell counterpart
(`stream_activity`, `contract_passed`, `contract_failed`, `review_started`,
`review_completed`). Events the run loop records around a visit (`step.started`,
`step.finished`, `run.*`, `route.taken`, ...) are not the visit's: `swell validate`
rejects them. `contains`, when set, must be part of the
event's text: its fields other than the envelope, values joined by spaces (a tool
call reads `Bash pytest -q`). An empty list passes. Every missing pattern is named.

Wave searches every event of the step in the run, earlier attempts included; swell
looks at the visit under check, so a retry cannot pass on what a failed attempt did.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any, get_args

from pydantic import BaseModel, ConfigDict, Field

from swell.contracts.base import ContractContext, ContractResult, ContractSettings, ContractType
from swell.errors import Problem
from swell.events.models import BaseEvent, Event
from swell.manifest.lint_context import LintScope

# Wave's state names -> swell's event types
WAVE_STATES = {
    "stream_activity": "agent.tool_call",
    "contract_passed": "contract.passed",
    "contract_failed": "contract.failed",
    "review_started": "review.started",
    "review_completed": "review.completed",
}
# recorded by the run loop around a visit, never by the visit: a contract cannot see them
OUTSIDE = frozenset(
    {"run.started", "run.resumed", "run.waiting", "run.finished", "step.queued", "step.started",
     "step.finished", "step.interrupted", "round.recorded", "route.taken", "retry.requested",
     "rework.requested", "failure.absorbed", "limit.exceeded", "breaker.tripped"}
)  # fmt: skip
ENVELOPE = frozenset({"type", "run_id", "seq", "ts", "step_id", "visit"})


class EventPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")

    state: str = Field(min_length=1)
    contains: str | None = None

    def describe(self) -> str:
        return self.state + (f" containing {self.contains!r}" if self.contains else "")


class EventContainsSettings(ContractSettings):
    events: list[EventPattern] = Field(default_factory=list)


@cache
def event_types() -> tuple[str, ...]:
    """Every event type swell records (the `type` of each model in the Event union)."""
    union = get_args(Event)[0]
    return tuple(sorted(model.model_fields["type"].default for model in get_args(union)))


def swell_type(state: str) -> str:
    return WAVE_STATES.get(state, state)


def text_of(event: BaseEvent) -> str:
    """What `contains` is matched against: the event's own values, in field order."""
    parts: list[str] = []
    for name, value in event:
        if name in ENVELOPE or value is None or value == "" or value == [] or value == {}:
            continue
        parts.append(value if isinstance(value, str) else json.dumps(_plain(value)))
    return " ".join(parts)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class EventContains(ContractType[EventContainsSettings]):
    name = "event_contains"
    Settings = EventContainsSettings

    def problems(self, settings: EventContainsSettings, scope: LintScope) -> list[Problem]:
        found = []
        seen = [t for t in event_types() if t not in OUTSIDE]
        for i, pattern in enumerate(settings.events):
            wanted = swell_type(pattern.state)
            if wanted in OUTSIDE:
                message = (
                    f"'{pattern.state}' is recorded by the run loop, outside the visit; "
                    "event_contains sees the visit's own events only"
                )
            elif wanted not in seen:
                message = (
                    f"unknown event state '{pattern.state}' (a visit's event types: "
                    f"{', '.join(seen)}; Wave's names: {', '.join(WAVE_STATES)})"
                )
            else:
                continue
            found.append(scope.problem(("events", i, "state"), message))
        return found

    async def check(self, ctx: ContractContext[EventContainsSettings]) -> ContractResult:
        patterns = ctx.settings.events
        if not patterns:
            return ContractResult(passed=True, details={"matched": []})
        if ctx.events is None:
            return ContractResult(
                passed=False, error="event_contains: this run gives contracts no event log"
            )
        mine = list(ctx.events())  # all of them this visit's, a rework's included
        by_type: dict[str, list[BaseEvent]] = {}
        for event in mine:
            by_type.setdefault(str(getattr(event, "type", "")), []).append(event)
        missing, matched = [], []
        for pattern in patterns:
            candidates = by_type.get(swell_type(pattern.state), [])
            needle = pattern.contains
            if any(needle is None or needle in text_of(e) for e in candidates):
                matched.append(pattern.describe())
            else:
                missing.append(pattern.describe())
        details = {"matched": matched, "missing": missing, "events_seen": len(mine)}
        if not missing:
            return ContractResult(passed=True, details=details)
        return ContractResult(
            passed=False,
            error=(
                f"event_contains: {len(missing)} expected event(s) missing from the "
                f"{len(mine)} event(s) of this visit: {'; '.join(missing)}"
            ),
            details=details,
        )


TYPE = EventContains()
