"""Postgres's queries for the dashboard's pages (store/pages.py): a page of runs by the
`runs_created` index, a page of visits by the visits' key, sums in SQL. The answers
are `ReaderPages`' (the generic pager), which tests/store checks."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from swell.store.pages import (
    ARTIFACT_COLUMNS,
    ARTIFACT_ORDER,
    REVIEW_COLUMNS,
    VISIT_COLUMNS,
    ArtifactPage,
    RunFilter,
    RunHead,
    RunPage,
    RunTotals,
    VisitDetail,
    VisitKey,
    VisitPage,
    run_where,
    visit_where,
)
from swell.store.postgres.queries import RUN_COLUMNS
from swell.store.rows import ArtifactRow, ReviewRow, RunRow, VisitRow

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


R = TypeVar("R", bound="DataclassInstance")


class RowsQuery(Protocol):
    """`PostgresStore._rows`: one query's rows as dataclasses of `cls`."""

    def __call__(self, cls: type[R], query: str, params: tuple[Any, ...], /) -> list[R]: ...


class PostgresPages:
    """Pages over a Postgres handle, read through its three query methods (each one
    statement under the handle's lock, errors translated as the store's own)."""

    def __init__(
        self,
        rows: RowsQuery,
        all: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
        one: Callable[[str, tuple[Any, ...]], tuple[Any, ...] | None],
    ) -> None:
        self.rows, self.all, self.one = rows, all, one

    def runs_page(self, filt: RunFilter, offset: int, limit: int) -> RunPage:
        where, params = run_where(filt, "%s")
        counted = self.one(f"SELECT COUNT(*) FROM runs {where}", params)
        runs = self.rows(
            RunRow,
            f"SELECT {RUN_COLUMNS} FROM runs {where} "
            "ORDER BY created_at DESC, num DESC LIMIT %s OFFSET %s",
            (*params, limit, offset),
        )
        total = int(counted[0]) if counted else 0
        return RunPage(runs, self.totals([r.id for r in runs]), total)

    def totals(self, ids: Sequence[str]) -> dict[str, RunTotals]:
        totals = {run_id: RunTotals() for run_id in ids}
        if not ids:
            return totals
        for run_id, t_in, t_out, cost in self.all(
            # kept by the visits' trigger (store/counters.py): no visit is read
            "SELECT run_id, tokens_in, tokens_out, cost_usd FROM run_counts WHERE run_id = ANY(%s)",
            (list(ids),),
        ):
            totals[run_id] = RunTotals(int(t_in or 0), int(t_out or 0), float(cost or 0.0))
        for parent, count in self.all(
            "SELECT parent_run_id, COUNT(*) FROM runs WHERE parent_run_id = ANY(%s) "
            "GROUP BY parent_run_id",
            (list(ids),),
        ):
            totals[parent].children = int(count)
        return totals

    def visits_page(self, run_id: str, offset: int, limit: int) -> VisitPage:
        counted = self.one("SELECT visit_rows FROM run_counts WHERE run_id = %s", (run_id,))
        # SQLite's order: a visit not started yet (NULL) sorts last going down
        visits = self.rows(
            VisitRow,
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = %s "
            "ORDER BY started_at DESC NULLS LAST, step_id DESC, visit DESC LIMIT %s OFFSET %s",
            (run_id, limit, offset),
        )
        return VisitPage(visits, int(counted[0]) if counted else 0)

    def visit(self, run_id: str, step_id: str, visit: int) -> VisitRow | None:
        rows = self.rows(
            VisitRow,
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = %s AND step_id = %s AND visit = %s",
            (run_id, step_id, visit),
        )
        return rows[0] if rows else None

    def head(self, run_id: str) -> RunHead | None:
        row = self.one(
            "SELECT status, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = %s), 0) "
            "FROM runs WHERE id = %s",
            (run_id, run_id),
        )
        return RunHead(str(row[0]), int(row[1])) if row else None

    def visit_detail(self, run_id: str, step_id: str, visit: int) -> VisitDetail:
        from swell.events.models import event_json, stored_event

        tail = self.one(
            "SELECT output_tail FROM visits WHERE run_id = %s AND step_id = %s AND visit = %s",
            (run_id, step_id, visit),
        )
        rows = self.all(
            "SELECT seq, ts, type, data FROM events "
            "WHERE run_id = %s AND step_id = %s AND visit = %s ORDER BY seq",
            (run_id, step_id, visit),
        )
        events: list[dict[str, Any]] = [
            json.loads(
                event_json(
                    stored_event(
                        kind, data, run_id=run_id, seq=seq, ts=ts, step_id=step_id, visit=visit
                    )
                )
            )
            for seq, ts, kind, data in rows
        ]
        return VisitDetail(tail[0] if tail else None, events)

    def visits_total(self) -> int:
        found = self.one("SELECT COALESCE(SUM(finished_visits), 0) FROM run_counts", ())
        return int(found[0]) if found else 0

    def pipeline_names(self) -> list[str]:
        return [r[0] for r in self.all("SELECT DISTINCT pipeline FROM runs ORDER BY 1", ())]

    def artifacts_page(self, run_id: str, limit: int, of: VisitKey | None = None) -> ArtifactPage:
        where, params = visit_where(of, "%s")
        counted = self.one(
            f"SELECT COUNT(*) FROM artifacts WHERE run_id = %s{where}", (run_id, *params)
        )
        rows = self.rows(
            ArtifactRow,
            f"SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = %s{where} "
            f"{ARTIFACT_ORDER} LIMIT %s",
            (run_id, *params, max(limit, 0)),
        )
        return ArtifactPage(rows, int(counted[0]) if counted else 0)

    def artifact(self, run_id: str, of: VisitKey, name: str) -> ArtifactRow | None:
        rows = self.rows(
            ArtifactRow,
            f"SELECT {ARTIFACT_COLUMNS} FROM artifacts "
            "WHERE run_id = %s AND step_id = %s AND visit = %s AND name = %s",
            (run_id, *of, name),
        )
        return rows[0] if rows else None

    def reviews_of(self, run_id: str, of: VisitKey) -> list[ReviewRow]:
        return self.rows(
            ReviewRow,
            f"SELECT {REVIEW_COLUMNS} FROM reviews WHERE run_id = %s AND step_id = %s "
            "AND visit = %s ORDER BY ts, step_id, visit, contract",
            (run_id, *of),
        )
