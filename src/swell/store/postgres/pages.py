"""Postgres's side of the dashboard's pages (store/sql_pages.py has the SQL both
backends share): the runs' columns and order, and a run's events by their key."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from swell.store.pages import RunHead
from swell.store.postgres.queries import RUN_COLUMNS
from swell.store.sql_pages import SqlPages
from swell.store.sql_reads import with_mark

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


R = TypeVar("R", bound="DataclassInstance")


class RowsQuery(Protocol):
    """`PostgresStore._rows`: one query's rows as dataclasses of `cls`."""

    def __call__(self, cls: type[R], query: str, params: tuple[Any, ...], /) -> list[R]: ...


class PostgresPages(SqlPages):
    """Pages over a Postgres handle, read through its three query methods (each one
    statement under the handle's lock, errors translated as the store's own)."""

    run_columns, age, nulls_last = RUN_COLUMNS, "num", " NULLS LAST"

    def __init__(
        self,
        rows: RowsQuery,
        all: Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]],
        one: Callable[[str, tuple[Any, ...]], tuple[Any, ...] | None],
    ) -> None:
        self.rows, self.all, self.one = rows, all, one

    def _rows(self, cls: type[R], sql: str, params: tuple[Any, ...]) -> list[R]:
        return self.rows(cls, with_mark(sql, "%s"), params)

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self.all(with_mark(sql, "%s"), params)

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return self.one(with_mark(sql, "%s"), params)

    def head(self, run_id: str) -> RunHead | None:
        row = self.one(
            "SELECT status, COALESCE((SELECT MAX(seq) FROM events WHERE run_id = %s), 0) "
            "FROM runs WHERE id = %s",
            (run_id, run_id),
        )
        return RunHead(str(row[0]), int(row[1])) if row else None

    def _visit_events(self, run_id: str, step_id: str, visit: int) -> list[tuple[Any, ...]]:
        return self.all(
            "SELECT seq, ts, type, data FROM events "
            "WHERE run_id = %s AND step_id = %s AND visit = %s ORDER BY seq",
            (run_id, step_id, visit),
        )
