"""SQLite write transactions: BEGIN IMMEDIATE ... COMMIT, in line with the database's
other writers (writers.py).

A connection waits for SQLite's write lock in one of two ways. Opened, it waits as
SQLite's busy handler does (`BUSY_MS`, polling in sleeps of up to 100 ms): right for a
process that writes now and then (a gate decision, a cancel request). A process that
writes events (`Writes.wait_itself`, at its first `emit`) keeps its connection at
busy_timeout=0 and waits itself: first its turn in the line, then, in the rare case
that SQLite's lock is still taken when the turn comes (a writer slipped in between
two turns), in sleeps of at most `_NAP` s. So a writer's wait is bounded by the line,
not by the busy handler's 100 ms sleeps, and a writer alone pays one BEGIN, with no
PRAGMA around it. Reads on such a connection do not wait for locks in WAL mode.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time

from swell.store.sqlite.writers import Line, Turn, leave

BUSY_MS = 30_000  # how long a writer waits for SQLite's lock before it gives up
_NAP = 0.002  # the longest sleep of a writer whose turn came while the lock was taken


class Writes:
    """How one connection begins its write transactions."""

    def __init__(self, db: sqlite3.Connection, line: Line) -> None:
        self.db = db
        self.line = line
        self.waits_itself = False  # True: busy_timeout=0, and `_begin` waits

    def wait_itself(self) -> None:
        """From now on wait for the write lock here, not in SQLite's busy handler."""
        if not self.waits_itself:
            self.db.execute("PRAGMA busy_timeout=0")
            self.waits_itself = True

    def __call__(self) -> Transaction:
        return Transaction(self)

    def begin_now(self) -> bool:
        """BEGIN IMMEDIATE if SQLite's write lock is free, without waiting for it."""
        if self.waits_itself:
            return _try_begin(self.db)
        self.db.execute("PRAGMA busy_timeout=0")
        try:
            return _try_begin(self.db)
        finally:
            self.db.execute(f"PRAGMA busy_timeout={BUSY_MS}")

    def begin(self) -> None:
        """BEGIN IMMEDIATE, waiting for SQLite's write lock."""
        if not self.waits_itself:
            self.db.execute("BEGIN IMMEDIATE")  # SQLite's busy handler waits
            return
        nap = 0.0001
        deadline = time.monotonic() + BUSY_MS / 1000
        while not _try_begin(self.db):
            if time.monotonic() >= deadline:
                self.db.execute("BEGIN IMMEDIATE")  # raises SQLite's own "database is locked"
                return
            time.sleep(nap)
            nap = min(nap * 2, _NAP)


def _try_begin(db: sqlite3.Connection) -> bool:
    try:
        db.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY:
            raise
        return False
    return True


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK when the block raises: begun at once when
    SQLite's lock is free and no one waits, else when this writer's turn in the line
    comes. SQLite rolls a transaction back by itself when a write or the commit fails
    for a full disk (or an I/O error): then there is nothing left to roll back, and
    SQLite's own error is the one to report (`translated` names the file)."""

    __slots__ = ("turn", "writes")

    def __init__(self, writes: Writes) -> None:
        self.writes = writes
        self.turn: Turn | None = None

    def __enter__(self) -> None:
        writes = self.writes
        begun, self.turn = writes.line.enter(writes.begin_now)
        if not begun:
            try:
                writes.begin()
            except BaseException:
                leave(self.turn)
                raise

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        db = self.writes.db
        try:
            if exc_type is None:
                try:
                    db.execute("COMMIT")
                except sqlite3.Error:
                    _rollback(db)
                    raise
            else:
                _rollback(db)
        finally:
            leave(self.turn)


def _rollback(db: sqlite3.Connection) -> None:
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):  # the error that got here says more
            db.execute("ROLLBACK")
