"""Gates: decisions and where they route, auto-approval, timers and timeouts, and a
waiting gate that outlives its runner and is picked up by resume."""

from __future__ import annotations

import dataclasses

import pytest
from harness import Harness, Result, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

# the example project's `review` pipeline
REVIEW = """
kind: WavePipeline
steps:
  - id: prepare
    script: echo "change for {{ input }}" >> change.txt
  - id: approve
    dependencies: [prepare]
    gate:
      type: approval
      message: "Ship the change for {{ input }}?"
      choices:
        - {label: Ship it, key: ship, target: ship}
        - {label: Rework, key: rework, target: prepare}
        - {label: Drop, key: drop, target: _fail}
      default: ship
  - id: ship
    script: cat change.txt && echo shipped
"""


def steps_run(result: Result) -> list[str]:
    return [s for s, *_ in result.visits()]


def test_an_approval_routes_by_its_choice(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.gates.decide("approve", choice="ship")
    result = h.run(input_text="v2")
    assert result.status == "succeeded"
    (waiting,) = result.of(ev.GateWaiting)
    assert (waiting.step_id, waiting.visit, waiting.message) == (
        "approve",
        1,
        "Ship the change for v2?",
    )
    assert [c.key for c in waiting.choices] == ["ship", "rework", "drop"]
    assert waiting.default == "ship" and waiting.deadline is None
    (resolved,) = result.of(ev.GateResolved)
    assert (resolved.decision, resolved.choice, resolved.target, resolved.by) == (
        "approved",
        "ship",
        "ship",
        "test",
    )
    assert steps_run(result) == ["prepare", "approve", "ship"]
    assert result.of(ev.StepFinished)[-1].output_tail == "change for v2\nshipped\n"
    closed_once(result.events)


def test_a_rejection_fails_the_run_with_its_reason(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.gates.decide("approve", "rejected", reason="not this week")
    result = h.run()
    assert result.status == "failed"
    assert result.error == "step 'approve' failed: gate rejected: not this week"
    (resolved,) = result.of(ev.GateResolved)
    assert (resolved.decision, resolved.reason, resolved.choice) == (
        "rejected",
        "not this week",
        None,
    )
    assert result.visits() == [("prepare", 1, "success"), ("approve", 1, "failure")]
    assert result.state.status == "failed"


def test_a_choice_routes_back_and_the_gate_waits_again(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.gates.decide("approve", choice="rework", visit=1)
    h.gates.decide("approve", choice="drop", visit=2)
    result = h.run()
    assert result.status == "failed"
    assert result.error is not None and "routed to _fail" in result.error
    assert steps_run(result) == ["prepare", "approve", "prepare", "approve"]
    # the second visit of the gate waited again, for its own decision
    assert [(e.step_id, e.visit) for e in result.of(ev.GateWaiting)] == [
        ("approve", 1),
        ("approve", 2),
    ]
    assert [(e.visit, e.choice, e.target) for e in result.of(ev.GateResolved)] == [
        (1, "rework", "prepare"),
        (2, "drop", "_fail"),
    ]
    routes = [(e.step_id, e.visit, e.target) for e in result.of(ev.RouteTaken)]
    assert routes == [("approve", 1, "prepare"), ("approve", 2, "_fail")]
    assert (h.workspace(result.run_id) / "change.txt").read_text().count("change for") == 2
    closed_once(result.events)


@pytest.mark.parametrize(
    ("choice", "status", "steps"),
    [
        ("ship", "succeeded", ["prepare", "approve", "ship"]),
        ("drop", "failed", ["prepare", "approve"]),
        (None, "succeeded", ["prepare", "approve", "ship"]),  # no choice: the default
        ("yolo", "failed", ["prepare", "approve"]),  # not a choice: rejected
    ],
)
def test_every_choice_of_an_approval(
    h: Harness, choice: str | None, status: str, steps: list[str]
) -> None:
    h.pipeline(REVIEW)
    h.gates.decide("approve", choice=choice)
    result = h.run()
    assert result.status == status
    assert steps_run(result) == steps
    (resolved,) = result.of(ev.GateResolved)
    if choice == "yolo":
        assert (resolved.decision, resolved.reason) == ("rejected", "unknown choice 'yolo'")
    else:
        assert (resolved.decision, resolved.choice) == ("approved", choice or "ship")


def test_auto_approve_takes_the_default_choice_without_waiting(h: Harness) -> None:
    h.pipeline(REVIEW.replace("default: ship", "default: drop"))
    h.options = dataclasses.replace(h.options, auto_approve=True)
    result = h.run()
    assert result.status == "failed" and result.error is not None
    assert "routed to _fail" in result.error
    assert not result.of(ev.GateWaiting)
    (resolved,) = result.of(ev.GateResolved)
    assert (resolved.decision, resolved.choice, resolved.by) == ("approved", "drop", "auto")
    assert h.gates.asked == {}  # nobody was asked


def test_auto_approve_takes_the_default_choice(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.options = dataclasses.replace(h.options, auto_approve=True)
    result = h.run()
    assert result.status == "succeeded"
    (resolved,) = result.of(ev.GateResolved)
    assert (resolved.decision, resolved.choice, resolved.target, resolved.by) == (
        "approved",
        "ship",
        "ship",
        "auto",
    )
    assert steps_run(result) == ["prepare", "approve", "ship"]


def gate_pipeline(gate: str) -> str:
    return f"""
        kind: WavePipeline
        steps:
          - id: wait
            gate: {gate}
          - id: after
            dependencies: [wait]
            script: echo done
        """


@pytest.mark.parametrize(
    ("gate", "status", "decision", "choice", "by"),
    [
        ("{type: timer, timeout: 300ms}", "succeeded", "approved", None, "timer"),
        ("{type: approval, timeout: 300ms}", "failed", "timeout", None, "timeout"),
        (
            "{type: approval, timeout: 300ms, default: go, choices: [{key: go, label: Go}]}",
            "succeeded",
            "approved",
            "go",
            "timeout",
        ),
    ],
    ids=["timer", "approval-without-default", "approval-with-default"],
)
def test_a_gate_resolves_when_its_timeout_passes(
    h: Harness, gate: str, status: str, decision: str, choice: str | None, by: str
) -> None:
    h.pipeline(gate_pipeline(gate))
    result = h.run()
    assert result.status == status
    (waiting,) = result.of(ev.GateWaiting)
    assert waiting.deadline is not None
    (resolved,) = result.of(ev.GateResolved)
    assert (resolved.decision, resolved.choice, resolved.by) == (decision, choice, by)
    wait = result.of(ev.StepFinished)[0]
    assert wait.step_id == "wait" and wait.duration_ms >= 300
    if status == "succeeded":
        assert steps_run(result) == ["wait", "after"]
    else:
        assert result.error == (
            "step 'wait' failed: gate timeout: no decision before the gate's timeout"
        )
        assert steps_run(result) == ["wait"]


def test_a_timer_gate_does_not_take_decisions(h: Harness) -> None:
    h.pipeline(gate_pipeline("{type: timer, timeout: 200ms}"))
    h.gates.decide("wait", "rejected", reason="too late")
    result = h.run()
    assert result.status == "succeeded"
    assert result.of(ev.GateResolved)[0].by == "timer"
    assert h.gates.asked == {}


def test_a_waiting_gate_stays_open_when_the_run_stops_and_resume_picks_it_up(
    h: Harness,
) -> None:
    h.pipeline(REVIEW)
    h.gates.stop_when_undecided = True
    stopped = h.run(input_text="v3")
    # nothing ends the run: it waits at the gate, with the gate's visit open
    assert stopped.status == "waiting" and stopped.state.status == "waiting"
    assert not stopped.of(ev.RunFinished) and not stopped.of(ev.StepInterrupted)
    assert list(stopped.state.open) == [("approve", 1)]
    assert stopped.state.open[("approve", 1)].gate is not None

    # resumed with still no decision: it keeps waiting, and does not announce it again
    again = h.resume(stopped.run_id)
    assert again.status == "waiting"
    assert len(again.of(ev.GateWaiting)) == 1

    h.gates.decide("approve", choice="ship")
    h.gates.stop_when_undecided = False
    resumed = h.resume(stopped.run_id)
    assert resumed.status == "succeeded"
    assert resumed.events[: len(stopped.events)] == stopped.events
    assert len(resumed.of(ev.GateWaiting)) == 1
    assert [(e.visit, e.choice) for e in resumed.of(ev.GateResolved)] == [(1, "ship")]
    # the same visit of the gate finished: no new visit, nothing interrupted
    assert resumed.visits() == [
        ("prepare", 1, "success"),
        ("approve", 1, "success"),
        ("ship", 1, "success"),
    ]
    assert not resumed.of(ev.StepInterrupted)
    assert [e.interrupted_steps for e in resumed.of(ev.RunResumed)] == [[], []]
    closed_once(resumed.events)


def test_a_resumed_run_that_stops_again_at_its_gate_is_still_waiting(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.gates.stop_when_undecided = True
    stopped = h.run()
    assert stopped.state.status == "waiting"
    again = h.resume(stopped.run_id)
    assert again.status == "waiting"
    assert again.state.status == "waiting"  # what `swell status` shows


# ------------------------------------------- no one to ask: the run stops at the gate


def test_with_no_one_to_ask_a_gate_stops_the_run_and_resume_takes_the_decision(
    h: Harness,
) -> None:
    """`swell run` without a terminal: the gate's question is recorded, the run stops
    `waiting` with the gate's visit open; once decided, resume goes on from it."""
    h.pipeline(REVIEW)
    h.services.stop_at_gates = True
    stopped = h.run(input_text="v4")
    assert stopped.status == "waiting" and stopped.state.status == "waiting"
    assert list(stopped.state.open) == [("approve", 1)]
    assert not stopped.of(ev.RunFinished) and not stopped.of(ev.StepInterrupted)
    assert [e.gates for e in stopped.of(ev.RunWaiting)] == [["approve"]]

    again = h.resume(stopped.run_id)  # still undecided: it stops again, waiting
    assert again.status == "waiting" and again.state.status == "waiting"
    assert len(again.of(ev.GateWaiting)) == 1
    assert [e.gates for e in again.of(ev.RunWaiting)] == [["approve"], ["approve"]]

    h.gates.decide("approve", choice="ship")
    resumed = h.resume(stopped.run_id)
    assert resumed.status == "succeeded"
    assert resumed.visits() == [
        ("prepare", 1, "success"),
        ("approve", 1, "success"),
        ("ship", 1, "success"),
    ]
    closed_once(resumed.events)


def test_a_stopped_gate_lets_the_other_branches_finish_first(h: Harness) -> None:
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: ask
            gate: {message: "Go on?"}
          - id: build
            script: sleep 0.2; echo built
          - id: ship
            dependencies: [ask, build]
            script: echo shipped
        """
    )
    h.services.stop_at_gates = True
    stopped = h.run()
    assert stopped.status == "waiting"
    assert stopped.visits() == [("build", 1, "success")]
    h.gates.decide("ask")
    resumed = h.resume(stopped.run_id)
    assert resumed.status == "succeeded"
    assert [s for s, *_ in resumed.visits()] == ["build", "ask", "ship"]


def test_a_decision_made_before_the_gate_is_reached_is_taken_at_once(h: Harness) -> None:
    h.pipeline(REVIEW)
    h.services.stop_at_gates = True
    h.gates.decide("approve", choice="drop")
    result = h.run()
    assert (result.status, result.error) == ("failed", "routed to _fail (choice=drop)")
