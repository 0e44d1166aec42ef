"""SQLite's side of the dashboard's pages (store/sql_pages.py has the SQL both
backends share): the runs' columns and order, and a run's events by their key."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from swell.store.pages import RunHead
from swell.store.rows import row_from
from swell.store.sql_pages import SqlPages
from swell.store.sqlite.compact import seq_of, unpack_ts
from swell.store.sqlite.errors import translated
from swell.store.sqlite.queries import EVENTS_AFTER, RUN_COLUMNS

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


@translated
class SqlitePages(SqlPages):
    """SQLite's queries: runs by the `runs_created` index, visits by their key."""

    run_columns = RUN_COLUMNS

    def __init__(self, db: sqlite3.Connection, path: Path) -> None:
        self.db, self.path = db, path  # `path` names the file in errors (sqlite/errors.py)

    def _rows(self, cls: type[R], sql: str, params: tuple[Any, ...]) -> list[R]:
        cursor = self.db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [row_from(cls, dict(zip(names, row, strict=True))) for row in cursor.fetchall()]

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.db.execute(sql, params).fetchone()
        return row

    def head(self, run_id: str) -> RunHead | None:
        row = self.db.execute(
            f"SELECT status, COALESCE((SELECT MAX(id) FROM events WHERE {EVENTS_AFTER}) "
            "& 4294967295, 0) FROM runs WHERE id = ?",
            (run_id, 0, run_id, run_id),
        ).fetchone()
        return RunHead(str(row[0]), int(row[1])) if row else None

    def _visit_events(self, run_id: str, step_id: str, visit: int) -> list[tuple[Any, ...]]:
        rows = self.db.execute(
            f"SELECT id, ts, type, data FROM events WHERE {EVENTS_AFTER} "
            "AND step_id = ? AND visit = ? ORDER BY id",
            (run_id, 0, run_id, step_id, visit),
        )
        return [(seq_of(key), unpack_ts(ts), kind, data) for key, ts, kind, data in rows]
