"""What `swell retro stats` and the dashboard's analytics read: runs, steps and reviews
added up by the backend, and the few events friction is classified from.

A backend with the `stats` capability answers `StatsReader.stats_source(filt)`: SQLite
and Postgres add up in SQL (`sql_stats`, one query per part, the runs the filter keeps
joined once, in each backend's `Dialect`: sqlite/stats.py, postgres/stats.py), so 10,000
runs cost a few queries, not 10,000; for any other backend (memory)
`capabilities.stats_source` uses `reader_stats`, which computes the same answers from
the `RunReader` methods. Percentiles are
nearest-rank (the value at rank ceil(q * n) of n ascending values) everywhere.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from swell.store.pages import RunFilter, run_where

if TYPE_CHECKING:
    from swell.events.models import Event
    from swell.store.protocols import RunReader

# the events friction is classified from (retro/friction.py); rare next to agent
# text and usage, so reading only these is cheap
FRICTION_TYPES = (
    "contract.failed",
    "retry.requested",
    "rework.requested",
    "breaker.tripped",
    "limit.exceeded",
    "relay.triggered",
    "gate.waiting",
    "gate.resolved",
)
FINISHED = ("succeeded", "failed")
# step kinds whose visit inherits the outcome of the visit it routes on (`type:
# conditional`): its failure is that visit's, counted there, never a failure of its own
ROUTER_KINDS = ("conditional",)


@dataclass
class RunFacts:
    """One run kept by the filter, with what its visits add up to."""

    id: str
    pipeline: str
    status: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    visits: int  # finished visits
    steps: int  # steps with a finished visit
    tokens_in: int
    tokens_out: int
    cost_usd: float


@dataclass
class StepFacts:
    """One step of one pipeline over the runs kept."""

    pipeline: str
    step_id: str
    visits: int
    runs: int  # runs that visited it
    max_visits: int  # the most visits it had in one run
    tokens_in: int
    tokens_out: int
    cost_usd: float
    duration_ms: int  # all its finished visits together
    median_ms: int | None = None
    p95_ms: int | None = None
    failed: int = 0  # its failed visits (a router's inherited failures are not its own)


@dataclass
class ReviewFacts:
    """The agent reviews of one step's work (the step reviewed, not the reworking one)."""

    pipeline: str
    step_id: str
    reviews: int
    passed: int
    verdicts: int  # reviews that gave a verdict at all
    tokens_in: int
    tokens_out: int
    cost_usd: float


@dataclass
class StatsSource:
    runs: list[RunFacts] = field(default_factory=list)  # newest first
    steps: list[StepFacts] = field(default_factory=list)
    reviews: list[ReviewFacts] = field(default_factory=list)
    events: dict[str, list[Event]] = field(default_factory=dict)  # FRICTION_TYPES, by run


def rank(values: Sequence[int], q: float) -> int | None:
    """The nearest-rank percentile `q` (0 < q <= 1) of `values`, None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    index = max(1, -(-round(q * 100) * len(ordered) // 100))
    return ordered[index - 1]


# ------------------------------------------------------------------ any backend


def reader_stats(store: RunReader, filt: RunFilter) -> StatsSource:
    """The stats source from the `RunReader` methods (reads every kept run)."""
    runs = [r for r in store.list_runs(-1, filt.include_children) if filt.keeps(r)]
    out = StatsSource()
    steps: dict[tuple[str, str], StepFacts] = {}
    durations: dict[tuple[str, str], list[int]] = defaultdict(list)
    reviews: dict[tuple[str, str], ReviewFacts] = {}
    for run in runs:
        visits = store.visits(run.id)
        done = [v for v in visits if v.status in FINISHED]
        out.runs.append(
            RunFacts(
                run.id, run.pipeline, run.status, run.created_at, run.started_at,
                run.finished_at, len(done), len({v.step_id for v in done}),
                sum(v.tokens_in for v in visits), sum(v.tokens_out for v in visits),
                sum(v.cost_usd for v in visits),
            )
        )  # fmt: skip
        seen: set[str] = set()
        for v in visits:
            key = (run.pipeline, v.step_id)
            s = steps.setdefault(key, StepFacts(run.pipeline, v.step_id, 0, 0, 0, 0, 0, 0.0, 0))
            s.visits += 1
            s.failed += v.status == "failed" and v.kind not in ROUTER_KINDS
            s.runs += v.step_id not in seen
            seen.add(v.step_id)
            s.max_visits = max(s.max_visits, v.visit)
            s.tokens_in += v.tokens_in
            s.tokens_out += v.tokens_out
            s.cost_usd += v.cost_usd
            if v.duration_ms is not None:
                s.duration_ms += v.duration_ms
                durations[key].append(v.duration_ms)
        for w in store.reviews(run.id):
            key = (run.pipeline, w.for_step or w.step_id)
            r = reviews.setdefault(key, ReviewFacts(*key, 0, 0, 0, 0, 0, 0.0))
            r.reviews += 1
            r.passed += w.verdict == "pass"
            r.verdicts += w.verdict is not None
            r.tokens_in += w.tokens_in
            r.tokens_out += w.tokens_out
            r.cost_usd += w.cost_usd
        kept = [e for e in store.events(run.id) if e.type in FRICTION_TYPES]
        if kept:
            out.events[run.id] = kept
    for key, s in steps.items():
        s.median_ms, s.p95_ms = rank(durations[key], 0.5), rank(durations[key], 0.95)
    out.steps = sorted(steps.values(), key=lambda s: (s.pipeline, s.step_id))
    out.reviews = sorted(reviews.values(), key=lambda r: (r.pipeline, r.step_id))
    return out


# ------------------------------------------------------------------- SQL backends


@dataclass(frozen=True)
class Dialect:
    """What differs between SQLite and Postgres for these queries."""

    mark: str  # the parameter placeholder
    # SQL joining `sel` (the kept runs) to their events: selects run id, seq, ts,
    # type, step id, visit and data
    events_sql: str
    seq: Callable[[Any], int]  # the seq from the selected seq column
    ts: Callable[[Any], str]  # the event time from the stored one


def _sel(filt: RunFilter) -> tuple[str, tuple[Any, ...]]:
    where, params = run_where(filt)
    return f"WITH sel AS (SELECT id, pipeline FROM runs {where}) ", params


_RUNS = (
    "SELECT r.id, r.pipeline, r.status, r.created_at, r.started_at, r.finished_at, "
    "COALESCE(SUM(CASE WHEN v.status IN ('succeeded', 'failed') THEN 1 ELSE 0 END), 0), "
    "COUNT(DISTINCT CASE WHEN v.status IN ('succeeded', 'failed') THEN v.step_id END), "
    "COALESCE(SUM(v.tokens_in), 0), COALESCE(SUM(v.tokens_out), 0), "
    "COALESCE(SUM(v.cost_usd), 0) "
    "FROM runs r JOIN sel ON sel.id = r.id LEFT JOIN visits v ON v.run_id = r.id "
    "GROUP BY r.id, r.pipeline, r.status, r.created_at, r.started_at, r.finished_at "
    "ORDER BY r.created_at DESC, r.id DESC"
)
_STEPS = (
    "SELECT sel.pipeline, v.step_id, COUNT(*), COUNT(DISTINCT v.run_id), MAX(v.visit), "
    "SUM(v.tokens_in), SUM(v.tokens_out), SUM(v.cost_usd), COALESCE(SUM(v.duration_ms), 0), "
    "SUM(CASE WHEN v.status = 'failed' AND COALESCE(v.kind, '') NOT IN ("
    + ", ".join(f"'{kind}'" for kind in ROUTER_KINDS)
    + ") THEN 1 ELSE 0 END) "
    "FROM visits v JOIN sel ON sel.id = v.run_id GROUP BY sel.pipeline, v.step_id"
)
# nearest rank: the median is rank (n + 1) / 2, p95 rank (95 n + 99) / 100 (integers)
_PERCENTILES = (
    ", d AS (SELECT sel.pipeline AS pipeline, v.step_id AS step_id, v.duration_ms AS ms, "
    "ROW_NUMBER() OVER (PARTITION BY sel.pipeline, v.step_id ORDER BY v.duration_ms) AS rn, "
    "COUNT(*) OVER (PARTITION BY sel.pipeline, v.step_id) AS n "
    "FROM visits v JOIN sel ON sel.id = v.run_id WHERE v.duration_ms IS NOT NULL) "
    "SELECT pipeline, step_id, MAX(CASE WHEN rn = (n + 1) / 2 THEN ms END), "
    "MAX(CASE WHEN rn = (95 * n + 99) / 100 THEN ms END) FROM d GROUP BY pipeline, step_id"
)
_REVIEWS = (
    "SELECT sel.pipeline, COALESCE(w.for_step, w.step_id), COUNT(*), "
    "SUM(CASE WHEN w.verdict = 'pass' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN w.verdict IS NOT NULL THEN 1 ELSE 0 END), "
    "SUM(w.tokens_in), SUM(w.tokens_out), SUM(w.cost_usd) "
    "FROM reviews w JOIN sel ON sel.id = w.run_id "
    "GROUP BY sel.pipeline, COALESCE(w.for_step, w.step_id)"
)


def sql_stats(
    execute: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
    dialect: Dialect,
    filt: RunFilter,
) -> StatsSource:
    """The stats source in five queries; `execute` runs one and returns its rows."""
    from swell.events.models import stored_event

    sel, params = _sel(filt)

    def rows(sql: str, extra: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        return execute((sel + sql).replace("?", dialect.mark), params + extra)

    out = StatsSource()
    out.runs = [
        RunFacts(
            str(i), str(p), str(s), str(c), a, b, int(n), int(k), int(t_in), int(t_out), float(cost)
        )
        for i, p, s, c, a, b, n, k, t_in, t_out, cost in rows(_RUNS)
    ]
    steps = {
        (str(p), str(s)): StepFacts(
            str(p), str(s), int(n), int(runs), int(most), int(t_in or 0), int(t_out or 0),
            float(cost or 0), int(ms), failed=int(bad or 0),
        )
        for p, s, n, runs, most, t_in, t_out, cost, ms, bad in rows(_STEPS)
    }  # fmt: skip
    for p, s, median, p95 in rows(_PERCENTILES):
        step = steps.get((str(p), str(s)))
        if step is not None:
            step.median_ms = None if median is None else int(median)
            step.p95_ms = None if p95 is None else int(p95)
    out.steps = sorted(steps.values(), key=lambda s: (s.pipeline, s.step_id))
    out.reviews = sorted(
        (
            ReviewFacts(str(p), str(s), int(n), int(ok), int(given), int(a or 0), int(b or 0),
                        float(cost or 0))
            for p, s, n, ok, given, a, b, cost in rows(_REVIEWS)
        ),
        key=lambda r: (r.pipeline, r.step_id),
    )  # fmt: skip
    marks = ", ".join("?" * len(FRICTION_TYPES))
    for run_id, seq, ts, kind, step, visit, data in rows(
        dialect.events_sql.replace("{types}", marks), FRICTION_TYPES
    ):
        event = stored_event(
            kind, data, run_id=run_id, seq=dialect.seq(seq), ts=dialect.ts(ts),
            step_id=step, visit=visit,
        )  # fmt: skip
        out.events.setdefault(run_id, []).append(event)
    return out
