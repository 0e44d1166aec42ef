"""The conformance suite, continued (every backend): every event kind read back as it was
written, the steps summary `swell status` prints, and run state snapshots."""

from __future__ import annotations

import dataclasses

import pytest

from event_samples import samples
from swell.errors import RunNotFound, StoreError
from swell.events import models as ev
from swell.store.protocols import Store
from swell.store.rows import StepRow, VisitRow

from .conftest import Backend, NewRun, started, wait_at

# ------------------------------------------------------------------ event kinds


def test_every_event_kind_reads_back_as_it_was_written(store: Store, new_run: NewRun) -> None:
    new_run("sample-run")
    sent = list(samples())  # a bare and a full event of every kind, seq 1, 2, ...
    for n in range(0, len(sent), 5):  # in batches, as the run loop writes them
        store.emit(sent[n : n + 5])
    got = store.events("sample-run")
    assert [type(e) for e in got] == [type(e) for e in sent]
    assert got == sent
    assert [e.model_fields_set >= {"run_id", "seq", "ts"} for e in got] == [True] * len(sent)
    assert store.raw_events("sample-run") == [ev.event_json(e) for e in sent]
    assert store.events("sample-run", after_seq=len(sent) - 2) == sent[-2:]


def test_a_batch_is_one_statement_yet_all_or_nothing(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    batch = [
        ev.StepStarted(step_id="build", visit=1, kind="command"),
        ev.ContextSet(key="k", value="v"),
        ev.StepFinished(step_id="build", visit=1, outcome="success"),
    ]
    for seq, event in enumerate(batch, start=3):
        event.run_id, event.seq, event.ts = "r1", seq, "2026-11-24T10:00:00.000Z"
    batch[-1].seq = 1  # stored already: nothing of the batch may stay
    with pytest.raises(StoreError, match=r"^event 1 of run r1 is already stored$"):
        store.emit(batch)
    assert (store.get_run("r1").last_seq, store.visits("r1"), store.context("r1")) == (2, [], {})


# ------------------------------------------------------------------ steps


def _steps_from_visits(visits: list[VisitRow]) -> list[StepRow]:
    """What `swell status` printed when it read every visit: steps in the order of their
    first visit, each with its count and its last visit in `visits` order."""
    by_step: dict[str, list[VisitRow]] = {}
    for v in visits:
        by_step.setdefault(v.step_id, []).append(v)
    return [
        StepRow(s, len(vs), vs[-1].visit, vs[-1].status, vs[-1].exit_code, vs[-1].started_at)
        for s, vs in by_step.items()
    ]


def test_steps_count_visits_and_show_each_steps_last(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    for n in (1, 2, 3):
        w.emit(ev.StepStarted(step_id="implement", visit=n, kind="command"))
        w.emit(ev.StepFinished(step_id="implement", visit=n, outcome="success", exit_code=0))
        w.emit(ev.StepStarted(step_id="test", visit=n, kind="command"))
        w.emit(ev.StepFinished(step_id="test", visit=n, outcome="failure", exit_code=n))
    w.emit(ev.StepStarted(step_id="gate", visit=1, kind="conditional"))
    w.emit(ev.StepStarted(step_id="implement", visit=4, kind="command"))
    w.emit(ev.StepInterrupted(step_id="implement", visit=4, reason="killed"))
    steps = store.steps("r1")
    assert [dataclasses.replace(s, last_started_at=None) for s in steps] == [
        StepRow("implement", 4, 4, "interrupted", None),
        StepRow("test", 3, 3, "failed", 3),
        StepRow("gate", 1, 1, "running", None),
    ]
    # the last visit's start: what `swell status` shows a running visit's time from
    visits = {(v.step_id, v.visit): v for v in store.visits("r1")}
    assert all(s.last_started_at == visits[s.step_id, s.last_visit].started_at for s in steps)
    assert all(s.last_started_at for s in steps)
    assert steps == _steps_from_visits(store.visits("r1"))
    assert store.steps("missing") == []


def test_steps_follow_the_order_visits_are_listed_in(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    same = "2026-11-22T09:00:00.000Z"
    # started together: by step id, then visit
    w.emit(
        ev.StepStarted(step_id="lint", visit=2, kind="command"),
        ev.StepStarted(step_id="build", visit=1, kind="command"),
        ev.StepStarted(step_id="lint", visit=1, kind="command"),
        ts=same,
    )
    w.emit(ev.StepFinished(step_id="lint", visit=1, outcome="failure", exit_code=9))
    # a visit started over (resume) moves to the end of its step's visits
    w.emit(ev.StepStarted(step_id="build", visit=1, kind="command"))
    w.emit(ev.StepStarted(step_id="build", visit=2, kind="command"))
    w.emit(ev.StepFinished(step_id="build", visit=2, outcome="success", exit_code=0))
    w.emit(ev.StepStarted(step_id="lint", visit=1, kind="command"))
    steps = store.steps("r1")
    assert steps == _steps_from_visits(store.visits("r1"))
    assert [dataclasses.replace(s, last_started_at=None) for s in steps] == [
        StepRow("lint", 2, 1, "running", None),
        StepRow("build", 2, 2, "succeeded", 0),
    ]


# ------------------------------------------------------------------ snapshots


def test_a_snapshot_is_kept_per_run_and_a_newer_one_replaces_it(
    store: Store, new_run: NewRun
) -> None:
    w, other = new_run("r1"), new_run("r2")
    started(w)
    other.emit(ev.RunStarted(pipeline="other"))
    assert store.load_snapshot("r1") is None
    store.save_snapshot("r1", 1, '{"at": 1}')
    store.save_snapshot("r2", 1, '{"run": "r2"}')
    assert store.load_snapshot("r1") == (1, '{"at": 1}')
    store.save_snapshot("r1", 2, '{"at": 2}')
    assert store.load_snapshot("r1") == (2, '{"at": 2}')
    store.save_snapshot("r1", 1, '{"at": "old"}')  # an older one does not replace it
    store.save_snapshot("r1", 2, '{"at": "2 again"}')
    assert store.load_snapshot("r1") == (2, '{"at": "2 again"}')
    assert store.load_snapshot("r2") == (1, '{"run": "r2"}')
    assert store.load_snapshot("missing") is None


def test_a_snapshot_past_the_stored_events_or_of_no_run_is_refused(
    store: Store, new_run: NewRun
) -> None:
    w = new_run("r1")
    started(w)  # seq 1 and 2
    with pytest.raises(StoreError, match=r"^a snapshot of run r1 at event 3 is past its stored"):
        store.save_snapshot("r1", 3, "{}")
    with pytest.raises(RunNotFound, match=r"^no run 'nope' in "):
        store.save_snapshot("nope", 0, "{}")
    assert store.load_snapshot("r1") is None


@pytest.mark.parametrize("status", ["succeeded", "failed", "cancelled"])
def test_a_run_that_ended_for_good_drops_its_snapshot(
    store: Store, new_run: NewRun, status: str
) -> None:
    w = new_run("r1")
    started(w)
    store.save_snapshot("r1", 2, "{}")
    w.emit(ev.RunFinished(status=status))  # type: ignore[arg-type]
    assert store.load_snapshot("r1") is None


def test_a_run_that_can_go_on_keeps_its_snapshot(store: Store, new_run: NewRun) -> None:
    w = new_run("r1")
    started(w)
    wait_at(w)
    store.save_snapshot("r1", 5, '{"waiting": true}')
    w.emit(ev.RunFinished(status="interrupted", error="Ctrl-C"))
    w.emit(ev.RunResumed())
    assert store.load_snapshot("r1") == (5, '{"waiting": true}')


def test_a_snapshot_written_through_one_handle_is_read_through_another(
    backend: Backend, store: Store, new_run: NewRun
) -> None:
    w = new_run("r1")
    started(w)
    store.save_snapshot("r1", 2, '{"x": [1, 2]}')
    other = backend.open()
    assert other.load_snapshot("r1") == (2, '{"x": [1, 2]}')
