"""Every store backend: what a run's page and `swell status` show of its visits (how
many, how many finished, its tokens and cost) equals a count of its visit rows, through
loops, an interrupted visit run again on resume, and a rewind that drops visits. The
SQL backends keep these in the run's row (store/counters.py), so they are read
without counting: this checks that they never drift from the rows."""

from __future__ import annotations

import pytest

from swell.events import models as ev
from swell.store.capabilities import page_reader
from swell.store.protocols import Store

from .conftest import NewRun, Writer, a_round, started


def _visit(w: Writer, step: str, n: int, outcome: str = "success", spend: int = 1) -> None:
    w.emit(
        ev.StepQueued(step_id=step, reason="edge"),
        ev.StepStarted(step_id=step, visit=n, kind="prompt"),
    )
    w.emit(
        a_round(n * 10 + len(step), step_id=step, visit=n),
        ev.StepFinished(
            step_id=step,
            visit=n,
            outcome=outcome,  # type: ignore[arg-type]
            tokens_in=100 * spend,
            tokens_out=10 * spend,
            cost_usd=0.25 * spend,
        ),
    )


def _recounted(store: Store, run_id: str) -> None:
    """What the run shows equals a count of its visit rows."""
    rows = store.visits(run_id)
    run = store.get_run(run_id)
    if run.finished_at is None:
        assert run.visits == sum(v.status != "interrupted" for v in rows)
    pages = page_reader(store)
    assert pages.visits_page(run_id, 0, 3).total == len(rows)
    totals = pages.totals([run_id])[run_id]
    assert (totals.tokens_in, totals.tokens_out) == (
        sum(v.tokens_in for v in rows),
        sum(v.tokens_out for v in rows),
    )
    assert totals.cost_usd == pytest.approx(sum(v.cost_usd for v in rows))
    finished = sum(v.status in ("succeeded", "failed") for v in rows)
    assert pages.visits_total() == finished + _others_finished(store, run_id)


def _others_finished(store: Store, run_id: str) -> int:
    return sum(
        v.status in ("succeeded", "failed")
        for r in store.list_runs(100)
        if r.id != run_id
        for v in store.visits(r.id)
    )


def test_a_runs_visit_counts_equal_its_rows(store: Store, new_run: NewRun) -> None:
    other = new_run("other")
    started(other)
    _visit(other, "implement", 1, spend=3)
    w = new_run("r1")
    started(w)
    _recounted(store, "r1")
    for n in (1, 2, 3):  # a loop: implement, test, implement ...
        _visit(w, "implement", n)
        _visit(w, "test", n, outcome="failure" if n < 3 else "success", spend=2)
        _recounted(store, "r1")
    # a visit interrupted by a stop, and run again under its number on resume
    w.emit(ev.StepStarted(step_id="implement", visit=4, kind="prompt"))
    _recounted(store, "r1")
    w.emit(ev.StepInterrupted(step_id="implement", visit=4, reason="stopped"))
    w.emit(ev.RunFinished(status="cancelled", visits=7))
    assert store.get_run("r1").visits == 7
    w.emit(ev.RunResumed(interrupted_steps=["implement"]))
    _recounted(store, "r1")
    w.emit(ev.StepStarted(step_id="implement", visit=4, kind="prompt"))
    _recounted(store, "r1")
    w.emit(ev.StepFinished(step_id="implement", visit=4, outcome="success", tokens_in=7))
    _recounted(store, "r1")
    # a rewind to implement#2 abandons what came after it
    w.emit(
        ev.RunRewound(
            at_step="implement",
            at_visit=2,
            kept_seq=store.get_run("r1").last_seq - 1,
            abandoned=["test#2", "implement#3", "test#3", "implement#4"],
        )
    )
    _recounted(store, "r1")
    assert len(store.visits("r1")) == 3
    _visit(w, "test", 2, spend=5)  # run again under an abandoned number
    _recounted(store, "r1")
    w.emit(ev.RunFinished(status="succeeded", visits=4))
    _recounted(store, "r1")
    assert store.get_run("r1").visits == 4
