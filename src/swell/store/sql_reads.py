"""The reads SQLite and Postgres answer with the same SQL: a run's visits, artifacts,
context, gates, reviews, rounds, snapshot and flags.

Written once with `?` placeholders; a backend runs them through its `_rows`, `_all`
and `_one`, with `placeholder` put in (Postgres's `%s`). NULLs sort as SQLite sorts
them (first going up), said out loud for Postgres.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any, TypeVar

from swell.store.rows import (
    ArtifactRow,
    GateRow,
    Limit,
    ReviewRow,
    RoundRow,
    RunRow,
    StoredRow,
    VisitRow,
    json_lines,
)
from swell.store.rules import CANDIDATES, one_run, pending

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from swell.events.models import Event

R = TypeVar("R", bound="DataclassInstance")

_GATE_COLS = (
    "run_id, step_id, visit, gate_type, status, message, choices, deadline, decision, choice, "
    "reason, decided_by"
)


@cache
def with_mark(sql: str, placeholder: str) -> str:
    return sql.replace("?", placeholder)


class SqlQueries:
    """What the shared SQL reads and pages run their statements through: one
    statement's rows as dataclasses of `cls`, as tuples, or its first row."""

    def _rows(self, cls: type[R], sql: str, params: tuple[Any, ...]) -> list[R]:
        raise NotImplementedError

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        raise NotImplementedError


class SqlReads(SqlQueries):
    """The shared reads, for a backend class that has `_rows`, `_all` and `_one`."""

    placeholder = "?"
    where: str  # the store, as messages name it
    run_columns: str  # the backend's RUN_COLUMNS
    prefix = "substr(id, 1, ?)"  # an id's first characters (Postgres: left)
    age = "rowid"  # orders runs created in the same millisecond (Postgres: num)
    no_limit: int | None = -1  # the LIMIT that returns every row (Postgres: NULL)
    top_level = "parent_run_id IS NULL"  # runs that are no sub-pipeline's (SQLite: below)

    def stored_rows(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[StoredRow]:
        raise NotImplementedError

    def _shared_rows(self, cls: type[R], sql: str, params: tuple[Any, ...]) -> list[R]:
        return self._rows(cls, with_mark(sql, self.placeholder), params)

    def _shared_one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        return self._one(with_mark(sql, self.placeholder), params)

    def get_run(self, run_id: str) -> RunRow:
        cols = self.run_columns
        rows = self._shared_rows(RunRow, f"SELECT {cols} FROM runs WHERE id = ?", (run_id,))
        if not rows and run_id:
            # a prefix, compared exactly (LIKE would ignore case and treat _ as a wildcard)
            rows = self._shared_rows(
                RunRow,
                f"SELECT {cols} FROM runs WHERE {self.prefix} = ? "
                f"ORDER BY created_at DESC, {self.age} DESC LIMIT ?",
                (len(run_id), run_id, CANDIDATES + 1),
            )
        return one_run(run_id, rows, self.where)

    def list_runs(self, limit: int = 50, include_children: bool = True) -> list[RunRow]:
        where = "" if include_children else f"WHERE {self.top_level}"
        return self._shared_rows(
            RunRow,
            f"SELECT {self.run_columns} FROM runs {where} "
            f"ORDER BY created_at DESC, {self.age} DESC LIMIT ?",
            (limit if limit >= 0 else self.no_limit,),
        )

    def children(self, run_id: str) -> list[RunRow]:
        return self._shared_rows(
            RunRow,
            f"SELECT {self.run_columns} FROM runs WHERE parent_run_id = ? "
            f"ORDER BY created_at, {self.age}",
            (run_id,),
        )

    def events(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[Event]:
        return [row.event(run_id) for row in self.stored_rows(run_id, after_seq, limit)]

    def raw_events(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[str]:
        return json_lines(self.events(run_id, after_seq, limit))

    def load_snapshot(self, run_id: str) -> tuple[int, str] | None:
        row = self._shared_one("SELECT seq, data FROM snapshots WHERE run_id = ?", (run_id,))
        return (int(row[0]), str(row[1])) if row else None

    def visits(self, run_id: str) -> list[VisitRow]:
        return self._shared_rows(
            VisitRow,
            "SELECT step_id, visit, kind, status, outcome, exit_code, error, started_at, "
            "finished_at, duration_ms, tokens_in, tokens_out, cost_usd, adapter, model FROM visits "
            "WHERE run_id = ? ORDER BY started_at NULLS FIRST, step_id, visit",
            (run_id,),
        )

    def artifacts(self, run_id: str) -> list[ArtifactRow]:
        return self._shared_rows(
            ArtifactRow,
            "SELECT step_id, visit, name, path, sha256, size, type FROM artifacts "
            "WHERE run_id = ? ORDER BY created_at, step_id, visit, name",
            (run_id,),
        )

    def context(self, run_id: str) -> dict[str, str]:
        sql = with_mark(
            "SELECT key, value FROM context WHERE run_id = ? ORDER BY key", self.placeholder
        )
        return {str(key): str(value) for key, value in self._all(sql, (run_id,))}

    def gates(self, run_id: str) -> list[GateRow]:
        return self._shared_rows(
            GateRow,
            f"SELECT {_GATE_COLS} FROM gates WHERE run_id = ? ORDER BY created_at, step_id, visit",
            (run_id,),
        )

    def pending_decision(self, run_id: str, step_id: str, visit: int) -> GateRow | None:
        return pending(self.gates(run_id), step_id, visit)

    def reviews(self, run_id: str) -> list[ReviewRow]:
        return self._shared_rows(
            ReviewRow,
            "SELECT step_id, visit, contract, for_step, reviewer, adapter, model, verdict, "
            "issues, suggestions, confidence, summary, error, tokens_in, tokens_out, cost_usd, "
            "duration_ms, ts FROM reviews WHERE run_id = ? ORDER BY ts, step_id, visit, contract",
            (run_id,),
        )

    def pipeline_text(self, run_id: str) -> str | None:
        row = self._shared_one("SELECT pipeline_text FROM runs WHERE id = ?", (run_id,))
        return row[0] if row else None

    def cancel_requested(self, run_id: str) -> bool:
        row = self._shared_one("SELECT cancel_requested FROM runs WHERE id = ?", (run_id,))
        return bool(row and row[0])

    def round_count(self, run_id: str, thread: str | None) -> int:
        if thread is None:
            row = self._shared_one("SELECT MAX(round) FROM rounds WHERE run_id = ?", (run_id,))
        else:
            row = self._shared_one(
                "SELECT MAX(thread_round) FROM rounds WHERE run_id = ? AND thread = ?",
                (run_id, thread),
            )
        return int(row[0] or 0) if row else 0

    def rounds_between(
        self, run_id: str, thread: str | None, first: int, last: int
    ) -> list[RoundRow]:
        if thread is None:
            return self._shared_rows(
                RoundRow,
                "SELECT round AS id, role, ts, metadata, content, thread FROM rounds "
                "WHERE run_id = ? AND round BETWEEN ? AND ? ORDER BY round",
                (run_id, first, last),
            )
        return self._shared_rows(
            RoundRow,
            "SELECT thread_round AS id, role, ts, metadata, content, thread FROM rounds "
            "WHERE run_id = ? AND thread = ? AND thread_round BETWEEN ? AND ? "
            "ORDER BY thread_round",
            (run_id, thread, first, last),
        )
