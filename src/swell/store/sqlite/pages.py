"""SQLite's queries for the dashboard's pages (store/pages.py): runs by the
`runs_created` index, visits by their key. The answers are `ReaderPages`' (the
generic pager), which tests/store checks."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from swell.events.models import event_json, stored_event
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
    event_dict,
    run_where,
    visit_where,
)
from swell.store.rows import ArtifactRow, ReviewRow, RunRow, VisitRow, row_from
from swell.store.sqlite.compact import seq_of, unpack_ts
from swell.store.sqlite.errors import translated
from swell.store.sqlite.queries import EVENTS_AFTER, RUN_COLUMNS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


@translated
class SqlitePages:
    """SQLite's queries: runs by the `runs_created` index, visits by their key."""

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.path = db, path  # `path` names the file in errors (sqlite/errors.py)

    def runs_page(self, filt: RunFilter, offset: int, limit: int) -> RunPage:
        where, params = run_where(filt)
        total = self.db.execute(f"SELECT COUNT(*) FROM runs {where}", params).fetchone()[0]
        names = [d.split(" AS ")[-1].strip() for d in _split_cols(RUN_COLUMNS)]
        rows = self.db.execute(
            f"SELECT {RUN_COLUMNS} FROM runs {where} "
            "ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ).fetchall()
        runs = [row_from(RunRow, dict(zip(names, row, strict=True))) for row in rows]
        return RunPage(runs, self.totals([r.id for r in runs]), int(total))

    def totals(self, ids: Sequence[str]) -> dict[str, RunTotals]:
        totals = {run_id: RunTotals() for run_id in ids}
        if not ids:
            return totals
        marks = ", ".join("?" * len(ids))
        for run_id, t_in, t_out, cost in self.db.execute(
            # kept by the visits' triggers (store/counters.py): no visit is read
            f"SELECT run_id, tokens_in, tokens_out, cost_usd FROM run_counts WHERE run_id IN ({marks})",
            tuple(ids),
        ):
            totals[run_id] = RunTotals(int(t_in or 0), int(t_out or 0), float(cost or 0.0))
        for parent, count in self.db.execute(
            f"SELECT parent_run_id, COUNT(*) FROM runs WHERE parent_run_id IN ({marks}) "
            "GROUP BY parent_run_id",
            tuple(ids),
        ):
            totals[parent].children = int(count)
        return totals

    def visits_page(self, run_id: str, offset: int, limit: int) -> VisitPage:
        counted = self.db.execute(
            "SELECT visit_rows FROM run_counts WHERE run_id = ?", (run_id,)
        ).fetchone()  # kept by the visits' triggers (store/counters.py)
        total = counted[0] if counted else 0
        rows = self.db.execute(
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = ? "
            "ORDER BY started_at DESC, step_id DESC, visit DESC LIMIT ? OFFSET ?",
            (run_id, limit, offset),
        ).fetchall()
        names = [c.strip() for c in VISIT_COLUMNS.split(",")]
        visits = [row_from(VisitRow, dict(zip(names, row, strict=True))) for row in rows]
        return VisitPage(visits, int(total))

    def visit(self, run_id: str, step_id: str, visit: int) -> VisitRow | None:
        row = self.db.execute(
            f"SELECT {VISIT_COLUMNS} FROM visits WHERE run_id = ? AND step_id = ? AND visit = ?",
            (run_id, step_id, visit),
        ).fetchone()
        names = [c.strip() for c in VISIT_COLUMNS.split(",")]
        return row_from(VisitRow, dict(zip(names, row, strict=True))) if row else None

    def head(self, run_id: str) -> RunHead | None:
        row = self.db.execute(
            f"SELECT status, COALESCE((SELECT MAX(id) FROM events WHERE {EVENTS_AFTER}) "
            "& 4294967295, 0) FROM runs WHERE id = ?",
            (run_id, 0, run_id, run_id),
        ).fetchone()
        return RunHead(str(row[0]), int(row[1])) if row else None

    def visit_detail(self, run_id: str, step_id: str, visit: int) -> VisitDetail:
        tail = self.db.execute(
            "SELECT output_tail FROM visits WHERE run_id = ? AND step_id = ? AND visit = ?",
            (run_id, step_id, visit),
        ).fetchone()
        rows = self.db.execute(
            f"SELECT id, ts, type, data FROM events WHERE {EVENTS_AFTER} "
            "AND step_id = ? AND visit = ? ORDER BY id",
            (run_id, 0, run_id, step_id, visit),
        )
        events = [
            event_dict(
                event_json(
                    stored_event(
                        kind,
                        data,
                        run_id=run_id,
                        seq=seq_of(key),
                        ts=unpack_ts(ts),
                        step_id=step_id,
                        visit=visit,
                    )
                )
            )
            for key, ts, kind, data in rows
        ]
        return VisitDetail(tail[0] if tail else None, events)

    def visits_total(self) -> int:
        return int(
            self.db.execute(
                "SELECT COALESCE(SUM(finished_visits), 0) FROM run_counts"  # store/counters.py
            ).fetchone()[0]
        )

    def pipeline_names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT DISTINCT pipeline FROM runs ORDER BY 1")]

    def artifacts_page(self, run_id: str, limit: int, of: VisitKey | None = None) -> ArtifactPage:
        where, params = visit_where(of)
        total = self.db.execute(
            f"SELECT COUNT(*) FROM artifacts WHERE run_id = ?{where}", (run_id, *params)
        ).fetchone()[0]
        rows = self._rows(
            ArtifactRow,
            ARTIFACT_COLUMNS,
            f"FROM artifacts WHERE run_id = ?{where} {ARTIFACT_ORDER} LIMIT ?",
            (run_id, *params, max(limit, 0)),
        )
        return ArtifactPage(rows, int(total))

    def artifact(self, run_id: str, of: VisitKey, name: str) -> ArtifactRow | None:
        rows = self._rows(
            ArtifactRow,
            ARTIFACT_COLUMNS,
            "FROM artifacts WHERE run_id = ? AND step_id = ? AND visit = ? AND name = ?",
            (run_id, *of, name),
        )
        return rows[0] if rows else None

    def reviews_of(self, run_id: str, of: VisitKey) -> list[ReviewRow]:
        return self._rows(
            ReviewRow,
            REVIEW_COLUMNS,
            "FROM reviews WHERE run_id = ? AND step_id = ? AND visit = ? "
            "ORDER BY ts, step_id, visit, contract",
            (run_id, *of),
        )

    def _rows(self, cls: type[R], columns: str, rest: str, params: tuple[Any, ...]) -> list[R]:
        names = [c.strip() for c in columns.split(",")]
        rows = self.db.execute(f"SELECT {columns} {rest}", params).fetchall()
        return [row_from(cls, dict(zip(names, row, strict=True))) for row in rows]


def _split_cols(cols: str) -> list[str]:
    """Top-level comma-separated expressions (commas inside parentheses stay)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(cols):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            parts.append(cols[start:i])
            start = i + 1
    parts.append(cols[start:])
    return parts
