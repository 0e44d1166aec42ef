"""WAL checkpoints off the commit path, for a process that writes events.

In WAL mode a commit appends the changed pages to the WAL, and now and then a
checkpoint copies them back into the database file. SQLite runs that checkpoint
inside the commit that fills the WAL past `wal_autocheckpoint` pages, and with
synchronous=NORMAL a checkpoint syncs the WAL and then the database to disk: two
fsyncs, milliseconds each on a busy disk, paid by whichever visit's commit comes
then. A writer instead turns automatic checkpoints off and hands them to a thread
with its own connection, which runs a PASSIVE checkpoint (it never blocks a writer or
a reader) every so many commits; the writer finishes each round with a short one of
its own between two commits, so that the WAL restarts (`Checkpoints`). Nothing
changes on disk: a committed batch is in the WAL before `emit` returns, and a
checkpoint only moves it; a process killed at any moment loses nothing committed.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

EVERY = 128  # commits between checkpoints (about SQLite's default of 1000 WAL pages)
PASSES = 4  # checkpoints the thread runs in a row to catch up with the writer
WAIT = 10.0  # seconds a writer far ahead waits for the thread (a hang bound, not a pace)


class Checkpoints:
    """A thread that checkpoints the WAL of `path` every `every` commits of the writer.

    The WAL is written from its start again only by a write transaction that *begins*
    once every frame in it is copied to the database; until then each commit appends
    to it (and extends the file). A writer that never pauses is inside a transaction
    almost all the time, so the moment the thread has copied everything nearly always
    falls inside one: that transaction began on the old frames and appends after them,
    and the WAL grew by every page the run committed (11 to 43 MB in the test that
    measures it). The thread therefore only copies the bulk, and after each of its
    rounds the writer finishes with a short checkpoint between two of its own commits
    (nothing to copy and no sync when the thread caught up), again on its next commits
    until one completes: its next transaction then begins on a fully copied WAL and
    restarts it. A thread slower than the writer (its syncs on a busy disk, the writer's
    commits never sync) holds the checkpoint lock while the writer appends: after
    2 x `every` commits without a restart the writer waits for the thread's round to
    end, which bounds the WAL to a few rounds' pages.
    """

    def __init__(self, path: Path, every: int | None = None) -> None:
        self.path = path
        self.every = every or EVERY
        self._commits = 0  # since the thread's last round began
        self._since = 0  # since the writer's last complete checkpoint
        self._wake = threading.Event()
        self._idle = threading.Event()  # the thread is between rounds
        self._idle.set()
        self._stopping = False
        self._finish = False  # a round ended: the writer should checkpoint now
        self._thread = threading.Thread(target=self._run, name="swell-checkpoints", daemon=True)
        self._thread.start()

    def committed(self, finish: Callable[[], tuple[int, int] | None]) -> None:
        """One more commit by the writer, who runs `finish` (a checkpoint on its own
        connection) when asked to, between this commit and its next one."""
        self._commits += 1
        self._since += 1
        if self._finish or self._since >= 2 * self.every:
            if self._since >= 2 * self.every and self._thread.is_alive():
                self._idle.wait(WAIT)  # the thread holds the checkpoint lock: let it end
            done = finish()
            if done is not None and done[0] == done[1]:
                self._finish = False
                self._since = 0
        if self._commits >= self.every:
            self._commits = 0
            self._idle.clear()
            self._wake.set()

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        try:
            db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        except sqlite3.Error:
            return  # the writer's own connection reports what is wrong with the file
        try:
            db.execute("PRAGMA busy_timeout=30000")
            while True:
                self._wake.wait()
                self._wake.clear()
                if self._stopping:
                    return
                _catch_up(db)
                self._finish = True
                self._idle.set()
        finally:
            self._idle.set()
            db.close()


def checkpoint(db: sqlite3.Connection) -> tuple[int, int] | None:
    """A PASSIVE checkpoint (it never waits for a writer or a reader): the frames in
    the WAL and how many of them are now in the database; None if it did not run."""
    try:
        busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        return None  # failing: the next round tries again
    if busy:
        return None  # another connection was checkpointing (it reports -1, -1)
    return frames, copied


def _catch_up(db: sqlite3.Connection) -> None:
    """Checkpoint until a pass finds nothing new, at most PASSES times."""
    previous = None
    for _ in range(PASSES):
        done = checkpoint(db)
        if done is None or (done == previous and done[0] == done[1]):
            return
        previous = done
