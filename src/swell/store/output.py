"""Visits' output stored while they run (`streaming.OutputChunk`), for both backends.

Chunks live outside the event log: a visit's output is not an event that changes the
run, a loop of short visits writes none (engine/visit/output_log.py decides), and a visit's
old tail chunks are deleted to keep it bounded, which events never are. Each chunk
gets an `id` in the order it was stored, so a reader that polls (`swell logs
--follow`) asks for the chunks after the last id it saw.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from swell.streaming import OutputChunk

CREATE = """
    CREATE TABLE output (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        step_id TEXT NOT NULL,
        visit INTEGER NOT NULL,
        stream TEXT NOT NULL,
        seq INTEGER NOT NULL,
        ts TEXT NOT NULL,
        text TEXT NOT NULL
    );
    CREATE INDEX output_run ON output (run_id, id);
    CREATE UNIQUE INDEX output_visit ON output (run_id, step_id, visit, seq)
"""

_COLUMNS = "id, run_id, step_id, visit, stream, seq, ts, text"


def write(db: sqlite3.Connection, chunks: Sequence[OutputChunk]) -> None:
    """Insert chunks (in a transaction the caller holds); a (visit, seq) stored already
    is replaced, so writing a chunk twice keeps one."""
    db.executemany(
        "INSERT OR REPLACE INTO output (run_id, step_id, visit, stream, seq, ts, text) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        [(c.run_id, c.step_id, c.visit, c.stream, c.seq, c.ts, c.text) for c in chunks],
    )


def drop(db: sqlite3.Connection, run_id: str, step_id: str, visit: int, seqs: range) -> None:
    db.execute(
        "DELETE FROM output WHERE run_id = ? AND step_id = ? AND visit = ? AND seq >= ? AND seq < ?",
        (run_id, step_id, visit, seqs.start, seqs.stop),
    )


MAX_ID = 2**63 - 1  # the highest chunk id (SQLite's and Postgres's bigint)
# Postgres's read: a page of a run's chunks (of one step, one visit); `postgres_read`
# gives its parameters
POSTGRES_READ = (
    f"SELECT {_COLUMNS} FROM output WHERE run_id = %s AND id > %s "
    "AND (%s::text IS NULL OR step_id = %s) AND (%s::int IS NULL OR visit = %s) "
    "ORDER BY id LIMIT %s"
)


def _limit(limit: int | None) -> int:
    return -1 if limit is None else max(limit, 0)  # SQLite's LIMIT -1: all


def postgres_read(
    run_id: str,
    after_id: int = 0,
    step_id: str | None = None,
    visit: int | None = None,
    limit: int | None = None,
) -> tuple[object, ...]:
    """POSTGRES_READ's parameters (LIMIT NULL: all chunks)."""
    most = None if limit is None else max(limit, 0)
    return (run_id, min(max(after_id, 0), MAX_ID), step_id, step_id, visit, visit, most)


def read(
    db: sqlite3.Connection,
    run_id: str,
    after_id: int = 0,
    step_id: str | None = None,
    visit: int | None = None,
    limit: int | None = None,
) -> list[OutputChunk]:
    sql = f"SELECT {_COLUMNS} FROM output WHERE run_id = ? AND id > ?"
    params: list[object] = [run_id, min(max(after_id, 0), MAX_ID)]
    if step_id is not None:
        sql += " AND step_id = ?"
        params.append(step_id)
    if visit is not None:
        sql += " AND visit = ?"
        params.append(visit)
    rows = db.execute(sql + " ORDER BY id LIMIT ?", [*params, _limit(limit)]).fetchall()
    return [
        OutputChunk(
            run_id=r[1],
            step_id=r[2],
            visit=r[3],
            stream=r[4],
            seq=r[5],
            ts=r[6],
            text=r[7],
            id=r[0],
        )
        for r in rows
    ]


@dataclass
class MemoryOutput:
    """The same table for `MemoryStore` (its database's lock held by the caller)."""

    rows: dict[str, dict[int, OutputChunk]] = field(default_factory=dict)  # run -> id -> chunk
    ids: dict[tuple[str, str, int, int], int] = field(default_factory=dict)  # the unique index
    last_id: int = 0

    def write(self, chunks: Sequence[OutputChunk]) -> None:
        for chunk in chunks:
            table = self.rows.setdefault(chunk.run_id, {})
            key = (chunk.run_id, chunk.step_id, chunk.visit, chunk.seq)
            old = self.ids.get(key)
            if old is not None:  # as SQLite's INSERT OR REPLACE
                table.pop(old, None)
            self.last_id += 1
            self.ids[key] = self.last_id
            table[self.last_id] = replace(chunk, id=self.last_id)

    def drop(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        table = self.rows.get(run_id, {})
        for key, chunk in list(table.items()):
            if (chunk.step_id, chunk.visit) == (step_id, visit) and chunk.seq in seqs:
                del table[key]
                self.ids.pop((run_id, step_id, visit, chunk.seq), None)

    def read(
        self,
        run_id: str,
        after_id: int = 0,
        step_id: str | None = None,
        visit: int | None = None,
        limit: int | None = None,
    ) -> list[OutputChunk]:
        found = [
            chunk
            for key, chunk in sorted(self.rows.get(run_id, {}).items())
            if key > after_id
            and (step_id is None or chunk.step_id == step_id)
            and (visit is None or chunk.visit == visit)
        ]
        return found if limit is None else found[: max(limit, 0)]
