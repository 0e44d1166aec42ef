"""The retrospective of one run, from its stored events, visits and reviews."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from swell.events import models as ev
from swell.retro.friction import (
    classify,
    counts,
    feedback_lines,
    first_line,
    ms_between,
    smoothness,
)
from swell.retro.models import Loop, Retro, StepRetro, Totals, VisitChange
from swell.store.protocols import RunReader
from swell.store.rows import ReviewRow, RunRow, VisitRow
from swell.store.stats import ROUTER_KINDS

# the tools an agent changes files with (adapters report them under these names)
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit", "Delete"})
FINISHED = ("succeeded", "failed")


def build_retro(store: RunReader, run_id: str) -> Retro:
    """The retrospective of run `run_id` (a unique prefix is enough)."""
    run = store.get_run(run_id)
    events = store.events(run.id)
    visits = store.visits(run.id)
    reviews = store.reviews(run.id)
    points = classify(events)
    done = [v for v in visits if v.status in FINISHED]
    retries = sum(isinstance(e, ev.RetryRequested) for e in events)
    score, rating = smoothness(points, revisits(done, retries), run.status)
    totals = _totals(visits, reviews)
    return Retro(
        run_id=run.id,
        pipeline=run.pipeline,
        status=run.status,
        created_at=run.created_at,
        started_at=run.started_at,
        finished_at=run.finished_at,
        duration_ms=run_duration(run),
        visits=len(done),
        smoothness=score,
        rating=rating,
        counts=counts(points),
        friction=points,
        totals=totals,
        steps=_steps(visits, reviews),
        loops=loops(events, visits),
        gate_wait_ms=sum(p.wait_ms or 0 for p in points if p.kind == "gate_wait"),
        reviews=len(reviews),
        reviews_passed=sum(r.verdict == "pass" for r in reviews),
    )


def revisits(done: Sequence[VisitRow], retries: int) -> int:
    """Visits of a step after its first that no retry accounts for (a loop's)."""
    return max(0, len(done) - len({v.step_id for v in done}) - retries)


def run_duration(run: RunRow) -> int | None:
    if not run.started_at:
        return None
    end = run.finished_at or run.updated_at
    return ms_between(run.started_at, end) if end else None


def _totals(visits: Sequence[VisitRow], reviews: Sequence[ReviewRow]) -> Totals:
    t = Totals(
        tokens_in=sum(v.tokens_in for v in visits),
        tokens_out=sum(v.tokens_out for v in visits),
        cost_usd=sum(v.cost_usd for v in visits),
        review_tokens_in=sum(r.tokens_in for r in reviews),
        review_tokens_out=sum(r.tokens_out for r in reviews),
        review_cost_usd=sum(r.cost_usd for r in reviews),
    )
    t.tokens = t.tokens_in + t.tokens_out + t.review_tokens_in + t.review_tokens_out
    t.total_cost_usd = t.cost_usd + t.review_cost_usd
    return t


def _steps(visits: Sequence[VisitRow], reviews: Sequence[ReviewRow]) -> list[StepRetro]:
    steps: dict[str, StepRetro] = {}
    for v in visits:
        s = steps.get(v.step_id) or StepRetro(
            step_id=v.step_id, visits=0, failed=0, tokens_in=0, tokens_out=0, cost_usd=0.0,
            duration_ms=0,
        )  # fmt: skip
        steps[v.step_id] = s
        s.visits += 1
        s.failed += v.status == "failed" and v.kind not in ROUTER_KINDS
        s.tokens_in += v.tokens_in
        s.tokens_out += v.tokens_out
        s.cost_usd += v.cost_usd
        s.duration_ms += v.duration_ms or 0
    for r in reviews:
        found = steps.get(r.for_step or r.step_id) or steps.get(r.step_id)
        if found is not None:
            found.review_tokens += r.tokens_in + r.tokens_out
            found.review_cost_usd += r.cost_usd
    return list(steps.values())


# ------------------------------------------------------------------------ loops


@dataclass
class _Walk:
    """What the walk through a run's events has seen so far."""

    queued: dict[str, ev.StepQueued] = field(default_factory=dict)  # by step, not started
    retry: dict[tuple[str, int], ev.RetryRequested] = field(default_factory=dict)
    rework: dict[str, ev.ReworkRequested] = field(default_factory=dict)  # by reworking step
    failures: list[str] = field(default_factory=list)  # failed visits, "STEP#N failed: ..."
    mark: dict[str, int] = field(default_factory=dict)  # len(failures) at a step's last start
    gate: dict[str, ev.GateResolved] = field(default_factory=dict)  # by gate step
    changes: dict[tuple[str, int], VisitChange] = field(default_factory=dict)
    group: dict[tuple[str, int], str] = field(default_factory=dict)  # visit -> loop's step
    artifacts: dict[tuple[str, str], str] = field(default_factory=dict)  # (loop, name) -> sha
    routers: set[tuple[str, int]] = field(default_factory=set)  # visits of ROUTER_KINDS


def _started(w: _Walk, e: ev.StepStarted) -> None:
    step, visit = e.step_id or "", e.visit or 0
    queued = w.queued.pop(step, None)
    reason = queued.reason if queued else "entry"
    change = VisitChange(step_id=step, visit=visit, reason=reason)
    if e.kind in ROUTER_KINDS:
        w.routers.add((step, visit))
    if e.source_step:
        change.source = f"{e.source_step}#{e.source_visit}"
    group = step
    if reason == "retry" and e.source_visit is not None:
        retry = w.retry.get((step, e.source_visit))
        change.driven_by = f"retry: {first_line(retry.reason)}" if retry else None
    elif reason == "rework" and step in w.rework:
        rework = w.rework.pop(step)
        group = rework.for_step
        who = (
            f"review by {rework.reviewer}" if rework.reviewer else rework.contract_type or "failed"
        )
        change.driven_by = f"{who}: {first_line(rework.reason)}"
        change.feedback = feedback_lines(rework.feedback)
    elif reason == "choice" and e.source_step in w.gate:
        g = w.gate[e.source_step]
        change.driven_by = f"gate {e.source_step}: {g.decision} ({g.choice or '-'})" + (
            f": {first_line(g.reason)}" if g.reason else ""
        )
    elif visit > 1 and len(w.failures) > w.mark.get(step, 0):
        # the first failure since the step last started: what sent the loop round again
        change.driven_by = w.failures[w.mark.get(step, 0)]
    w.mark[step] = len(w.failures)
    w.changes[(step, visit)] = change
    w.group[(step, visit)] = group


def _finished(w: _Walk, e: ev.StepFinished) -> None:
    key = (e.step_id or "", e.visit or 0)
    change = w.changes.get(key)
    if change is not None:
        change.outcome, change.duration_ms = e.outcome, e.duration_ms
        change.error = first_line(e.error) or None
        change.tokens_in, change.tokens_out, change.cost_usd = e.tokens_in, e.tokens_out, e.cost_usd
    # a router's failure is the failure it routes on, already listed
    if e.outcome == "failure" and not e.optional_failure and key not in w.routers:
        w.failures.append(f"{key[0]}#{key[1]} failed: {_why(e)}")


def _why(e: ev.StepFinished) -> str:
    """A failed visit's error; a bare exit code with the last line its output ended on."""
    error = first_line(e.error) or "failure"
    tail = [line for line in (e.output_tail or "").splitlines() if line.strip()]
    if error.startswith("exit code") and tail:
        return f"{error}: {first_line(tail[-1])}"
    return error


def _artifact(w: _Walk, e: ev.ArtifactWritten) -> None:
    key = (e.step_id or "", e.visit or 0)
    change, group = w.changes.get(key), w.group.get(key)
    if change is None or group is None:
        return
    before = w.artifacts.get((group, e.name))
    if before is not None and before != e.sha256:
        change.artifacts_changed.append(e.name)
    w.artifacts[(group, e.name)] = e.sha256


def loops(events: Sequence[ev.BaseEvent], visits: Sequence[VisitRow]) -> list[Loop]:
    """Each step worked on more than once (its own visits and the visits reworking it),
    visit by visit: what led to the visit and what it changed."""
    w = _Walk()
    for e in events:
        if isinstance(e, ev.StepQueued) and e.step_id:
            w.queued[e.step_id] = e
        elif isinstance(e, ev.StepStarted):
            _started(w, e)
        elif isinstance(e, ev.StepFinished):
            _finished(w, e)
        elif isinstance(e, ev.RetryRequested) and e.step_id and e.visit:
            w.retry[(e.step_id, e.visit)] = e
        elif isinstance(e, ev.ReworkRequested) and e.step_id:
            w.rework[e.step_id] = e
        elif isinstance(e, ev.GateResolved) and e.step_id:
            w.gate[e.step_id] = e
        elif isinstance(e, ev.AgentToolCall) and e.name in WRITE_TOOLS and e.target:
            change = w.changes.get((e.step_id or "", e.visit or 0))
            if change is not None and e.target not in change.files:
                change.files.append(e.target)
        elif isinstance(e, ev.ArtifactWritten):
            _artifact(w, e)
    grouped: dict[str, list[VisitChange]] = {}
    for key, change in w.changes.items():
        grouped.setdefault(w.group[key], []).append(change)
    return [
        Loop(step_id=step, visits=len(changes), changes=changes)
        for step, changes in grouped.items()
        if len(changes) > 1
    ]
