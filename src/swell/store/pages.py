"""Paged reads for the dashboard (`swell serve`): one page of runs or visits at a time.

`RunReader.list_runs` and `visits` return everything, which is what the CLI prints;
a page of a 10,000-run store or a 10,000-visit run must cost a page, not the store.
`capabilities.page_reader(store)` gives a backend's own queries (the `pages`
capability: SQLite's and Postgres's, ordered by an index, LIMIT/OFFSET) and, for any
other backend, `ReaderPages`: the same answers computed from the `RunReader` methods,
so the dashboard works over every store and is fast over the SQL ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from swell.store.rows import ArtifactRow, ReviewRow, RunRow, VisitRow

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from swell.store.protocols import Store


R = TypeVar("R", bound="DataclassInstance")


@dataclass(frozen=True)
class RunFilter:
    """Which runs a page lists; times are ISO 8601 text compared with `created_at`."""

    pipeline: str | None = None
    status: str | None = None
    since: str | None = None
    until: str | None = None
    include_children: bool = True
    text: str | None = None  # a run id prefix, or text in the run's input (any case)
    waiting: bool = False  # only runs waiting at a gate

    def keeps(self, run: RunRow) -> bool:
        return (
            (self.text is None or _matches(self.text, run))
            and (not self.waiting or run.status == "waiting")
            and (self.pipeline is None or run.pipeline == self.pipeline)
            and (self.status is None or run.status == self.status)
            and (self.since is None or run.created_at >= self.since)
            and (self.until is None or run.created_at <= self.until)
            and (self.include_children or run.parent_run_id is None)
        )


def _matches(text: str, run: RunRow) -> bool:
    return run.id.lower().startswith(text.lower()) or text.lower() in (run.input or "").lower()


def _like(text: str) -> str:
    """`text` with LIKE's wildcards escaped (with `\\`), to match literally."""
    return text.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass
class RunTotals:
    """What a run's visits add up to, and how many sub-pipeline runs it started."""

    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    children: int = 0


@dataclass
class RunPage:
    runs: list[RunRow]
    totals: dict[str, RunTotals]
    total: int  # runs matching the filter, on every page


@dataclass
class VisitPage:
    visits: list[VisitRow]  # newest first
    total: int


@dataclass
class VisitDetail:
    output_tail: str | None
    events: list[dict[str, Any]] = field(default_factory=list)  # the visit's events, as JSON


@dataclass
class ArtifactPage:
    artifacts: list[ArtifactRow]  # in the order `RunReader.artifacts` lists them
    total: int  # of the run (or of the visit asked for), on every page


VisitKey = tuple[str, int]  # (step_id, visit)


class RunHead(NamedTuple):
    status: str
    last_seq: int  # 0 before the first event


class PageReader(Protocol):
    def runs_page(self, filt: RunFilter, offset: int, limit: int) -> RunPage: ...

    def visits_page(self, run_id: str, offset: int, limit: int) -> VisitPage: ...

    def visit_detail(self, run_id: str, step_id: str, visit: int) -> VisitDetail: ...

    def visit(self, run_id: str, step_id: str, visit: int) -> VisitRow | None: ...

    def head(self, run_id: str) -> RunHead | None:
        """The run's status and newest seq, without counting its visits: what a live
        stream looks at between events (None: no such run)."""
        ...

    def totals(self, run_ids: Sequence[str]) -> dict[str, RunTotals]: ...

    def pipeline_names(self) -> list[str]: ...

    def visits_total(self) -> int:
        """Finished visits (succeeded or failed) of every run, children too."""
        ...

    def artifacts_page(self, run_id: str, limit: int, of: VisitKey | None = None) -> ArtifactPage:
        """The run's first `limit` artifacts (only visit `of`'s when given) and how many."""
        ...

    def artifact(self, run_id: str, of: VisitKey, name: str) -> ArtifactRow | None: ...

    def reviews_of(self, run_id: str, of: VisitKey) -> list[ReviewRow]:
        """The visit's reviews, in the order `RunReader.reviews` lists them."""
        ...


def event_dict(line: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(line)
    return value


class ReaderPages:
    """Pages computed from the `RunReader` methods (any backend; reads everything)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def runs_page(self, filt: RunFilter, offset: int, limit: int) -> RunPage:
        runs = [r for r in self.store.list_runs(10**9, filt.include_children) if filt.keeps(r)]
        page = runs[offset : offset + limit]
        return RunPage(page, self.totals([r.id for r in page]), len(runs))

    def totals(self, run_ids: Sequence[str]) -> dict[str, RunTotals]:
        totals = {}
        for run_id in run_ids:
            visits = self.store.visits(run_id)
            totals[run_id] = RunTotals(
                sum(v.tokens_in for v in visits),
                sum(v.tokens_out for v in visits),
                sum(v.cost_usd for v in visits),
                len(self.store.children(run_id)),
            )
        return totals

    def visit(self, run_id: str, step_id: str, visit: int) -> VisitRow | None:
        return next(
            (v for v in self.store.visits(run_id) if (v.step_id, v.visit) == (step_id, visit)), None
        )

    def head(self, run_id: str) -> RunHead | None:
        from swell.errors import RunNotFound

        try:
            run = self.store.get_run(run_id)
        except RunNotFound:
            return None
        return RunHead(run.status, run.last_seq) if run.id == run_id else None

    def visits_page(self, run_id: str, offset: int, limit: int) -> VisitPage:
        visits = list(reversed(self.store.visits(run_id)))
        return VisitPage(visits[offset : offset + limit], len(visits))

    def visit_detail(self, run_id: str, step_id: str, visit: int) -> VisitDetail:
        events = [event_dict(line) for line in self.store.raw_events(run_id)]
        mine = [e for e in events if e.get("step_id") == step_id and e.get("visit") == visit]
        tail = next(
            (e.get("output_tail") for e in reversed(mine) if e["type"] == "step.finished"), None
        )
        return VisitDetail(tail, mine)

    def visits_total(self) -> int:
        # a running run's `visits` counts those going on too: count the finished ones
        runs = self.store.list_runs(10**9, True)
        return sum(
            sum(v.status in ("succeeded", "failed") for v in self.store.visits(r.id))
            if r.finished_at is None
            else r.visits
            for r in runs
        )

    def pipeline_names(self) -> list[str]:
        return sorted({r.pipeline for r in self.store.list_runs(10**9)})

    def artifacts_page(self, run_id: str, limit: int, of: VisitKey | None = None) -> ArtifactPage:
        rows = [a for a in self.store.artifacts(run_id) if of is None or (a.step_id, a.visit) == of]
        return ArtifactPage(rows[: max(limit, 0)], len(rows))

    def artifact(self, run_id: str, of: VisitKey, name: str) -> ArtifactRow | None:
        rows = self.artifacts_page(run_id, 10**9, of).artifacts
        return next((a for a in rows if a.name == name), None)

    def reviews_of(self, run_id: str, of: VisitKey) -> list[ReviewRow]:
        return [r for r in self.store.reviews(run_id) if (r.step_id, r.visit) == of]


VISIT_COLUMNS = (
    "step_id, visit, kind, status, outcome, exit_code, error, started_at, finished_at, "
    "duration_ms, tokens_in, tokens_out, cost_usd, adapter, model"
)
ARTIFACT_COLUMNS = "step_id, visit, name, path, sha256, size, type"
ARTIFACT_ORDER = "ORDER BY created_at, step_id, visit, name"  # `RunReader.artifacts`' order
REVIEW_COLUMNS = (
    "step_id, visit, contract, for_step, reviewer, adapter, model, verdict, issues, "
    "suggestions, confidence, summary, error, tokens_in, tokens_out, cost_usd, duration_ms, ts"
)


def visit_where(of: VisitKey | None, mark: str = "?") -> tuple[str, tuple[Any, ...]]:
    """`AND` the rows of visit `of` (all rows when None), by the tables' primary key."""
    return ("", ()) if of is None else (f" AND step_id = {mark} AND visit = {mark}", of)


def run_where(filt: RunFilter, mark: str = "?") -> tuple[str, tuple[Any, ...]]:
    """The WHERE clause of `filt` and its parameters (`mark`: the driver's placeholder)."""
    clauses: list[str] = []
    params: list[Any] = []
    for column, op, value in (
        ("pipeline", "=", filt.pipeline),
        ("status", "=", filt.status),
        ("created_at", ">=", filt.since),
        ("created_at", "<=", filt.until),
    ):
        if value is not None:
            clauses.append(f"{column} {op} {mark}")
            params.append(value)
    if not filt.include_children:
        clauses.append("parent_run_id IS NULL")
    if filt.waiting:
        clauses.append("status = 'waiting'")
    if filt.text is not None:
        clauses.append(
            f"(LOWER(id) LIKE {mark} ESCAPE '\\' OR LOWER(COALESCE(input, '')) LIKE {mark} ESCAPE '\\')"
        )
        params += [_like(filt.text) + "%", "%" + _like(filt.text) + "%"]
    return ("WHERE " + " AND ".join(clauses)) if clauses else "", tuple(params)
