"""`swell bench`'s records in SQLite: one JSON text per (bench, key), the last put kept
(bench/records.py says what the keys and texts are)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from swell.store.sqlite.errors import store_error

CREATE = """
    CREATE TABLE bench_records (
        id INTEGER PRIMARY KEY,
        bench_id TEXT NOT NULL,
        key TEXT NOT NULL,
        data TEXT NOT NULL
    );
    CREATE UNIQUE INDEX bench_records_key ON bench_records (bench_id, key)
"""


class SqliteBench:
    """`SqliteStore.bench_records()`: `tx` opens the store's write transaction."""

    def __init__(
        self, db: sqlite3.Connection, path: Path, tx: Callable[[], AbstractContextManager[None]]
    ) -> None:
        self.db, self.path, self.tx = db, path, tx

    def put(self, bench_id: str, key: str, data: str) -> None:
        try:
            with self.tx():
                self.db.execute(
                    "INSERT INTO bench_records (bench_id, key, data) VALUES (?, ?, ?) "
                    "ON CONFLICT (bench_id, key) DO UPDATE SET data = excluded.data",
                    (bench_id, key, data),
                )
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from None

    def records(self, bench_id: str | None = None) -> list[tuple[str, str, str]]:
        try:
            rows = self.db.execute(
                "SELECT bench_id, key, data FROM bench_records "
                "WHERE ? IS NULL OR bench_id = ? ORDER BY id",
                (bench_id, bench_id),
            ).fetchall()
        except sqlite3.Error as exc:
            raise store_error(exc, self.path) from None
        return [(str(b), str(k), str(d)) for b, k, d in rows]
