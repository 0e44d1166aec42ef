"""The run loop's pure decisions (engine/loop/decisions.py): state and what happened in,
events and what runs next out. No runner, no processes, no clock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from manifest_helpers import ProjectDir, make_project

from swell.engine.loop.decisions import Completion, Decisions, Limits, Visit
from swell.engine.loop.graph import Activation, Graph
from swell.engine.loop.policies import ContractFailure, RunEnd
from swell.engine.loop.state import RunState
from swell.engine.steps.registry import default_step_kinds
from swell.engine.visit.context import StepResult
from swell.events import models as ev

PIPELINE = """
kind: WavePipeline
steps:
  - id: implement
    script: echo
  - id: test
    dependencies: [implement]
    script: echo
    output:
      context:
        passed: "{{ exit_code == 0 }}"
  - id: check
    type: conditional
    dependencies: [test]
    edges:
      - {target: _complete, condition: context.passed=true}
      - {target: implement}
  - id: lint
    optional: true
    script: echo
  - id: docs
    dependencies: [lint]
    script: echo
  - id: fixer
    rework_only: true
    script: echo
  - id: approve
    gate:
      choices:
        - {key: ship, label: Ship, target: _complete}
        - {key: again, label: Again, target: implement}
"""


@pytest.fixture
def decide(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Decisions:
    proj: ProjectDir = make_project(tmp_path, monkeypatch)
    proj.pipeline(PIPELINE)
    _, loaded = proj.load()
    kinds = default_step_kinds()
    return Decisions(Graph(loaded.pipeline, kinds.of), kinds, Limits(2, 3, 50))


def state(*events: ev.BaseEvent) -> RunState:
    """The state after `events` (numbered as a runner would)."""
    s = RunState("r")
    for seq, event in enumerate(events, start=1):
        event.seq = seq
        s.apply(event)
    return s


def started(step: str, visit: int = 1, **kw: Any) -> list[ev.BaseEvent]:
    return [
        ev.StepQueued(step_id=step, reason=kw.pop("reason", "entry"), **kw),
        ev.StepStarted(step_id=step, visit=visit, kind="command"),
    ]


def finished(
    step: str, visit: int = 1, outcome: ev.Outcome = "success", **kw: Any
) -> list[ev.BaseEvent]:
    return [
        *started(step, visit),
        ev.StepFinished(step_id=step, visit=visit, outcome=outcome, **kw),
    ]


def visit(
    decide: Decisions, step: str, number: int = 1, reason: ev.ActivationReason = "entry", **kw: Any
) -> Visit:
    return Visit(decide.graph.steps[step], number, Activation(step, reason, **kw))


def kinds_of(events: list[ev.BaseEvent]) -> list[str]:
    return [str(getattr(e, "type", "")) for e in events]


# ------------------------------------------------------------------------- complete


@pytest.mark.parametrize(
    ("step", "result", "expected_types", "queued"),
    [
        # success: its end, its round, and the dependents whose dependencies are done
        ("implement", StepResult("success"), ["step.finished", "round.recorded", "step.queued"], ["test"]),
        # a failure is handled by the conditional router that depends on it
        ("test", StepResult("failure", error="exit code 1", exit_code=1, outputs={"exit_code": 1}),
         ["context.set", "step.finished", "round.recorded", "step.queued"], ["check"]),
        # an optional failure counts as done: its dependents run
        ("lint", StepResult("failure", error="exit 3"), ["step.finished", "round.recorded", "step.queued"], ["docs"]),
    ],
)  # fmt: skip
def test_a_finished_visit_records_its_end_and_queues_what_follows(
    decide: Decisions, step: str, result: StepResult, expected_types: list[str], queued: list[str]
) -> None:
    s = state(*started(step))
    done = decide.complete(visit(decide, step), result, 12, s)
    assert kinds_of(done.events) == expected_types
    assert [e.step_id for e in done.events if isinstance(e, ev.StepQueued)] == queued
    assert done.end is None
    end = next(e for e in done.events if isinstance(e, ev.StepFinished))
    assert end.duration_ms == 12 and end.outcome == result.outcome


def test_a_failure_nothing_handles_fails_the_run_and_counts_for_the_breaker(
    decide: Decisions,
) -> None:
    s = state(*finished("implement"), *started("docs"))
    done = decide.complete(
        visit(decide, "docs"), StepResult("failure", error="exit code 2 at 10:01:02"), 5, s
    )
    assert done.end == RunEnd("failed", "step 'docs' failed: exit code 2 at 10:01:02")
    end = next(e for e in done.events if isinstance(e, ev.StepFinished))
    assert end.error_key == "exit code <n> at <time>"


def test_an_optional_failure_is_not_a_breaker_failure(decide: Decisions) -> None:
    done = decide.complete(
        visit(decide, "lint"), StepResult("failure", error="x"), 1, state(*started("lint"))
    )
    end = next(e for e in done.events if isinstance(e, ev.StepFinished))
    assert end.optional_failure and end.error_key is None


def test_a_router_inherits_the_outcome_routes_and_leaves_no_round(decide: Decisions) -> None:
    s = state(*finished("test", outcome="failure"), ev.ContextSet(key="passed", value="false"))
    done = decide.complete(
        visit(decide, "check", reason="dependency", source_step="test", source_visit=1),
        StepResult("failure", error="'test' failed"),
        0,
        s,
    )
    assert kinds_of(done.events) == ["step.finished", "route.taken", "step.queued"]
    end, route, queued = done.events
    assert isinstance(end, ev.StepFinished) and end.error_key is None  # not the breaker's
    assert isinstance(route, ev.RouteTaken) and (route.target, route.condition) == (
        "implement",
        None,
    )
    assert isinstance(queued, ev.StepQueued) and (queued.reason, queued.source_step) == (
        "edge",
        "check",
    )


def test_context_set_by_a_visit_decides_its_own_routing(decide: Decisions) -> None:
    s = state(*finished("test", outcome="failure"), ev.ContextSet(key="passed", value="false"))
    test_done = decide.complete(
        visit(decide, "test", 2), StepResult("success", exit_code=0, outputs={"exit_code": 0}), 1, s
    )
    assert [(e.key, e.value) for e in test_done.events if isinstance(e, ev.ContextSet)] == [
        ("passed", "true")
    ]
    for event in test_done.events:
        s.apply(event)
    routed = decide.complete(
        visit(decide, "check", 2, reason="dependency", source_step="test", source_visit=2),
        StepResult("success"),
        0,
        s,
    )
    assert routed.end == RunEnd("succeeded")
    assert [e.target for e in routed.events if isinstance(e, ev.RouteTaken)] == ["_complete"]


def test_a_step_already_waiting_is_not_queued_twice(decide: Decisions) -> None:
    s = state(*started("implement"), ev.StepQueued(step_id="test", reason="edge"))
    done = decide.complete(visit(decide, "implement"), StepResult("success"), 1, s)
    assert not [e for e in done.events if isinstance(e, ev.StepQueued)]


def test_a_gate_choice_goes_to_its_target(decide: Decisions) -> None:
    result = StepResult("success", choice_key="again", choice_target="implement")
    done = decide.complete(visit(decide, "approve"), result, 1, state(*started("approve")))
    route = next(e for e in done.events if isinstance(e, ev.RouteTaken))
    queued = next(e for e in done.events if isinstance(e, ev.StepQueued))
    assert (route.target, route.condition) == ("implement", "choice=again")
    assert queued.reason == "choice"


@pytest.mark.parametrize(("previous", "trips"), [(1, False), (2, True)])
def test_the_breaker_trips_on_the_third_same_failure_in_a_row(
    decide: Decisions, previous: int, trips: bool
) -> None:
    history: list[ev.BaseEvent] = []
    for n in range(1, previous + 1):
        history += finished("docs", n, "failure", error_key="boom <n>")
    done = decide.complete(
        visit(decide, "docs", previous + 1),
        StepResult("failure", error="boom 7"),
        1,
        state(*history),
    )
    tripped = [e for e in done.events if isinstance(e, ev.BreakerTripped)]
    if trips:
        assert [(e.error_key, e.count) for e in tripped] == [("boom <n>", 3)]
        assert done.end == RunEnd(
            "failed",
            "circuit breaker: step 'docs' failed 3 times in a row with the same error: boom 7",
        )
    else:
        assert not tripped and done.end == RunEnd("failed", "step 'docs' failed: boom 7")


def failure(decide: Decisions, policy: str, **kw: Any) -> StepResult:
    defaults: dict[str, Any] = {
        "index": 0,
        "contract_type": "test_suite",
        "error": "tests fail",
        "owner": decide.graph.steps["implement"],
    }
    return StepResult(
        "failure",
        error="contract 1 failed",
        failure=ContractFailure(policy=policy, **(defaults | kw)),
    )  # type: ignore[arg-type]


def test_a_rework_failure_queues_the_rework_step_with_the_feedback(decide: Decisions) -> None:
    result = failure(
        decide, "rework", rework_step="fixer", reviewer="critic", feedback_path="/r/f.json"
    )
    done = decide.complete(visit(decide, "implement"), result, 1, state(*started("implement")))
    rework, queued = done.events[-2:]
    assert isinstance(rework, ev.ReworkRequested) and isinstance(queued, ev.StepQueued)
    assert (rework.step_id, rework.for_step, rework.for_visit) == ("fixer", "implement", 1)
    assert (rework.reviewer, rework.feedback_path, rework.reason) == (
        "critic",
        "/r/f.json",
        "tests fail",
    )
    assert (queued.step_id, queued.reason) == ("fixer", "rework")
    assert not [e for e in done.events if isinstance(e, ev.RouteTaken)]
    assert done.end is None


def test_a_rework_without_a_target_fails_the_run(decide: Decisions) -> None:
    done = decide.complete(
        visit(decide, "implement"), failure(decide, "rework"), 1, state(*started("implement"))
    )
    assert done.end == RunEnd("failed", "step 'implement' needs rework but no rework_step is set")


def test_a_reworked_step_that_passes_goes_on_as_its_owner(decide: Decisions) -> None:
    s = state(
        *finished("implement", outcome="failure"),
        ev.ReworkRequested(
            step_id="fixer", for_step="implement", for_visit=1, contract_type="x", reason="r"
        ),
        *started("fixer", reason="rework", source_step="implement", source_visit=1),
    )
    done = decide.complete(
        visit(decide, "fixer", reason="rework", source_step="implement", source_visit=1),
        StepResult("success"),
        1,
        s,
    )
    queued = [(e.step_id, e.source_step) for e in done.events if isinstance(e, ev.StepQueued)]
    assert queued == [("test", "implement")]


@pytest.mark.parametrize(("attempts_so_far", "gives_up"), [(0, False), (1, True)])
def test_a_retry_failure_runs_the_step_again_until_its_attempts_are_used(
    decide: Decisions, attempts_so_far: int, gives_up: bool
) -> None:
    history = [*started("implement")]
    this = visit(decide, "implement")
    if attempts_so_far:  # visit 1 failed and asked for attempt 2: this is visit 2
        retry = {"source_step": "implement", "source_visit": 1}
        history += [
            ev.StepFinished(step_id="implement", visit=1, outcome="failure"),
            ev.RetryRequested(step_id="implement", visit=1, attempt=2, max_attempts=2, reason="r"),
            ev.StepQueued(step_id="implement", reason="retry", **retry),
            ev.StepStarted(step_id="implement", visit=2, kind="command", **retry),
        ]
        this = visit(decide, "implement", 2, "retry", **retry)
    done = decide.complete(this, failure(decide, "retry"), 1, state(*history))
    if gives_up:
        assert done.end == RunEnd(
            "failed", "step 'implement' still fails its contracts after 2 attempts: tests fail"
        )
    else:
        retry = next(e for e in done.events if isinstance(e, ev.RetryRequested))
        assert (retry.attempt, retry.max_attempts) == (2, 2) and done.end is None
        assert [(e.step_id, e.reason) for e in done.events if isinstance(e, ev.StepQueued)] == [
            ("implement", "retry")
        ]


# ------------------------------------------------------------------------- starting


def test_start_ready_fills_free_slots_and_skips_what_cannot_start(decide: Decisions) -> None:
    s = state(
        ev.StepQueued(step_id="implement", reason="entry"),
        ev.StepQueued(step_id="test", reason="edge"),  # its dependency has not finished
        ev.StepQueued(step_id="lint", reason="entry"),
        ev.StepQueued(step_id="approve", reason="entry"),  # no slot left (limit 2)
    )
    starts = decide.start_ready(s, running=set())
    assert [(v.step.id, v.visit) for v in starts.visits] == [("implement", 1), ("lint", 1)]
    assert [(e.step_id, e.detail) for e in starts.events] == [
        ("implement", "echo"),
        ("lint", "echo"),
    ]
    assert decide.start_ready(s, running={"implement"}).visits[0].step.id == "lint"


def test_start_ready_checks_limits_before_a_step_is_entered(decide: Decisions) -> None:
    history: list[ev.BaseEvent] = []
    for n in range(1, 11):
        history += finished("implement", n)
    history.append(ev.StepQueued(step_id="implement", reason="edge"))
    starts = decide.start_ready(state(*history), running=set())
    assert starts.end == RunEnd(
        "failed", "step 'implement' reached its max_visits limit (10 of 10 visits)"
    )
    assert not starts.visits and isinstance(starts.events[0], ev.LimitExceeded)


def test_max_step_visits_counts_the_visits_started_together(decide: Decisions) -> None:
    tight = Decisions(decide.graph, decide.kinds, Limits(5, 3, max_step_visits=1))
    s = state(
        ev.StepQueued(step_id="implement", reason="entry"),
        ev.StepQueued(step_id="lint", reason="entry"),
    )
    starts = tight.start_ready(s, running=set())
    assert starts.end == RunEnd(
        "failed",
        "pipeline reached max_step_visits (1 of 1 visits in total) before entering step 'lint'",
    )


# ------------------------------------------------------------------- resume and stop


def test_resume_interrupts_and_requeues_work_but_continues_gates(decide: Decisions) -> None:
    s = state(
        *started("implement"),
        *started("approve"),
        ev.GateWaiting(step_id="approve", visit=1, gate_type="approval"),
    )
    resumed = decide.resume(s, cleaned={("implement", 1)})
    events, continuing = resumed.events, resumed.continuing
    assert kinds_of(events) == ["run.resumed", "step.interrupted", "step.queued"]
    assert (
        events[1].reason
        == "the process running this visit ended; the processes it left behind were stopped"
    )  # type: ignore[attr-defined]
    assert [(v.step.id, v.activation.reason) for v in continuing] == [("approve", "resume")]
    assert continuing[0].resumed is not None and continuing[0].resumed.gate is not None


@pytest.mark.parametrize(("status", "requeued"), [("interrupted", True), ("cancelled", False)])
def test_stop_requeues_running_visits_only_when_interrupted(
    decide: Decisions, status: ev.FinalStatus, requeued: bool
) -> None:
    s = state(*started("implement"))
    stopped = decide.stop(s, [visit(decide, "implement")], status, 10)
    events = stopped.events
    assert stopped.end == RunEnd(status)
    assert ("step.queued" in kinds_of(events)) is requeued
    assert events[-1] == ev.RunFinished(
        status=status,
        visits=0,
        duration_ms=10,
        error="interrupted; continue with `swell resume`" if requeued else "cancelled",
    )


def test_stopping_at_an_undecided_gate_leaves_the_run_waiting(decide: Decisions) -> None:
    s = state(*started("approve"), ev.GateWaiting(step_id="approve", visit=1, gate_type="approval"))
    assert decide.stop(s, [visit(decide, "approve")], "interrupted", 10) == Completion(
        [ev.RunWaiting(gates=["approve"])],  # a resumed run is `running` until it says so
        RunEnd("waiting"),
    )
    s.apply(ev.RunWaiting(gates=["approve"], seq=s.seq + 1))
    assert decide.stop(s, [visit(decide, "approve")], "interrupted", 10) == Completion(
        [], RunEnd("waiting")
    )


def test_finish_interrupts_what_still_runs(decide: Decisions) -> None:
    running = [visit(decide, "lint")]
    events = decide.finish(state(*started("lint")), running, RunEnd("failed", "boom"), 7)
    assert kinds_of(events) == ["step.interrupted", "run.finished"]
    assert events[0].reason == "run failed while this visit ran"  # type: ignore[attr-defined]
