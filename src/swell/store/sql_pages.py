"""The dashboard's pages in SQL, written once for SQLite and Postgres (store/pages.py):
runs by the `runs_created` index, visits by their key, sums in SQL.

Written with `?` placeholders; a backend reads them through its `_rows`, `_all` and
`_one` (Postgres's put in `%s`) and answers `head` and `visit_detail`, which read the
events table each keeps its own way. The answers are `ReaderPages`' (the generic
pager), which tests/store checks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from swell.store.pages import (
    ARTIFACT_COLUMNS,
    ARTIFACT_ORDER,
    REVIEW_COLUMNS,
    VISIT_COLUMNS,
    ArtifactPage,
    RunFilter,
    RunPage,
    RunTotals,
    VisitDetail,
    VisitKey,
    VisitPage,
    event_dict,
    run_where,
    visit_where,
)
from swell.store.rows import ArtifactRow, ReviewRow, RunRow, VisitRow
from swell.store.sql_reads import SqlQueries


class SqlPages(SqlQueries):
    """The shared pages, for a backend class that has `_rows`, `_all` and `_one`."""

    run_columns: str  # the backend's RUN_COLUMNS
    age = "rowid"  # orders runs created in the same millisecond (Postgres: num)
    # SQLite's order: a visit not started yet (NULL) sorts last going down
    nulls_last = ""

    def _visit_events(self, run_id: str, step_id: str, visit: int) -> list[tuple[Any, ...]]:
        """The visit's events in seq order, as (seq, ts, type, data)."""
        raise NotImplementedError

    def _count(self, sql: str, params: tuple[Any, ...]) -> int:
        row = self._one(sql, params)
        return int(row[0]) if row else 0

    def runs_page(self, filt: RunFilter, offset: int, limit: int) -> RunPage:
        where, params = run_where(filt)
        total = self._count(f"SELECT COUNT(*) FROM runs {where}", params)
        runs = self._rows(
            RunRow,
            f"SELECT {self.run_columns} FROM runs {where} "
            f"ORDER BY created_at DESC, {self.age} DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        )
        return RunPage(runs, self.totals([r.id for r in runs]), total)

    def totals(self, ids: Sequence[str]) -> dict[str, RunTotals]:
        totals = {run_id: RunTotals() for run_id in ids}
        if not ids:
            return totals
        marks = ", ".join("?" * len(ids))
        for run_id, t_in, t_out, cost in self._all(
            # kept by the visits' triggers (store/counters.py): no visit is read
            f"SELECT run_id, tokens_in, tokens_out, cost_usd FROM run_counts WHERE run_id IN ({marks})",
            tuple(ids),
        ):
            totals[run_id] = RunTotals(int(t_in or 0), int(t_out or 0), float(cost or 0.0))
        for parent, count in self._all(
            f"SELECT parent_run_id, COUNT(*) FROM runs WHERE parent_run_id IN ({marks}) "
            "GROUP BY parent_run_id",
            tuple(ids),
        ):
            totals[parent].children = int(count)
        return totals

    def visits_page(self, run_id: str, offset: int, limit: int) -> VisitPage:
        # kept by the visits' triggers (store/counters.py)
        total = self._count("SELECT visit_rows FROM run_counts WHERE run_id = ?", (run_id,))
        visits = self._rows(
            VisitRow,
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = ? "
            f"ORDER BY started_at DESC{self.nulls_last}, step_id DESC, visit DESC "
            "LIMIT ? OFFSET ?",
            (run_id, limit, offset),
        )
        return VisitPage(visits, total)

    def visit(self, run_id: str, step_id: str, visit: int) -> VisitRow | None:
        rows = self._rows(
            VisitRow,
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = ? AND step_id = ? AND visit = ?",
            (run_id, step_id, visit),
        )
        return rows[0] if rows else None

    def visit_detail(self, run_id: str, step_id: str, visit: int) -> VisitDetail:
        from swell.events.models import event_json, stored_event  # the one page with events

        tail = self._one(
            "SELECT output_tail FROM visits WHERE run_id = ? AND step_id = ? AND visit = ?",
            (run_id, step_id, visit),
        )
        events = [
            event_dict(
                event_json(
                    stored_event(
                        kind, data, run_id=run_id, seq=seq, ts=ts, step_id=step_id, visit=visit
                    )
                )
            )
            for seq, ts, kind, data in self._visit_events(run_id, step_id, visit)
        ]
        return VisitDetail(tail[0] if tail else None, events)

    def visits_total(self) -> int:
        return self._count("SELECT COALESCE(SUM(finished_visits), 0) FROM run_counts", ())

    def pipeline_names(self) -> list[str]:
        return [r[0] for r in self._all("SELECT DISTINCT pipeline FROM runs ORDER BY 1", ())]

    def artifacts_page(self, run_id: str, limit: int, of: VisitKey | None = None) -> ArtifactPage:
        where, params = visit_where(of)
        total = self._count(
            f"SELECT COUNT(*) FROM artifacts WHERE run_id = ?{where}", (run_id, *params)
        )
        rows = self._rows(
            ArtifactRow,
            f"SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE run_id = ?{where} "
            f"{ARTIFACT_ORDER} LIMIT ?",
            (run_id, *params, max(limit, 0)),
        )
        return ArtifactPage(rows, total)

    def artifact(self, run_id: str, of: VisitKey, name: str) -> ArtifactRow | None:
        rows = self._rows(
            ArtifactRow,
            f"SELECT {ARTIFACT_COLUMNS} FROM artifacts "
            "WHERE run_id = ? AND step_id = ? AND visit = ? AND name = ?",
            (run_id, *of, name),
        )
        return rows[0] if rows else None

    def reviews_of(self, run_id: str, of: VisitKey) -> list[ReviewRow]:
        return self._rows(
            ReviewRow,
            f"SELECT {REVIEW_COLUMNS} FROM reviews WHERE run_id = ? AND step_id = ? "
            "AND visit = ? ORDER BY ts, step_id, visit, contract",
            (run_id, *of),
        )
