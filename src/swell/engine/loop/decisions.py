"""The run loop's decisions as pure functions: from the run's state, the graph and what
happened, the events to record and what runs next.

No clock, no files, no sink, no asyncio: durations are passed in, events come back
unstamped (the caller gives them run id, seq and time). The same decisions can
therefore run anywhere a run is driven from, a Temporal workflow included.
`Decisions` holds what does not change during a run (the graph, the step kinds, the
limits); its methods take the state and what happened.
"""

from __future__ import annotations

from collections.abc import Collection, Set
from dataclasses import dataclass, field
from typing import Any

from swell.engine.loop import cost
from swell.engine.loop.graph import Activation, Graph, Routing, VisitOutcome
from swell.engine.loop.limits import kept_error, kept_tail, normalize_error
from swell.engine.loop.policies import (
    Attempted,
    ContractFailure,
    RunEnd,
    after_last_attempt,
    attempted,
    repeats,
    rework_of,
    trips,
)
from swell.engine.loop.retry import DEFAULT_MAX_DELAY, delay_before
from swell.engine.loop.state import OpenVisit, RunState
from swell.engine.steps.registry import StepKinds
from swell.engine.visit.context import StepResult
from swell.engine.visit.output_context import evaluate_context
from swell.events import models as ev
from swell.events.models import FinalStatus
from swell.manifest.models import Step


@dataclass(frozen=True)
class Limits:
    """The run-wide limits the decisions apply."""

    concurrency: int
    breaker_limit: int
    max_step_visits: int
    budget: cost.Budget = field(default_factory=cost.Budget)  # runtime.cost
    # the longest wait between two attempts of a step whose `retry:` sets none
    # (runtime.timeouts.retry_max_delay_seconds)
    retry_max_delay: float = DEFAULT_MAX_DELAY


@dataclass(frozen=True)
class Visit:
    """One visit to run: which step, its number, what led to it."""

    step: Step
    visit: int
    activation: Activation
    resumed: OpenVisit | None = None  # a visit that continues after `swell resume`


@dataclass
class Starts:
    """Visits to launch now and the events that record them, or the limit that ends
    the run (`end`)."""

    events: list[ev.BaseEvent] = field(default_factory=list)
    visits: list[Visit] = field(default_factory=list)
    end: RunEnd | None = None


@dataclass
class Completion:
    """What happened leads to: events to record, and how the run ends when it does."""

    events: list[ev.BaseEvent]
    end: RunEnd | None = None

    def after(self, events: list[ev.BaseEvent]) -> Completion:
        """The same, after `events`."""
        return Completion([*events, *self.events], self.end)


@dataclass(frozen=True)
class Resumption:
    """How a run continues after the process running it ended: events to record, and
    the visits that continue where they were (a waiting gate, a running sub-pipeline)."""

    events: list[ev.BaseEvent]
    continuing: list[Visit]


@dataclass(frozen=True)
class Decisions:
    """The decisions of one run's loop: pure functions of the run's state."""

    graph: Graph
    kinds: StepKinds
    limits: Limits

    def start_ready(self, state: RunState, running: Set[str]) -> Starts:
        """Start queued steps whose dependencies have finished, while slots are free; a step
        never runs twice at once. Limits are checked before a step is entered."""
        out = Starts()
        busy = set(running)
        for act in state.queue:
            if len(busy) >= self.limits.concurrency:
                break
            if act.step_id in busy or not self.graph.deps_met(act.step_id, state.finished):
                continue
            step = self.graph.steps[act.step_id]
            started = len(out.visits)
            limit: tuple[ev.BaseEvent, str] | None = limit_reached(
                step, state, self.limits.max_step_visits, started=started
            ) or cost.exceeded(self.limits.budget, state.cost_usd, step.id)
            if limit is not None:
                event, message = limit
                return Starts(events=[event], end=RunEnd("failed", message))
            kind = self.kinds.of(step)
            visit = Visit(step, state.numbered[step.id] + 1, act)
            out.events.append(
                ev.StepStarted(
                    step_id=step.id,
                    visit=visit.visit,
                    kind=step.kind,
                    progress=kind.progress,
                    persona=step.persona,
                    detail=kind.detail(step),
                    source_step=act.source_step,
                    source_visit=act.source_visit,
                )
            )
            out.visits.append(visit)
            busy.add(step.id)
        return out

    def complete(
        self, visit: Visit, result: StepResult, duration_ms: int, state: RunState
    ) -> Completion:
        """The events a finished visit leads to, in order: what it set, its end, its round,
        the breaker, and the route it takes (a contract's retry or rework, or the graph)."""
        step, kind = visit.step, self.kinds.of(visit.step)
        stamp: dict[str, Any] = {"step_id": step.id, "visit": visit.visit}
        events: list[ev.BaseEvent] = list(result.events)
        context = dict(state.context)
        if step.output and step.output.context:
            values, problems = evaluate_context(step.output.context, result.outputs)
            for key, value in values.items():
                events.append(ev.ContextSet(key=key, value=value, **stamp))
                context[key] = value
            events += [ev.Warning(message=p, **stamp) for p in problems]
        failed = result.outcome == "failure"
        error_key = None
        if failed and kind.counts_for_breaker and not step.optional:
            error_key = normalize_error(kept_error(result.error) or "failure")
        events.append(
            ev.StepFinished(
                outcome=result.outcome,
                error=kept_error(result.error),
                error_key=error_key,
                exit_code=result.exit_code,
                duration_ms=duration_ms,
                output_tail=kept_tail(result.output_tail),
                tokens_in=result.tokens_in,
                tokens_out=result.tokens_out,
                cost_usd=result.cost_usd,
                optional_failure=failed and step.optional,
                adapter=result.adapter,
                model=result.model,
                **stamp,
            )
        )
        total = state.cost_usd + result.cost_usd
        warned = cost.warning(self.limits.budget, total, state.budget_warned)
        if warned is not None:
            events.append(warned.model_copy(update=stamp))
        if kind.records_round:
            events.append(round_of(visit, result, duration_ms, state))
        tried = attempted(visit, result, kind.retries, state)
        # the breaker skips attempts that are left; after the last one it adds nothing
        if error_key is not None and not (tried and tried.last):
            count = repeats(state.breaker.get(step.id), error_key)
            if trips(count, self.limits.breaker_limit):
                events.append(ev.BreakerTripped(error_key=error_key, count=count, **stamp))
                first = (result.error or "").strip().splitlines()[0] if result.error else "failure"
                message = (
                    f"circuit breaker: step '{step.id}' failed {count} times in a row "
                    f"with the same error: {first}"
                )
                return Completion(events, RunEnd("failed", message))
        failure = result.failure
        if failure is not None and failure.policy == "rejected":
            return Completion(events, RunEnd("rejected", result.error or failure.error))
        if failure is not None and failure.policy == "rework":
            return _rework(visit, failure, state, self.graph).after(events)
        absorbed, gave_up = False, None
        if tried is not None:
            if not tried.last:
                return Completion([*events, *_retry(visit, tried, self.limits.retry_max_delay)])
            after = after_last_attempt(visit, tried)
            if after.rework:
                return _rework(visit, after.rework, state, self.graph).after(events)
            events += after.events
            gave_up, absorbed = after.fail, after.fail is None
        routing = _route(visit, result, context, state, self.graph, absorbed)
        if gave_up and routing.fail and routing.route is None:
            routing.fail = gave_up  # no edge took the failure: say it had its attempts
        if routing.route:
            events.append(
                ev.RouteTaken(
                    target=routing.route.target,
                    condition=routing.route.condition,
                    outcome=result.outcome,
                    **stamp,
                )
            )
        events += queue(routing.activate, state.queue)
        if routing.fail:
            return Completion(events, RunEnd("failed", routing.fail))
        return Completion(events, RunEnd("succeeded") if routing.complete else None)

    def resume(self, state: RunState, cleaned: Set[tuple[str, int]]) -> Resumption:
        """Continue after the process running the run ended: visits it left open are
        interrupted and queued again, except a waiting gate or a running sub-pipeline,
        which continue where they were. `cleaned`: visits whose leftover processes the
        caller stopped."""
        events: list[ev.BaseEvent] = []
        continuing: list[Visit] = []
        queued = {a.step_id for a in state.queue}
        for open_visit in state.open.values():
            step_id, number = open_visit.step_id, open_visit.visit
            act = Activation(step_id, "resume", open_visit.source_step, open_visit.source_visit)
            if open_visit.gate is not None or open_visit.child_run_id is not None:
                continuing.append(Visit(self.graph.steps[step_id], number, act, open_visit))
                continue
            reason = "the process running this visit ended"
            if (step_id, number) in cleaned:
                reason += "; the processes it left behind were stopped"
            events.append(ev.StepInterrupted(step_id=step_id, visit=number, reason=reason))
            if step_id not in queued:
                queued.add(step_id)
                events += queue([act], ())
        interrupted = [e.step_id or "" for e in events if isinstance(e, ev.StepInterrupted)]
        return Resumption([ev.RunResumed(interrupted_steps=interrupted), *events], continuing)

    def finish(
        self, state: RunState, running: list[Visit], end: RunEnd, duration_ms: int
    ) -> list[ev.BaseEvent]:
        """The run ends as `end` (succeeded, failed, rejected; `policies.final_end` has
        made it what the run says): visits still running are interrupted."""
        status = end.status
        assert status != "waiting", "a run that waits has not ended"
        events: list[ev.BaseEvent] = [
            ev.StepInterrupted(
                step_id=v.step.id, visit=v.visit, reason=f"run {status} while this visit ran"
            )
            for v in running
        ]
        events.append(
            ev.RunFinished(
                status=status,
                error=end.error,
                visits=state.total,
                duration_ms=duration_ms,
            )
        )
        return events

    def stop(
        self, state: RunState, running: list[Visit], status: FinalStatus, duration_ms: int
    ) -> Completion:
        """Stop for Ctrl-C (`interrupted`) or `swell cancel` (`cancelled`). An interrupted
        run queues its running visits again for `swell resume`; waiting gates and running
        sub-pipelines stay open. When only waiting gates were open the run waits."""
        events: list[ev.BaseEvent] = []
        open_gates: list[str] = []
        queued = {a.step_id for a in state.queue}
        for visit in running:
            open_visit = state.open.get((visit.step.id, visit.visit))
            if status == "interrupted" and open_visit:
                if open_visit.gate and not open_visit.resolution:
                    open_gates.append(visit.step.id)
                    continue
                if open_visit.child_run_id:
                    continue
            events.append(
                ev.StepInterrupted(step_id=visit.step.id, visit=visit.visit, reason=f"run {status}")
            )
            if status == "interrupted" and visit.step.id not in queued:
                queued.add(visit.step.id)
                events.append(
                    ev.StepQueued(
                        step_id=visit.step.id,
                        reason="resume",
                        source_step=visit.activation.source_step,
                        source_visit=visit.activation.source_visit,
                    )
                )
        if open_gates and not events:
            # a resumed run waits again: say so, or it would read `running` once stopped
            waiting: list[ev.BaseEvent] = []
            if state.status != "waiting":
                waiting.append(ev.RunWaiting(gates=open_gates))
            return Completion(waiting, RunEnd("waiting"))
        error = "interrupted; continue with `swell resume`" if status == "interrupted" else None
        events.append(
            ev.RunFinished(
                status=status,
                visits=state.total,
                error=error or "cancelled",
                duration_ms=duration_ms,
            )
        )
        return Completion(events, RunEnd(status))


# ------------------------------------------------------------------------ helpers


def limit_reached(
    step: Step, state: RunState, max_step_visits: int, started: int = 0
) -> tuple[ev.LimitExceeded, str] | None:
    """The limit entering `step` would break, as an event and a message; `started`
    counts visits being started along with this one."""
    count = state.counted[step.id]
    if count >= step.max_visits:
        return (
            ev.LimitExceeded(
                step_id=step.id, limit="max_visits", count=count, maximum=step.max_visits
            ),
            f"step '{step.id}' reached its max_visits limit ({count} of {step.max_visits} visits)",
        )
    total = state.total + len(state.open) + started
    if total >= max_step_visits:
        return (
            ev.LimitExceeded(
                step_id=step.id, limit="max_step_visits", count=total, maximum=max_step_visits
            ),
            f"pipeline reached max_step_visits ({total} of {max_step_visits} visits in total) "
            f"before entering step '{step.id}'",
        )
    return None


def _route(
    visit: Visit,
    result: StepResult,
    context: dict[str, str],
    state: RunState,
    graph: Graph,
    absorbed: bool = False,
) -> Routing:
    """Where the visit leads; `absorbed`: its failure lets the run go on, as an
    optional step's does (`retry.on_failure` skip, warn or continue)."""
    step, failed = visit.step, result.outcome == "failure"
    rework = rework_of(state, step.id, visit.activation)
    if rework is not None and not failed:
        # the reworked step's contracts now pass: go on as that step would have
        source, source_visit, optional = rework.for_step, rework.for_visit, False
    else:
        source, source_visit = step.id, visit.visit
        optional = failed and (step.optional or absorbed)
    return graph.next_steps(
        VisitOutcome(
            source,
            source_visit,
            result.outcome,
            result.error,
            optional,
            result.choice_target,
            result.choice_key,
        ),
        context,
        state.finished | {step.id, source},
    )


def _rework(visit: Visit, failure: ContractFailure, state: RunState, graph: Graph) -> Completion:
    """The failure's rework step is queued to rework the step, with what it is told."""
    owner = failure.owner
    target = failure.rework_step
    if not target or target not in graph.steps:
        message = f"step '{owner.id}' needs rework but no rework_step is set"
        return Completion([], RunEnd("failed", message))
    rework = rework_of(state, visit.step.id, visit.activation)
    events: list[ev.BaseEvent] = [
        ev.ReworkRequested(
            step_id=target,
            for_step=owner.id,
            for_visit=rework.for_visit if rework else visit.visit,
            contract_type=failure.contract_type,
            reason=failure.error,
            reviewer=failure.reviewer,
            feedback_path=failure.feedback_path,
            feedback=failure.feedback,
        ),
        ev.StepQueued(
            step_id=target, reason="rework", source_step=visit.step.id, source_visit=visit.visit
        ),
    ]
    return Completion(events)


def _retry(visit: Visit, attempted: Attempted, max_delay: float) -> list[ev.BaseEvent]:
    """The step runs again (a new visit, after the backoff delay) with the error."""
    step, attempt = visit.step, attempted.attempt + 1
    delay = delay_before(step.retry, attempt, max_delay)
    return [
        ev.RetryRequested(
            step_id=step.id,
            visit=visit.visit,
            attempt=attempt,
            max_attempts=attempted.limit,
            reason=attempted.failure.error,
            delay_ms=round(delay * 1000),
        ),
        ev.StepQueued(
            step_id=step.id, reason="retry", source_step=step.id, source_visit=visit.visit
        ),
    ]


def queue(activations: list[Activation], queued: Collection[Activation]) -> list[ev.StepQueued]:
    """StepQueued for each activation of a step not already waiting in the queue."""
    waiting = {a.step_id for a in queued}
    events = []
    for act in activations:
        if act.step_id not in waiting:
            waiting.add(act.step_id)
            events.append(
                ev.StepQueued(
                    step_id=act.step_id,
                    reason=act.reason,
                    source_step=act.source_step,
                    source_visit=act.source_visit,
                )
            )
    return events


def round_of(
    visit: Visit, result: StepResult, duration_ms: int, state: RunState
) -> ev.RoundRecorded:
    """How the visit reads in the run's history (`swell thread`, threads)."""
    step, thread = visit.step, visit.step.thread
    failed = result.outcome == "failure"
    metadata: dict[str, Any] = {
        "outcome": result.outcome,
        "exit_code": result.exit_code,
        "tokens_in": result.tokens_in or None,
        "tokens_out": result.tokens_out or None,
        "duration_ms": duration_ms,
        **result.round_meta,
    }
    content = result.round_content if result.round_content is not None else result.output_tail
    if failed and not content:
        content = result.error
    return ev.RoundRecorded(
        step_id=step.id,
        visit=visit.visit,
        round=state.rounds + 1,
        thread=thread,
        thread_round=state.thread_rounds[thread] + 1 if thread else None,
        role=step.id,
        persona=step.persona,
        content=content or "",
        metadata={k: v for k, v in metadata.items() if v is not None},
    )
