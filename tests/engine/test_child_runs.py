"""Sub-pipelines: a child run linked to its parent step, whose outcome is the step's,
and which a resumed parent continues instead of starting again."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from harness import Harness, Result, closed_once, h_fixture  # noqa: F401 - the fixture `h`

from swell.events import models as ev

CHILD = """
kind: WavePipeline
steps:
  - id: one
    script: echo "one for {{ input }}" > one.txt
  - id: two
    dependencies: [one]
    script: {two}
"""

PARENT = """
kind: WavePipeline
steps:
  - id: sub
    pipeline: child
    input: "child of {{ input }}"
  - id: after
    dependencies: [sub]
    script: cat one.txt two.txt
"""


def family(h: Harness, two: str = "echo two > two.txt") -> None:
    h.pipeline(CHILD.replace("{two}", two), name="child")
    h.pipeline(PARENT, name="parent")


def child_of(h: Harness, parent: Result) -> tuple[str, list[ev.BaseEvent]]:
    """The parent's one child run: its id and its events."""
    (started,) = parent.of(ev.ChildRunStarted)
    return started.child_run_id, h.sink.of(started.child_run_id)


def test_a_sub_pipeline_is_a_linked_child_run_in_the_parents_workspace(h: Harness) -> None:
    family(h)
    parent = h.run("parent", "v1")
    assert parent.status == "succeeded", parent.error
    _, events = child_of(h, parent)
    (started,) = parent.of(ev.ChildRunStarted)
    assert (started.step_id, started.visit, started.pipeline) == ("sub", 1, "child")
    run_started = events[0]
    assert isinstance(run_started, ev.RunStarted)
    assert (run_started.parent_run_id, run_started.parent_step_id) == (parent.run_id, "sub")
    assert run_started.input == "child of v1"
    assert isinstance(events[-1], ev.RunFinished) and events[-1].status == "succeeded"
    # the child worked in its parent's workspace, where `after` found its files
    assert run_started.workspace == str(h.workspace(parent.run_id))
    assert parent.of(ev.StepFinished)[-1].output_tail == "one for child of v1\ntwo\n"
    assert [s for s, *_ in parent.visits()] == ["sub", "after"]


@pytest.mark.parametrize(
    ("two", "child_error"),
    [
        ('echo "child broke" >&2; exit 1', "step 'two' failed: exit code 1\nchild broke"),
        (
            '"true"\n    handover: {contract: {type: non_empty_file, source: none.txt}}',
            "step 'two' failed: contract 1 (non_empty_file) of step 'two' failed: ",
        ),
    ],
    ids=["step-fails", "contract-fails"],
)
def test_a_failed_child_fails_the_parent_step(h: Harness, two: str, child_error: str) -> None:
    family(h, two)
    parent = h.run("parent")
    assert parent.status == "failed"
    child_id, events = child_of(h, parent)
    finished = events[-1]
    assert isinstance(finished, ev.RunFinished) and finished.status == "failed"
    assert finished.error is not None and finished.error.startswith(child_error)
    (sub,) = parent.of(ev.StepFinished)
    assert (sub.step_id, sub.outcome) == ("sub", "failure")
    assert sub.error == f"sub-pipeline run {child_id} failed: {finished.error}"
    assert parent.error == f"step 'sub' failed: {sub.error}"
    assert [s for s, *_ in parent.visits()] == ["sub"]  # `after` never ran
    closed_once(parent.events)


def test_a_failed_child_can_be_routed_on(h: Harness) -> None:
    h.pipeline(CHILD.replace("{two}", "exit 1"), name="child")
    h.pipeline(
        """
        kind: WavePipeline
        steps:
          - id: sub
            pipeline: child
            edges:
              - {target: fallback, condition: outcome=failure}
          - id: fallback
            script: echo fallback
        """,
        name="parent",
    )
    parent = h.run("parent")
    assert parent.status == "succeeded"
    assert parent.visits() == [("sub", 1, "failure"), ("fallback", 1, "success")]


def test_a_crash_inside_a_child_then_resume_continues_that_child(tmp_path: Path) -> None:
    """For every batch boundary while the child runs: crash there, resume the parent."""
    inside_child = 0
    for crash_after in itertools.count(1):
        h = Harness(tmp_path / f"crash-{crash_after}")
        family(h)
        crashed = h.run("parent", "v1", crash_after=crash_after)
        if not crashed.crashed:
            break
        started = crashed.of(ev.ChildRunStarted)
        child_events = h.sink.of(started[0].child_run_id) if started else []
        if not child_events or isinstance(child_events[-1], ev.RunFinished):
            continue  # the crash was not inside the child
        inside_child += 1
        child_id = started[0].child_run_id
        stored = list(child_events)

        resumed = h.resume(crashed.run_id)
        where = f"crash after batch {crash_after}"
        assert resumed.status == "succeeded", where
        # the same child went on: one child, started once, resumed once
        assert [e.child_run_id for e in resumed.of(ev.ChildRunStarted)] == [child_id], where
        child = h.sink.of(child_id)
        assert child[: len(stored)] == stored, where
        kinds = [type(e) for e in child]
        assert (kinds.count(ev.RunStarted), kinds.count(ev.RunResumed)) == (1, 1), where
        assert isinstance(child[-1], ev.RunFinished) and child[-1].status == "succeeded"
        closed_once(child)
        assert [e.seq for e in child] == list(range(1, len(child) + 1)), where
        # the parent's sub visit was not interrupted: it waited for the same child
        assert not resumed.of(ev.StepInterrupted), where
        assert resumed.visits() == [("sub", 1, "success"), ("after", 1, "success")], where
        assert resumed.of(ev.StepFinished)[-1].output_tail == "one for child of v1\ntwo\n"
        # no other run was started for the pipeline `child`
        children = {
            e.run_id for e in h.sink.events if isinstance(e, ev.RunStarted) and e.parent_run_id
        }
        assert children == {child_id}, where
        closed_once(resumed.events)
    assert inside_child >= 3


def test_cancelling_a_parent_cancels_its_running_child(h: Harness) -> None:
    family(h, two="touch two.running; sleep 30")
    ws = h.root / ".swell" / "workspaces"
    # `swell cancel PARENT` arrives while the child's step runs (asked of the parent
    # alone: were the child asked too, it could end first and fail the parent's step)
    h.control.cancel_when = lambda run_id: (
        run_id.startswith("parent-") and any(ws.glob("*/two.running"))
    )
    parent = h.run("parent", "v1")
    assert parent.status == "cancelled"
    child_id, events = child_of(h, parent)
    assert h.runs[child_id].runner.state.status == "cancelled"
    finished = [e for e in events if isinstance(e, ev.RunFinished)]
    assert [(e.status, e.error) for e in finished] == [("cancelled", "cancelled")]
    assert [(e.step_id, e.reason) for e in events if isinstance(e, ev.StepInterrupted)] == [
        ("two", "run cancelled")
    ]
    assert not [e for e in events if isinstance(e, ev.StepQueued) and e.reason == "resume"]
    closed_once(events)
