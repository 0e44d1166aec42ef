"""Run state snapshots: a snapshot of the fold of a run's first events, read back and
followed by the rest, is the fold of them all, wherever the snapshot was taken."""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import count
from typing import Any

import pytest

from event_samples import stored_row
from swell.engine.loop.state import SNAPSHOT_VERSION, RunState
from swell.events import models as ev

FEEDBACK = ev.ReviewFeedback(
    verdict="rework",
    issues=[ev.ReviewIssue(severity="major", file="a.py", line=3, detail="no docstring")],
    suggestions=["add one"],
    confidence=0.8,
    summary="almost",
)
CHOICES = [ev.GateChoiceInfo(key="ship", label="Ship", target="deploy")]


def _run(*events: ev.BaseEvent) -> list[ev.BaseEvent]:
    seq: Iterator[int] = count(1)
    for event in events:
        event.run_id, event.seq = "r1", next(seq)
        event.ts = f"2026-11-24T10:{event.seq // 60:02d}:{event.seq % 60:02d}.000Z"
    return list(events)


def _round(step: str, visit: int, n: int, thread: str | None, tr: int | None) -> ev.BaseEvent:
    meta: dict[str, Any] = {"outcome": "failure", "exit_code": 1, "paths": ["a", "b"]}
    return ev.RoundRecorded(
        step_id=step,
        visit=visit,
        round=n,
        thread=thread,
        thread_round=tr,
        role=step,
        persona="dev" if thread else None,
        content=f"output of {step} #{visit}",
        metadata=meta,
    )


# every handler of the fold: loops, a breaker, context, artifacts, threads and their
# summaries, a retry, a rework with a reviewer's feedback, a gate that waits, is
# resolved and waits again, a child run, a crash (interrupted visits) and a resume
RICH = _run(
    ev.RunStarted(pipeline="p", input="go"),
    ev.StepQueued(step_id="implement", reason="entry"),
    ev.StepStarted(step_id="implement", visit=1, kind="prompt", persona="dev"),
    ev.ContextSet(step_id="implement", visit=1, key="plan", value="v1"),
    ev.ArtifactWritten(step_id="implement", visit=1, name="diff", path="/a/1", sha256="1", size=1),
    ev.StepFinished(step_id="implement", visit=1, outcome="success", exit_code=0),
    _round("implement", 1, 1, "impl", 1),
    ev.StepQueued(step_id="test", reason="dependency", source_step="implement", source_visit=1),
    ev.StepStarted(step_id="test", visit=1, kind="command", source_step="implement"),
    ev.StepFinished(step_id="test", visit=1, outcome="failure", exit_code=1, error_key="E1"),
    _round("test", 1, 2, "impl", 2),
    ev.RetryRequested(step_id="test", visit=1, attempt=2, max_attempts=3, reason="flaky"),
    ev.StepQueued(step_id="test", reason="retry", source_step="test", source_visit=1),
    ev.StepStarted(step_id="test", visit=2, kind="command"),
    ev.StepFinished(step_id="test", visit=2, outcome="failure", exit_code=1, error_key="E1"),
    _round("test", 2, 3, None, None),
    ev.ThreadSummarized(thread="impl", upto_round=2, text="so far", persona="dev"),
    ev.ReworkRequested(
        step_id="fix",
        for_step="test",
        for_visit=2,
        contract_type="agent_review",
        reason="review said rework",
        reviewer="critic",
        feedback_path="/f.json",
        feedback=FEEDBACK,
    ),
    ev.StepQueued(step_id="fix", reason="rework", source_step="test", source_visit=2),
    ev.StepStarted(step_id="fix", visit=1, kind="prompt", persona="dev"),
    ev.ContextSet(step_id="fix", visit=1, key="plan", value="v2"),
    ev.StepFinished(step_id="fix", visit=1, outcome="success"),
    ev.ArtifactWritten(step_id="fix", visit=1, name="diff", path="/a/2", sha256="2", size=2),
    ev.StepQueued(step_id="approve", reason="edge", source_step="fix", source_visit=1),
    ev.StepQueued(step_id="sub", reason="edge", source_step="fix", source_visit=1),
    ev.StepStarted(step_id="approve", visit=1, kind="gate"),
    ev.GateWaiting(step_id="approve", visit=1, gate_type="approval", choices=CHOICES),
    ev.RunWaiting(gates=["approve"]),
    ev.GateResolved(step_id="approve", visit=1, decision="approved", choice="ship", by="me"),
    ev.GateWaiting(step_id="approve", visit=1, gate_type="approval", message="again"),
    ev.StepStarted(step_id="sub", visit=1, kind="pipeline"),
    ev.ChildRunStarted(step_id="sub", visit=1, child_run_id="child-1", pipeline="c"),
    ev.StepStarted(step_id="implement", visit=2, kind="prompt"),
    ev.RunFinished(status="interrupted", error="killed"),
    ev.StepInterrupted(step_id="implement", visit=2, reason="killed"),
    ev.RunResumed(interrupted_steps=["implement"]),
    ev.StepQueued(step_id="implement", reason="resume"),
    ev.StepStarted(step_id="implement", visit=3, kind="prompt"),
    ev.StepFinished(step_id="implement", visit=3, outcome="success"),
    ev.StepStarted(step_id="implement", visit=5, kind="prompt"),  # a gap in visit numbers
    ev.StepFinished(step_id="implement", visit=5, outcome="failure", error_key="E2"),
    _round("implement", 5, 4, "impl", 3),
    ev.AgentText(step_id="implement", visit=5, text="not folded"),
    ev.StepQueued(step_id="test", reason="dependency", source_step="implement", source_visit=5),
)


def _through_json(state: RunState) -> RunState:
    return RunState.from_snapshot(json.loads(json.dumps(state.to_snapshot())))


def _resumed(events: list[ev.BaseEvent], at: int) -> RunState:
    state = _through_json(RunState.replay("r1", events[:at]))
    for event in events[at:]:
        state.apply(event)
    return state


def test_the_rich_run_reaches_every_part_of_the_state() -> None:
    state = RunState.replay("r1", RICH)
    assert state.threads and state.summaries and state.reworks and state.retries
    assert state.breaker and state.artifacts and state.context and state.queue
    gate, child = state.open[("approve", 1)], state.open[("sub", 1)]
    assert gate.gate is not None and gate.resolution is None and child.child_run_id
    assert state.outcomes[("implement", 5)] == "failure" and ("implement", 4) not in state.outcomes


@pytest.mark.parametrize("at", range(len(RICH) + 1))
def test_a_snapshot_anywhere_then_the_rest_equals_replaying_everything(at: int) -> None:
    full = RunState.replay("r1", RICH)
    resumed = _resumed(RICH, at)
    assert resumed == full
    # and in the same order where order matters to what the runner does next
    assert list(resumed.open) == list(full.open)
    assert [list(d) for d in (resumed.context, resumed.last)] == [
        list(d) for d in (full.context, full.last)
    ]
    assert resumed.to_snapshot() == full.to_snapshot()


def test_events_read_from_the_store_form_snapshot_the_same() -> None:
    stored = [stored_row(e).event(e.run_id) for e in RICH]
    for at in (0, 11, 27, len(RICH)):
        assert _resumed(stored, at) == RunState.replay("r1", RICH)


def test_a_snapshot_is_versioned_json() -> None:
    data = RunState.replay("r1", RICH).to_snapshot()
    assert data["version"] == SNAPSHOT_VERSION and data["seq"] == len(RICH)
    assert json.loads(json.dumps(data)) == data
    assert data["outcomes"]["implement"] == [[1, "s"], [3, "s"], [5, "f"]]


def test_a_long_run_snapshots_small() -> None:
    """Per-visit outcomes are letters: a 30,000-visit loop stays a few tens of kB."""
    state = RunState("r1")
    for n in range(1, 10_001):
        for step in ("implement", "test", "gate"):
            state.outcomes[(step, n)] = "failure" if step == "test" else "success"
    assert len(json.dumps(state.to_snapshot())) < 40_000
    assert _through_json(state) == state


def test_another_version_or_a_damaged_snapshot_is_refused() -> None:
    data = RunState.replay("r1", RICH).to_snapshot()
    with pytest.raises(ValueError, match="not a run state snapshot of version"):
        RunState.from_snapshot({**data, "version": SNAPSHOT_VERSION + 1})
    with pytest.raises(ValueError, match="not a run state snapshot"):
        RunState.from_snapshot([])  # type: ignore[arg-type]
    for broken in ({k: v for k, v in data.items() if k != "queue"}, {**data, "open": [{}]}):
        with pytest.raises(ValueError, match="damaged"):
            RunState.from_snapshot(broken)
    gate = data["open"][0]
    with pytest.raises(ValueError, match="damaged"):
        RunState.from_snapshot(
            {**data, "open": [{**gate, "gate": {"type": "warning", "message": "x"}}]}
        )
