"""The dashboard's pager (store/pages.py) over every backend: each backend's own
queries answer as the generic pager computed from the reader methods does."""

from __future__ import annotations

from swell.events import models as ev
from swell.store.pages import ReaderPages, RunFilter, page_reader
from swell.store.protocols import Store

from .conftest import Backend, NewRun


def _fill(new_run: NewRun) -> None:
    for n in range(5):
        run = new_run(f"run-{n}", pipeline="build" if n % 2 else "ship")
        run.emit(ev.RunStarted(pipeline="build"))
        for visit in (1, 2):
            run.emit(ev.StepStarted(step_id="make", visit=visit, kind="prompt"))
            run.emit(
                ev.StepFinished(
                    step_id="make",
                    visit=visit,
                    outcome="success" if visit == 2 else "failure",
                    tokens_in=10 * n,
                    tokens_out=n,
                    cost_usd=0.25,
                    output_tail=f"tail {n}.{visit}",
                    duration_ms=5,
                ),
                ev.PromptRendered(step_id="make", visit=visit, prompt=f"do {n}"),
            )
        run.emit(ev.StepStarted(step_id="check", visit=1, kind="command"))
    child = new_run("run-9", pipeline="ship", parent_run_id="run-1", parent_step_id="make")
    child.emit(ev.RunStarted(pipeline="ship"))


def test_pages_answer_as_the_generic_pager(backend: Backend, store: Store, new_run: NewRun) -> None:
    _fill(new_run)
    mine, generic = page_reader(store), ReaderPages(store)
    # SQLite and Postgres page with queries of their own; the memory store is the pager
    assert isinstance(mine, ReaderPages) == (backend.name == "memory")
    for filt in (RunFilter(), RunFilter(pipeline="build"), RunFilter(include_children=False)):
        for offset in (0, 2):
            got, want = mine.runs_page(filt, offset, 2), generic.runs_page(filt, offset, 2)
            assert [r.id for r in got.runs] == [r.id for r in want.runs]
            assert got.total == want.total and got.totals == want.totals
    assert mine.totals(["run-1"])["run-1"].children == 1
    assert mine.totals(["run-3"])["run-3"].tokens_in == 60
    got_visits = mine.visits_page("run-2", 0, 10)
    want_visits = generic.visits_page("run-2", 0, 10)
    assert got_visits.total == want_visits.total == 3
    assert [(v.step_id, v.visit) for v in got_visits.visits] == [
        (v.step_id, v.visit) for v in want_visits.visits
    ]
    assert mine.visit("run-2", "make", 2) == generic.visit("run-2", "make", 2)
    assert mine.visit("run-2", "make", 7) is None
    detail = mine.visit_detail("run-2", "make", 2)
    assert detail == generic.visit_detail("run-2", "make", 2)
    assert detail.output_tail == "tail 2.2"
    assert [e["type"] for e in detail.events] == [
        "step.started",
        "step.finished",
        "prompt.rendered",
    ]
    assert mine.pipeline_names() == generic.pipeline_names() == ["build", "ship"]
