"""Every store backend, after `run.rewound` (issue 33): the rows of the visits it
abandoned leave the tables derived from events (visits, artifacts, thread rounds,
gates), the kept ones stay, and a visit run again under an abandoned number (and its
thread round) is recorded as any other; the context table is the run's context as it
was at the point."""

from __future__ import annotations

from swell.events import models as ev
from swell.store.protocols import Store

from .conftest import NewRun, a_round, started


def _visit(n: int) -> list[ev.BaseEvent]:
    return [
        ev.StepStarted(step_id="implement", visit=n, kind="prompt"),
        ev.ArtifactWritten(
            step_id="implement", visit=n, name="report", path="/ws/r.md", sha256=f"{n}" * 64, size=1
        ),
        a_round(n, "impl", n),
        ev.StepFinished(step_id="implement", visit=n, outcome="success"),
    ]


def test_a_rewind_drops_the_rows_of_the_visits_it_abandoned(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    for n in (1, 2, 3):
        w.emit(*_visit(n))
    w.emit(
        ev.StepStarted(step_id="approve", visit=1, kind="gate"),
        ev.GateWaiting(step_id="approve", visit=1, gate_type="approval", message="ok?"),
    )
    kept = store.get_run("r1").last_seq - 13  # visit 1's events and the start
    w.emit(
        ev.RunRewound(
            at_step="implement",
            at_visit=1,
            kept_seq=kept,
            abandoned=["implement#2", "implement#3", "approve#1"],
        )
    )
    assert [(v.step_id, v.visit) for v in store.visits("r1")] == [("implement", 1)]
    assert [(a.step_id, a.visit) for a in store.artifacts("r1")] == [("implement", 1)]
    assert [r.id for r in store.rounds_between("r1", "impl", 1, 10)] == [1]
    assert store.round_count("r1", None) == 1
    assert store.gates("r1") == []
    assert store.get_run("r1").status == "running"
    # visit 2 again, its round numbered as the abandoned one was
    w.emit(*_visit(2))
    assert [(v.step_id, v.visit) for v in store.visits("r1")] == [
        ("implement", 1),
        ("implement", 2),
    ]
    assert [r.content for r in store.rounds_between("r1", "impl", 1, 10)] == ["round 1", "round 2"]


def test_a_rewind_makes_the_context_what_it_was_at_the_point(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    w.emit(
        ev.StepStarted(step_id="plan", visit=1, kind="prompt"),
        ev.ContextSet(step_id="plan", visit=1, key="mode", value="draft"),
        ev.StepFinished(step_id="plan", visit=1, outcome="success"),
    )
    kept = store.get_run("r1").last_seq
    w.emit(
        ev.StepStarted(step_id="plan", visit=2, kind="prompt"),
        ev.ContextSet(step_id="plan", visit=2, key="mode", value="final"),
        ev.ContextSet(step_id="plan", visit=2, key="reviewer", value="bob"),
        ev.StepFinished(step_id="plan", visit=2, outcome="success"),
    )
    assert store.context("r1") == {"mode": "final", "reviewer": "bob"}
    w.emit(
        ev.RunRewound(
            at_step="plan",
            at_visit=1,
            kept_seq=kept,
            abandoned=["plan#2"],
            context={"mode": "draft"},
        )
    )
    assert store.context("r1") == {"mode": "draft"}
    # set again after the rewind, as any value is
    w.emit(ev.ContextSet(step_id="plan", visit=2, key="reviewer", value="ann"))
    assert store.context("r1") == {"mode": "draft", "reviewer": "ann"}
    # a rewind recorded before `context` was carried leaves the table as it is
    w.emit(ev.RunRewound(at_step="plan", at_visit=1, kept_seq=kept, abandoned=[]))
    assert store.context("r1") == {"mode": "draft", "reviewer": "ann"}


def test_fork_links_finds_every_run_forked_from_a_run(store: Store, new_run: NewRun) -> None:
    started(new_run("origin"))
    started(new_run("other"))
    first = new_run("first")
    started(first)
    first.emit(ev.RunForked(origin_run_id="origin", at_step="plan", at_visit=2))
    second = new_run("second")  # a fork of `first`: its copied events hold first's link
    started(second)
    second.emit(ev.RunForked(origin_run_id="origin", at_step="plan", at_visit=2))
    second.emit(ev.RunForked(origin_run_id="first", at_step="build", at_visit=1))
    unrelated = new_run("originally")  # an id that holds the origin's as a prefix
    started(unrelated)
    unrelated.emit(ev.RunForked(origin_run_id="origin-2", at_step="plan", at_visit=1))

    found = sorted((e.run_id, e.at_step, e.at_visit) for e in store.fork_links("origin"))
    assert found == [("first", "plan", 2), ("second", "plan", 2)]
    assert [(e.run_id, e.at_step) for e in store.fork_links("first")] == [("second", "build")]
    assert store.fork_links("other") == []
