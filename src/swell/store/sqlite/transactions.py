"""SQLite write transactions: BEGIN IMMEDIATE ... COMMIT, in line with the database's
other writers (writers.py)."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

from swell.store.sqlite.writers import Line

BUSY_MS = 30_000  # how long a writer waits for SQLite's lock before it gives up


@contextlib.contextmanager
def transaction(db: sqlite3.Connection, line: Line) -> Iterator[None]:
    """A write transaction on `db`: begun at once when SQLite's lock is free and no one
    waits, else when this writer's turn in `line` comes."""
    with line.turn(lambda: begin_now(db)) as begun, _Transaction(db, begun):
        yield


def begin_now(db: sqlite3.Connection) -> bool:
    """BEGIN IMMEDIATE if SQLite's write lock is free, without waiting for it."""
    db.execute("PRAGMA busy_timeout=0")
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
            raise
        return False
    finally:
        db.execute(f"PRAGMA busy_timeout={BUSY_MS}")
    return True


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the block raises. SQLite rolls a
    transaction back by itself when a write or the commit fails for a full disk (or
    an I/O error): then there is nothing left to roll back, and SQLite's own error is
    the one to report (`translated` names the file)."""

    def __init__(self, db: sqlite3.Connection, begun: bool = False) -> None:
        self.db = db
        self.begun = begun

    def __enter__(self) -> None:
        if not self.begun:
            self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error:
                self._rollback()
                raise
        else:
            self._rollback()

    def _rollback(self) -> None:
        if self.db.in_transaction:
            with contextlib.suppress(sqlite3.Error):  # the error that got here says more
                self.db.execute("ROLLBACK")
