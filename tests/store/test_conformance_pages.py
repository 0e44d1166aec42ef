"""The dashboard's pager (store/pages.py) over every backend: each backend's own
queries answer as the generic pager computed from the reader methods does."""

from __future__ import annotations

from swell.events import models as ev
from swell.store.capabilities import page_reader
from swell.store.pages import ReaderPages, RunFilter
from swell.store.protocols import Capability, Store

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
    # SQLite and Postgres page with queries of their own; the others through the pager
    assert isinstance(mine, ReaderPages) == (Capability.PAGES not in store.capabilities)
    filters = (
        RunFilter(),
        RunFilter(pipeline="build"),
        RunFilter(include_children=False),
        RunFilter(text="RUN-1"),  # an id prefix, any case
        RunFilter(text="_"),  # no wildcard: matches only a real underscore
        RunFilter(waiting=True),
    )
    for filt in filters:
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
    assert mine.visits_total() == generic.visits_total() == 10  # finished ones (/metrics)


def test_artifact_and_review_pages_read_only_what_a_page_shows(
    store: Store, new_run: NewRun
) -> None:
    """A run page's first artifacts, a visit's artifacts and reviews, one artifact: read
    by the store's own query (LIMIT, the visit's key), as the generic pager finds them."""
    run = new_run("r1")
    for n in range(7):
        step, visit = ("build", 1 + n % 2) if n < 6 else ("", 0)
        run.emit(
            ev.ArtifactWritten(
                step_id=step, visit=visit, name=f"a{n}", path=f"/ws/a{n}", sha256="a" * 64, size=n
            )
        )
    for index in (0, 1):
        run.emit(ev.ReviewCompleted(step_id="build", visit=2, index=index, reviewer="critic"))
    run.emit(ev.ReviewCompleted(step_id="build", visit=1, index=0, reviewer="critic"))
    new_run("r2").emit(
        ev.ArtifactWritten(step_id="build", visit=1, name="a0", path="/x", sha256="b" * 64, size=1)
    )
    mine, generic = page_reader(store), ReaderPages(store)
    for of in (None, ("build", 1), ("build", 2), ("", 0), ("test", 1)):
        for limit in (0, 2, 100):
            assert mine.artifacts_page("r1", limit, of) == generic.artifacts_page("r1", limit, of)
    page = mine.artifacts_page("r1", 2)
    assert (page.total, [a.name for a in page.artifacts]) == (7, ["a0", "a1"])
    page = mine.artifacts_page("r1", 100, ("build", 2))
    assert (page.total, [a.name for a in page.artifacts]) == (3, ["a1", "a3", "a5"])
    found = mine.artifact("r1", ("build", 1), "a2")
    assert found is not None and (found.path, found.size) == ("/ws/a2", 2)
    assert found == generic.artifact("r1", ("build", 1), "a2")
    assert mine.artifact("r1", ("build", 2), "a2") is None
    assert mine.artifact("r1", ("", 0), "a6") is not None
    reviews = mine.reviews_of("r1", ("build", 2))
    assert [(r.visit, r.contract) for r in reviews] == [(2, 0), (2, 1)]
    assert reviews == generic.reviews_of("r1", ("build", 2))
    assert mine.reviews_of("r1", ("test", 1)) == []
