"""A run's state rebuilt from its events, as `swell resume` does."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count

from swell.engine.loop.graph import Activation
from swell.engine.loop.state import RunState, StepSummary
from swell.events import models as ev


def numbered(*events: ev.BaseEvent) -> list[ev.BaseEvent]:
    """Give events run_id and increasing seq, as the store does."""
    seq: Iterator[int] = count(1)
    return [e.model_copy(update={"run_id": "r1", "seq": next(seq)}) for e in events]


def started(step: str, visit: int, kind: str = "command", **kw: object) -> ev.StepStarted:
    return ev.StepStarted(step_id=step, visit=visit, kind=kind, **kw)  # type: ignore[arg-type]


def finished(step: str, visit: int, outcome: str = "success", **kw: object) -> ev.StepFinished:
    return ev.StepFinished(step_id=step, visit=visit, outcome=outcome, **kw)  # type: ignore[arg-type]


KEY = "FAILED test_greeting: expected <n> attempts"

LOOP_RUN = numbered(
    ev.RunStarted(pipeline="hello", input="add a greeting"),
    ev.StepQueued(step_id="implement", reason="entry"),
    started("implement", 1),
    finished("implement", 1, exit_code=0),
    ev.StepQueued(step_id="test", reason="dependency", source_step="implement", source_visit=1),
    started("test", 1, source_step="implement", source_visit=1),
    ev.AgentText(step_id="test", visit=1, text="ignored by the fold"),
    ev.ContextSet(step_id="test", visit=1, key="tests_pass", value="false"),
    finished("test", 1, "failure", exit_code=1, error="expected 3", error_key=KEY),
    ev.RouteTaken(step_id="test", visit=1, target="implement", outcome="failure"),
    ev.StepQueued(step_id="implement", reason="edge", source_step="test", source_visit=1),
    started("implement", 2),
    ev.ArtifactWritten(
        step_id="implement", visit=2, name="summary", path="a/1", sha256="x", size=1
    ),
    finished("implement", 2),
    started("test", 2),
    finished("test", 2, "failure", exit_code=1, error_key=KEY),
    ev.StepQueued(step_id="implement", reason="edge", source_step="test", source_visit=2),
    started("implement", 3),
    ev.ArtifactWritten(
        step_id="implement", visit=3, name="summary", path="a/2", sha256="y", size=1
    ),
    ev.StepInterrupted(step_id="implement", visit=3, reason="killed"),
    ev.StepQueued(step_id="implement", reason="resume"),
)


def test_visit_counts_outcomes_and_totals() -> None:
    s = RunState.replay("r1", LOOP_RUN)
    assert s.status == "running" and s.started_once
    assert s.seq == len(LOOP_RUN)
    # interrupted visits are numbered but never counted
    assert s.counted == {"implement": 2, "test": 2}
    assert s.numbered == {"implement": 3, "test": 2}
    assert s.total == 4
    assert s.finished == {"implement", "test"}
    assert s.outcomes == {
        ("implement", 1): "success",
        ("test", 1): "failure",
        ("implement", 2): "success",
        ("test", 2): "failure",
    }
    assert s.last["test"] == StepSummary(visit=2, outcome="failure", exit_code=1)
    assert s.last["implement"] == StepSummary(visit=2, outcome="success", exit_code=None)


def test_context_and_artifacts_keep_the_latest_value() -> None:
    s = RunState.replay("r1", LOOP_RUN)
    assert s.context == {"tests_pass": "false"}
    assert s.artifacts == {"implement": {"summary": "a/2"}}


def test_breaker_counts_the_same_error_in_a_row() -> None:
    s = RunState.replay("r1", LOOP_RUN)
    assert s.breaker == {"test": (KEY, 2)}
    other = finished("test", 3, "failure", error_key="a different error")
    s.apply(other)
    assert s.breaker == {"test": ("a different error", 1)}
    s.apply(finished("test", 4, "failure", error_key="a different error"))
    assert s.breaker == {"test": ("a different error", 2)}
    # a failure without a key leaves the count alone; a success clears it
    s.apply(finished("test", 5, "failure"))
    assert s.breaker == {"test": ("a different error", 2)}
    s.apply(finished("test", 6))
    assert s.breaker == {}


def test_queue_holds_activations_not_yet_started() -> None:
    s = RunState.replay("r1", LOOP_RUN)
    # the resume activation is still waiting; started ones were taken off in order
    assert s.queue == [Activation("implement", "resume")]
    assert s.queued("implement") and not s.queued("test")
    assert s.open == {}


def test_a_crash_leaves_the_running_visit_open() -> None:
    events = numbered(
        ev.RunStarted(pipeline="p"),
        ev.StepQueued(step_id="a", reason="entry"),
        ev.StepQueued(step_id="b", reason="entry"),
        started("a", 1, kind="prompt", source_step=None),
        # the process died here: no step.finished, no run.finished
    )
    s = RunState.replay("r1", events)
    assert list(s.open) == [("a", 1)]
    visit = s.open[("a", 1)]
    assert (visit.step_id, visit.visit, visit.kind, visit.gate) == ("a", 1, "prompt", None)
    assert s.queue == [Activation("b", "entry")]
    assert s.counted == {} and s.total == 0


def test_gate_waiting_then_resolved() -> None:
    waiting = ev.GateWaiting(
        step_id="approve",
        visit=1,
        gate_type="approval",
        message="Ship?",
        choices=[ev.GateChoiceInfo(key="ship", label="Ship", target="_complete")],
        default="ship",
    )
    events = numbered(
        ev.RunStarted(pipeline="review"),
        started("prepare", 1),
        finished("prepare", 1),
        started("approve", 1, kind="gate", source_step="prepare", source_visit=1),
        waiting,
        ev.RunWaiting(gates=["approve"]),
    )
    s = RunState.replay("r1", events)
    assert s.status == "waiting"
    visit = s.open[("approve", 1)]
    assert visit.gate is not None and visit.gate.message == "Ship?"
    assert visit.gate.choices[0].key == "ship"
    assert (visit.source_step, visit.source_visit) == ("prepare", 1)
    assert visit.resolution is None

    resolved = ev.GateResolved(
        step_id="approve", visit=1, decision="approved", choice="ship", by="me"
    )
    s.apply(resolved)
    assert s.status == "running"
    assert s.open[("approve", 1)].resolution == resolved
    s.apply(finished("approve", 1))
    assert s.open == {} and s.counted["approve"] == 1


def test_child_run_is_attached_to_its_visit() -> None:
    events = numbered(
        ev.RunStarted(pipeline="release"),
        started("build", 1, kind="pipeline"),
        ev.ChildRunStarted(step_id="build", visit=1, child_run_id="r2", pipeline="hello"),
    )
    assert RunState.replay("r1", events).open[("build", 1)].child_run_id == "r2"


def test_run_status_follows_run_events() -> None:
    s = RunState.replay("r1", numbered(ev.RunStarted(pipeline="p")))
    s.apply(ev.RunFinished(status="interrupted"))
    assert s.status == "interrupted"
    s.apply(ev.RunResumed(interrupted_steps=["a"]))
    assert s.status == "running"
    s.apply(ev.RunFinished(status="succeeded", seq=99))
    assert s.status == "succeeded" and s.seq == 99
    assert RunState("fresh").status == "pending"


def test_replay_from_stored_ndjson_gives_the_same_state() -> None:
    lines = [ev.event_json(e) for e in LOOP_RUN]
    parsed = [ev.parse_event(line) for line in lines]
    assert RunState.replay("r1", parsed) == RunState.replay("r1", LOOP_RUN)
