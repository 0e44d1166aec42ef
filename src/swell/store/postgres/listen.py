"""Commits as they land, for a process that follows many runs at once (`swell serve`'s
shared tails, web/tails.py): one LISTEN connection, read in a thread of its own, calls
back with the run id of each commit's NOTIFY (`PostgresStore.emit` sends it).

`wait_for_events` on the store serves one follower of one run; this serves every run a
server shows with one connection and one thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import psycopg
from psycopg import sql

from swell.errors import StoreError

WAKE_SECONDS = 0.5  # how often the thread looks whether it was closed


def listen(conn: psycopg.Connection[tuple[object, ...]], channel: str) -> None:
    """LISTEN on `conn` (autocommit), and record it in `listeners` so that commits
    notify from now on. Taking the table's lock waits for every writer that has looked
    at `listeners` without finding one and not yet committed: each of those commits
    lands before this returns, so a follower that reads the store after `listen` misses
    none of them, and every later commit sees the row. Rows of connections gone
    (killed processes) are dropped here; until then they cost only a NOTIFY."""
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
    with conn.transaction():
        conn.execute("LOCK TABLE listeners IN ACCESS EXCLUSIVE MODE")
        conn.execute("DELETE FROM listeners WHERE pid NOT IN (SELECT pid FROM pg_stat_activity)")
        conn.execute("INSERT INTO listeners (pid) VALUES (pg_backend_pid()) ON CONFLICT DO NOTHING")


class CommitListener:
    """LISTEN on the store's channel; `start(on_commit)` calls `on_commit(run_id)` from
    its thread for every commit, until `close`."""

    def __init__(self, url: str, channel: str, where: str) -> None:
        try:
            self.conn = psycopg.connect(url, autocommit=True)
            listen(self.conn, channel)
        except psycopg.Error as exc:
            raise StoreError(f"cannot listen to the store at {where}: {exc}") from None
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, on_commit: Callable[[str], None]) -> None:
        self._thread = threading.Thread(
            target=self._read, args=(on_commit,), name="swell-commits", daemon=True
        )
        self._thread.start()

    def _read(self, on_commit: Callable[[str], None]) -> None:
        while not self._closed.is_set():
            try:
                for note in self.conn.notifies(timeout=WAKE_SECONDS):
                    on_commit(note.payload)
            except psycopg.Error:
                # the connection is gone (closed, or the server went away): the tails
                # still look now and then by themselves (web/tails.py)
                return

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=2 * WAKE_SECONDS)
        with contextlib.suppress(psycopg.Error):
            unlisten(self.conn)
            self.conn.close()


def unlisten(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """Drop `conn`'s row in `listeners`: commits stop notifying when no one is left."""
    conn.execute("DELETE FROM listeners WHERE pid = pg_backend_pid()")
