"""`stats_source` (store/stats.py) on every backend: the same sums, percentiles and
friction events, with the filter's pipeline and period applied."""

from __future__ import annotations

from swell.events import models as ev
from swell.store.capabilities import stats_source
from swell.store.pages import RunFilter
from swell.store.protocols import Store

from .conftest import NewRun, Writer


def _visit(
    w: Writer, step: str, n: int, outcome: str = "success", kind: str = "prompt", **fields: object
) -> None:
    w.emit(
        ev.StepStarted(step_id=step, visit=n, kind=kind),
        ev.StepFinished(step_id=step, visit=n, outcome=outcome, **fields),  # type: ignore[arg-type]
    )


def _review(w: Writer, verdict: str, visit: int) -> None:
    w.emit(
        ev.ReviewCompleted(
            step_id="implement", visit=visit, index=1, reviewer="critic", verdict=verdict,
            tokens_in=100, tokens_out=10, cost_usd=0.01,
        )
    )  # fmt: skip


def _fill(new_run: NewRun) -> None:
    a = new_run("a-1", pipeline="build")
    a.emit(ev.RunStarted(pipeline="build"))
    _visit(a, "implement", 1, "failure", duration_ms=100, tokens_in=1000, tokens_out=50)
    _review(a, "rework", 1)
    a.emit(
        ev.ContractFailed(
            step_id="implement", visit=1, index=1, contract_type="agent_review",
            policy="retry", error="rework", verdict="rework",
        ),
        ev.RetryRequested(step_id="implement", visit=1, attempt=2, max_attempts=3, reason="x"),
    )  # fmt: skip
    _visit(a, "implement", 2, duration_ms=300, tokens_in=2000, tokens_out=70, cost_usd=0.5)
    _review(a, "pass", 2)
    _visit(a, "implement", 3, duration_ms=200)
    a.emit(ev.RunFinished(status="succeeded", visits=3))
    b = new_run("b-1", pipeline="other")
    b.emit(ev.RunStarted(pipeline="other"))
    _visit(b, "lint", 1, duration_ms=7)
    b.emit(ev.BreakerTripped(step_id="lint", visit=1, error_key="e", count=3))


def test_stats_source_sums_runs_steps_reviews(store: Store, new_run: NewRun) -> None:
    _fill(new_run)
    found = stats_source(store, RunFilter())
    assert [r.id for r in found.runs] == ["b-1", "a-1"]  # newest first
    a = next(r for r in found.runs if r.id == "a-1")
    assert (a.visits, a.steps, a.tokens_in, a.tokens_out, a.cost_usd) == (3, 1, 3000, 120, 0.5)
    assert a.status == "succeeded" and a.started_at and a.finished_at
    step = next(s for s in found.steps if s.step_id == "implement")
    assert (step.pipeline, step.visits, step.runs, step.max_visits) == ("build", 3, 1, 3)
    assert (step.duration_ms, step.median_ms, step.p95_ms) == (600, 200, 300)
    (review,) = found.reviews
    assert (review.step_id, review.reviews, review.passed, review.verdicts) == (
        "implement",
        2,
        1,
        2,
    )
    assert (review.tokens_in, review.tokens_out) == (200, 20)
    assert abs(review.cost_usd - 0.02) < 1e-9
    kinds = [e.type for e in found.events["a-1"]]
    assert kinds == ["contract.failed", "retry.requested"]
    assert [e.type for e in found.events["b-1"]] == ["breaker.tripped"]
    assert found.events["a-1"][0].seq < found.events["a-1"][1].seq


def test_stats_source_keeps_what_the_filter_keeps(store: Store, new_run: NewRun) -> None:
    _fill(new_run)
    only = stats_source(store, RunFilter(pipeline="other"))
    assert [r.id for r in only.runs] == ["b-1"]
    assert [s.step_id for s in only.steps] == ["lint"] and not only.reviews
    assert set(only.events) == {"b-1"}
    later = stats_source(store, RunFilter(since="2999-01-01T00:00:00.000Z"))
    assert not later.runs and not later.steps and not later.reviews and not later.events


def test_failed_visits_are_counted_per_step_but_not_a_router_s(
    store: Store, new_run: NewRun
) -> None:
    """A conditional step's visit inherits the outcome of the visit it routes on: its
    failure is that visit's, not one of its own."""
    r = new_run("r-1", pipeline="loop")
    r.emit(ev.RunStarted(pipeline="loop"))
    for n, outcome in enumerate(("failure", "failure", "success"), start=1):
        _visit(r, "run-tests", n, outcome, kind="command")
        _visit(r, "check", n, outcome, kind="conditional")
    r.emit(ev.RunFinished(status="succeeded", visits=6))
    found = {s.step_id: (s.visits, s.failed) for s in stats_source(store, RunFilter()).steps}
    assert found == {"run-tests": (3, 2), "check": (3, 0)}
