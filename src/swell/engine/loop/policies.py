"""The rules a run is held to, each written once: how a run ends, the circuit
breaker, which rework a visit carries out, and what a step's `retry:` makes of a
failed visit.

Pure functions of the run's state and what happened; `completion.Decisions`, the
state's fold, visits and the loop step call them (engine/loop/retry.py has the arithmetic
of attempts and backoff they use).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from swell.engine.loop.retry import attempt_of, max_attempts
from swell.events import models as ev
from swell.events.models import FinalStatus, ReviewFeedback
from swell.manifest.models import Step

if TYPE_CHECKING:
    from swell.engine.loop.decisions import Visit
    from swell.engine.loop.graph import Activation
    from swell.engine.loop.state import RunState
    from swell.engine.visit.context import StepResult


@dataclass(frozen=True)
class ContractFailure:
    """A contract failure that changes what happens next (fail, retry or rework)."""

    policy: Literal["fail", "retry", "rework", "rejected"]
    index: int  # the contract's position in the owner's list
    contract_type: str
    error: str
    owner: Step  # whose contracts (a rework visit checks another step's)
    rework_step: str | None = None  # the contract's, else the owner's `retry.rework_step`
    reviewer: str | None = None
    feedback: ReviewFeedback | None = None
    feedback_path: str | None = None  # review-feedback.json, once the visit wrote it


@dataclass(frozen=True)
class RunEnd:
    """How a run ends: a final status, or `waiting` (stopped at a gate, to be resumed),
    with the error a failed run reports."""

    status: FinalStatus | Literal["waiting"]
    error: str | None = None


# --------------------------------------------------------------------- run ends


def idle_end(state: RunState) -> RunEnd:
    """How a run ends once nothing runs and nothing can start: it succeeded, unless
    steps still wait for dependencies that never ran."""
    if state.queue:
        blocked = ", ".join(sorted({a.step_id for a in state.queue}))
        return RunEnd("failed", f"steps {blocked} wait for dependencies that never ran")
    return RunEnd("succeeded")


def final_end(state: RunState, end: RunEnd) -> RunEnd:
    """How a run that ends as `end` says it ended: a run that went on past failing
    steps (`retry.on_failure: continue`) fails even when its graph completed."""
    if end.status == "succeeded" and state.carried_failures:
        return RunEnd("failed", "; ".join(state.carried_failures))
    return end


# ------------------------------------------------------------------ the breaker


def repeats(previous: tuple[str, int] | None, error_key: str) -> int:
    """How many times in a row a step has failed with `error_key`, this failure
    included, when before it the count was `previous` (its key and count).

    The key is the normalized error (`limits.normalize_error`): it keeps failure counts
    and failing names, so a failure whose counts moved (3 failing tests, then 2) or
    that names another test is progress and starts the count again; only identical
    keys count up."""
    return previous[1] + 1 if previous is not None and previous[0] == error_key else 1


def trips(count: int, limit: int) -> bool:
    """Whether `count` identical failures in a row trip the circuit breaker."""
    return count >= limit


# ----------------------------------------------------------------------- rework


def rework_of(state: RunState, step_id: str, activation: Activation) -> ev.ReworkRequested | None:
    """The `rework.requested` a visit carries out, when a rework queued it, else None."""
    return state.reworks.get(step_id) if activation.reason == "rework" else None


# ------------------------------------------------------------------------ retry


@dataclass(frozen=True)
class Attempted:
    """A failed visit that the step's `retry:` covers: which attempt it was, of how
    many, and the failure (a contract's, or one standing for the visit's own)."""

    failure: ContractFailure
    attempt: int
    limit: int
    contract: bool  # a contract failed (else the visit itself did)

    @property
    def last(self) -> bool:
        return self.attempt >= self.limit

    def message(self) -> str:
        step, error = self.failure.owner.id, self.failure.error
        if self.contract:
            return f"step '{step}' still fails its contracts after {self.limit} attempts: {error}"
        if self.limit == 1:
            return f"step '{step}' failed: {error}"
        return f"step '{step}' failed all {self.limit} attempts; the last: {error}"


def attempted(
    visit: Visit, result: StepResult, retries: str | None, state: RunState
) -> Attempted | None:
    """The failure `retry:` covers, or None: a contract's `retry` (a `fail` becomes one
    when the step allows more attempts, engine/visit/handover.py), or the visit's own failure
    on a step with `retry:` whose kind a new visit can try again (not a prompt step:
    it retries its agent's passing errors itself, nor a fan-out: it retries its items)."""
    step, failure = visit.step, result.failure
    if failure is not None and failure.policy == "retry":
        limit, contract = max_attempts(step.retry, default=2), True
    elif (
        failure is None
        and step.retry is not None
        and result.outcome == "failure"
        and result.retryable
        and retries == "visit"
    ):
        limit, contract = max_attempts(step.retry), False
        failure = ContractFailure(  # no contract: what `rework` tells the rework step
            policy="fail",
            index=-1,
            contract_type="",
            error=result.error or "failure",
            owner=step,
            rework_step=step.retry.rework_step,
        )
    else:
        return None
    return Attempted(failure, attempt_of(state, step.id, visit.activation), limit, contract)


@dataclass(frozen=True)
class AfterLastAttempt:
    """What `retry.on_failure` makes of a step whose last attempt failed: fail (the
    message, when no edge takes the failure), rework it, or (neither) go on past it
    after the events that say so."""

    fail: str | None = None
    rework: ContractFailure | None = None
    events: tuple[ev.BaseEvent, ...] = ()


def after_last_attempt(visit: Visit, tried: Attempted) -> AfterLastAttempt:
    """`retry.on_failure`: `fail` (the default; `continue` for an optional step): the
    visit fails as any failed visit does; `rework` (its `rework_step` reworks it); or
    `skip`, `warn`, `continue`: the run goes on as past an optional step, with a
    warning; after `continue` on a step that is not optional, the run ends failed when
    it would have succeeded (docs/engine.md)."""
    step = visit.step
    message = tried.message()
    after = step.retry.on_failure if step.retry else None
    after = after or ("continue" if step.optional else "fail")
    if after == "rework":
        target = step.retry.rework_step if step.retry else None
        return AfterLastAttempt(rework=replace(tried.failure, rework_step=target))
    if after == "fail":
        return AfterLastAttempt(fail=message)
    stamp: dict[str, Any] = {"step_id": step.id, "visit": visit.visit}
    fails_run = after == "continue" and not step.optional
    return AfterLastAttempt(
        events=(
            ev.FailureAbsorbed(policy=after, error=message, fails_run=fails_run, **stamp),
            ev.Warning(message=f"{message}; retry.on_failure: {after}, the run goes on", **stamp),
        )
    )
