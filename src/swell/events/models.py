"""One pydantic model per event kind, joined in the discriminated union `Event`.

Also the closed vocabularies events carry (outcomes, run statuses, why a step was
queued) and the review feedback a reviewer returns, as it is recorded.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from swell.events.envelope import FREE_TEXT as FREE_TEXT
from swell.events.envelope import BaseEvent as BaseEvent
from swell.events.envelope import FreeText as FreeText
from swell.events.lineage import ForkMade as ForkMade  # time travel's events
from swell.events.lineage import RunForked as RunForked
from swell.events.lineage import RunRewound as RunRewound
from swell.events.lineage import WorkspaceCheckpoint as WorkspaceCheckpoint
from swell.events.statuses import ENDED_FOR_GOOD as ENDED_FOR_GOOD
from swell.events.statuses import FinalStatus as FinalStatus
from swell.events.statuses import RunStatus as RunStatus
from swell.events.tool_results import AgentToolResult as AgentToolResult

Outcome = Literal["success", "failure"]

ActivationReason = Literal["entry", "edge", "dependency", "choice", "resume", "retry", "rework"]
GateVerdict = Literal["approved", "rejected", "timeout"]
Policy = Literal["fail", "retry", "rework", "continue", "warn", "skip", "rejected"]
# how progress output shows a step's visits: not at all (a router: its route line
# says what it decided), one line when it starts and ends, or also its final answer
Progress = Literal["hidden", "line", "answer"]


def now_iso(moment: datetime | None = None) -> str:
    """An event's time: `moment` (else now) in UTC, to the millisecond, with a `Z`."""
    if moment is None:  # every batch of a run asks: the second's text is kept
        seconds, ms = divmod(time.time_ns() // 1_000_000, 1000)
        return f"{_second(seconds)}.{ms:03d}Z"
    moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


@lru_cache(maxsize=4)
def _second(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))


class ReviewIssue(BaseModel):
    # validators built on first use, as events' are: a run with no review builds none
    model_config = ConfigDict(extra="forbid", defer_build=True)

    severity: Literal["critical", "major", "minor"]
    file: str | None = None
    line: int | None = None
    detail: FreeText


class ReviewFeedback(BaseModel):
    """What an agent reviewer returns; its JSON schema is what reviewers are held to."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    verdict: Literal["pass", "rework", "fail"]
    issues: list[ReviewIssue] = Field(default_factory=list)
    suggestions: list[FreeText] = Field(default_factory=list)
    confidence: float = Field(ge=0.0, le=1.0)
    summary: FreeText


# ------------------------------------------------------------------------------ run


class RunStarted(BaseEvent):
    type: Literal["run.started"] = "run.started"
    pipeline: str
    input: FreeText = ""
    parent_run_id: str | None = None
    parent_step_id: str | None = None
    workspace: str = ""


class RunResumed(BaseEvent):
    type: Literal["run.resumed"] = "run.resumed"
    interrupted_steps: list[str] = Field(default_factory=list)


class RunWaiting(BaseEvent):
    type: Literal["run.waiting"] = "run.waiting"
    gates: list[str] = Field(default_factory=list)


class RunFinished(BaseEvent):
    type: Literal["run.finished"] = "run.finished"
    status: FinalStatus
    error: FreeText | None = None
    visits: int = 0
    duration_ms: int = 0


# ----------------------------------------------------------------------------- steps


class StepQueued(BaseEvent):
    """A step was activated and will run when a slot and its dependencies allow."""

    type: Literal["step.queued"] = "step.queued"
    reason: ActivationReason
    source_step: str | None = None
    source_visit: int | None = None


class StepStarted(BaseEvent):
    type: Literal["step.started"] = "step.started"
    kind: str
    progress: Progress = "line"
    persona: str | None = None
    adapter: str | None = None
    model: str | None = None
    detail: FreeText | None = None  # the command line or prompt summary, for people
    source_step: str | None = None  # the visit whose result led here
    source_visit: int | None = None


class StepFinished(BaseEvent):
    type: Literal["step.finished"] = "step.finished"
    outcome: Outcome
    error: FreeText | None = None
    error_key: FreeText | None = None  # normalized error, for the circuit breaker
    exit_code: int | None = None
    duration_ms: int = 0
    output_tail: FreeText | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    optional_failure: bool = False
    adapter: str | None = None  # an agent visit's, once resolved (StepStarted cannot know it)
    model: str | None = None


class StepInterrupted(BaseEvent):
    """A visit that never finished (crash, Ctrl-C); it does not count toward limits."""

    type: Literal["step.interrupted"] = "step.interrupted"
    reason: FreeText


class RoundRecorded(BaseEvent):
    """One finished visit as it reads in the run's history (`swell thread`)."""

    type: Literal["round.recorded"] = "round.recorded"
    round: int  # 1-based, in the order rounds were recorded in the run
    thread: str | None = None
    thread_round: int | None = None  # 1-based within the thread
    role: str  # the step id
    persona: str | None = None
    content: FreeText = ""
    metadata: Annotated[dict[str, Any], FREE_TEXT] = Field(default_factory=dict)


class ThreadContext(BaseEvent):
    """What a threaded visit was given of its thread."""

    type: Literal["thread.context"] = "thread.context"
    thread: str
    fidelity: Literal["full", "compact", "summary", "fresh"]
    requested: str
    native_resume: bool = False
    session_id: str | None = None
    rounds: int = 0
    chars: int = 0


class ThreadSummarized(BaseEvent):
    """A summary of a thread up to a round (reused while the thread has not moved on)."""

    type: Literal["thread.summarized"] = "thread.summarized"
    thread: str
    upto_round: int
    text: FreeText
    persona: str | None = None


class ContractPassed(BaseEvent):
    type: Literal["contract.passed"] = "contract.passed"
    index: int
    contract_type: str
    note: FreeText | None = None  # e.g. passed only because fail_open
    for_step: str | None = None  # set when a rework visit re-checks another step's contracts


class ContractFailed(BaseEvent):
    type: Literal["contract.failed"] = "contract.failed"
    index: int
    contract_type: str
    policy: Policy
    error: FreeText
    verdict: str | None = None
    for_step: str | None = None


class ReviewStarted(BaseEvent):
    type: Literal["review.started"] = "review.started"
    index: int
    reviewer: str


class ReviewCompleted(BaseEvent):
    """An agent review and what it cost; the store keeps these in its reviews table."""

    type: Literal["review.completed"] = "review.completed"
    index: int
    reviewer: str
    adapter: str | None = None
    model: str | None = None
    verdict: str | None = None  # None when the reviewer could not give one
    issues: list[ReviewIssue] = Field(default_factory=list)
    suggestions: list[FreeText] = Field(default_factory=list)
    confidence: float | None = None
    summary: FreeText | None = None
    error: FreeText | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    duration_ms: int = 0
    for_step: str | None = None


class ReworkRequested(BaseEvent):
    """A contract of `for_step` failed with `on_failure: rework`: `step_id` runs next,
    in that step's workspace, with the failure (and a review's feedback) in its prompt."""

    type: Literal["rework.requested"] = "rework.requested"
    for_step: str
    for_visit: int
    contract_type: str
    reason: FreeText
    reviewer: str | None = None
    feedback_path: str | None = None
    feedback: ReviewFeedback | None = None  # a reviewer's; None for a mechanical contract

    @field_validator("feedback", mode="before")
    @classmethod
    def _stored_before_typing(cls, value: Any) -> Any:
        # runs stored before this field was typed kept the whole feedback file here
        if isinstance(value, dict) and set(value) - set(ReviewFeedback.model_fields):
            if "verdict" not in value:
                return None
            return {k: v for k, v in value.items() if k in ReviewFeedback.model_fields}
        return value


class RetryRequested(BaseEvent):
    """A visit failed (or a contract did, with `on_failure: retry`) and the step's
    `retry:` allows another attempt: the step runs again, as a new visit, after
    `delay_ms` (the backoff), with the error."""

    type: Literal["retry.requested"] = "retry.requested"
    attempt: int  # the attempt about to start (2 = first retry)
    max_attempts: int
    reason: FreeText
    delay_ms: int = 0  # the wait before that attempt starts


class FailureAbsorbed(BaseEvent):
    """A step still failed after its last attempt and `retry.on_failure` (skip, warn,
    continue) lets the run go on past it; `fails_run`: the run ends failed anyway
    (`continue` on a step that is not optional)."""

    type: Literal["failure.absorbed"] = "failure.absorbed"
    policy: Literal["skip", "warn", "continue"]
    error: FreeText
    fails_run: bool = False


class RelayTriggered(BaseEvent):
    """The agent's context passed the relay threshold; it is being stopped."""

    type: Literal["relay.triggered"] = "relay.triggered"
    relay: int  # 1 for the first relay of this visit
    tokens: int
    threshold: int
    window: int
    session_id: str | None = None


class RelayCheckpoint(BaseEvent):
    type: Literal["relay.checkpoint"] = "relay.checkpoint"
    relay: int
    path: str
    size: int
    history_chars: int
    summarizer: str


class RelayResumed(BaseEvent):
    """A fresh instance started from the latest checkpoint."""

    type: Literal["relay.resumed"] = "relay.resumed"
    relay: int
    prompt_chars: int


class RouteTaken(BaseEvent):
    type: Literal["route.taken"] = "route.taken"
    target: str
    condition: FreeText | None = None
    outcome: Outcome


class ContextSet(BaseEvent):
    type: Literal["context.set"] = "context.set"
    key: str
    value: FreeText


class ArtifactWritten(BaseEvent):
    type: Literal["artifact.written"] = "artifact.written"
    name: str
    path: str
    sha256: str
    size: int
    artifact_type: str | None = None


class ChildRunStarted(BaseEvent):
    type: Literal["child.started"] = "child.started"
    child_run_id: str
    pipeline: str
    item: int | None = None  # which item of an `iterate` step (0-based), else None


# ----------------------------------------------------------------------------- gates


class GateChoiceInfo(BaseModel):
    model_config = ConfigDict(defer_build=True)

    key: str
    label: FreeText
    target: str | None = None


class GateWaiting(BaseEvent):
    type: Literal["gate.waiting"] = "gate.waiting"
    gate_type: str
    message: FreeText = ""
    choices: list[GateChoiceInfo] = Field(default_factory=list)
    deadline: str | None = None
    default: str | None = None


class GateResolved(BaseEvent):
    type: Literal["gate.resolved"] = "gate.resolved"
    decision: GateVerdict
    choice: str | None = None
    target: str | None = None
    reason: FreeText | None = None
    by: str | None = None


# ---------------------------------------------------------------------------- limits


class LimitExceeded(BaseEvent):
    type: Literal["limit.exceeded"] = "limit.exceeded"
    limit: Literal["max_visits", "max_step_visits"]
    count: int
    maximum: int


class BreakerTripped(BaseEvent):
    type: Literal["breaker.tripped"] = "breaker.tripped"
    error_key: FreeText
    count: int


class BudgetWarning(BaseEvent):
    """The run's cost first reached `runtime.cost.warn_at` (engine/loop/cost.py)."""

    type: Literal["budget.warning"] = "budget.warning"
    spent_usd: float
    warn_at: float
    message: FreeText = ""


class BudgetExceeded(BaseEvent):
    """The run's cost reached `runtime.cost.budget_ceiling`: `step_id` did not start."""

    type: Literal["budget.exceeded"] = "budget.exceeded"
    spent_usd: float
    ceiling: float
    message: FreeText = ""


class Warning(BaseEvent):
    type: Literal["warning"] = "warning"
    message: FreeText


class SandboxConnection(BaseEvent):
    """A connection a sandboxed process asked swell's egress proxy for (docs/security.md)."""

    type: Literal["sandbox.connection"] = "sandbox.connection"
    host: str
    port: int
    allowed: bool


class OutcomeRecorded(BaseEvent):
    """A deliverable a step produced (a step's `outcomes`: a PR, an issue, a URL, a
    file), read from one of its files after it succeeded."""

    type: Literal["outcome.recorded"] = "outcome.recorded"
    kind: Literal["pr", "issue", "url", "deployment", "file", "artifact"]
    label: FreeText
    value: FreeText
    description: FreeText = ""


# ---------------------------------------------------------------------------- agents


class AgentText(BaseEvent):
    type: Literal["agent.text"] = "agent.text"
    text: FreeText


class AgentToolCall(BaseEvent):
    type: Literal["agent.tool_call"] = "agent.tool_call"
    name: str
    target: FreeText | None = None  # what the tool was given
    call_id: str | None = None  # its agent.tool_result's, where the CLI reports results


class AgentUsage(BaseEvent):
    type: Literal["agent.usage"] = "agent.usage"
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None


class AgentSession(BaseEvent):
    type: Literal["agent.session"] = "agent.session"
    session_id: str


class PromptRendered(BaseEvent):
    """What an agent visit was asked: the prompt as sent (thread context included)
    and the persona's system prompt, each cut to PROMPT_CAP characters."""

    type: Literal["prompt.rendered"] = "prompt.rendered"
    prompt: FreeText
    system_prompt: FreeText | None = None
    truncated: bool = False


Event = Annotated[
    RunStarted
    | RunResumed
    | RunWaiting
    | RunFinished
    | StepQueued
    | StepStarted
    | StepFinished
    | StepInterrupted
    | RoundRecorded
    | ThreadContext
    | ThreadSummarized
    | ContractPassed
    | ContractFailed
    | ReviewStarted
    | ReviewCompleted
    | ReworkRequested
    | RetryRequested
    | FailureAbsorbed
    | RelayTriggered
    | RelayCheckpoint
    | RelayResumed
    | RouteTaken
    | ContextSet
    | ArtifactWritten
    | WorkspaceCheckpoint
    | RunForked
    | ForkMade
    | RunRewound
    | ChildRunStarted
    | GateWaiting
    | GateResolved
    | LimitExceeded
    | BreakerTripped
    | BudgetWarning
    | BudgetExceeded
    | Warning
    | SandboxConnection
    | OutcomeRecorded
    | AgentText
    | AgentToolCall
    | AgentToolResult
    | AgentUsage
    | AgentSession
    | PromptRendered,
    Field(discriminator="type"),
]


@cache
def event_adapter() -> TypeAdapter[Event]:
    """The validator of the whole union, built on first use (readers of stored events
    validate by kind and never need it)."""
    return TypeAdapter(Event)


# every event kind's model by its `type`
EVENT_TYPES: dict[str, type[BaseEvent]] = {
    cls.model_fields["type"].default: cls for cls in get_args(get_args(Event)[0])
}


@cache
def text_fields(model: type[BaseModel]) -> tuple[str, ...]:
    """The fields of `model` that hold free text (`FreeText`, or a model that has some)."""
    return tuple(
        name
        for name, info in model.model_fields.items()
        if FREE_TEXT in info.metadata or _holds_text(info.annotation)
    )


def _holds_text(annotation: Any) -> bool:
    if get_origin(annotation) is Annotated:
        return FREE_TEXT in annotation.__metadata__ or _holds_text(get_args(annotation)[0])
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return bool(text_fields(annotation))
    return any(_holds_text(arg) for arg in get_args(annotation))


# what the store keeps in columns of its own, so not in an event's stored data
ENVELOPE = frozenset({*BaseEvent.model_fields, "type"})
_NOT_STORED: set[str] = set(ENVELOPE)
_ENVELOPE_SET = frozenset(BaseEvent.model_fields)


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Parse one NDJSON event (`event_json`), or one as its fields."""
    if isinstance(data, dict):
        return event_adapter().validate_python(data)
    return event_adapter().validate_json(data)


def event_json(event: BaseEvent) -> str:
    """One NDJSON line (no newline); every field is present, unset ones as null."""
    return event.model_dump_json()


def event_data(event: BaseEvent) -> str:
    """The event as a store keeps it next to its envelope columns: a JSON object without
    the envelope (run_id, seq, ts, type, step_id, visit) and without fields that hold
    their default value. `stored_event` turns both back into the same event."""
    return event.model_dump_json(exclude=_NOT_STORED, exclude_defaults=True)


def stored_event(
    kind: str,
    data: str | bytes,
    *,
    run_id: str,
    seq: int,
    ts: str,
    step_id: str | None,
    visit: int | None,
) -> Event:
    """The event a store row holds: its `event_data` (or, in rows written before the
    store kept events this way, its whole `event_json`) and its envelope columns."""
    cls = EVENT_TYPES.get(kind)
    if cls is None:  # a kind this version does not know: the union's own error
        return parse_event({**json.loads(data), "type": kind})
    event = cls.model_validate_json(data)
    # the columns were validated when the event was stored; set them as they are
    event.__dict__.update(run_id=run_id, seq=seq, ts=ts, step_id=step_id, visit=visit)
    event.__pydantic_fields_set__ |= _ENVELOPE_SET
    return event  # type: ignore[return-value]  # cls is the Event member of that kind
