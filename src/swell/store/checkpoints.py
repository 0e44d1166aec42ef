"""WAL checkpoints off the commit path, for a process that writes events.

In WAL mode a commit appends the changed pages to the WAL, and now and then a
checkpoint copies them back into the database file. SQLite runs that checkpoint
inside the commit that fills the WAL past `wal_autocheckpoint` pages, and with
synchronous=NORMAL a checkpoint syncs the WAL and then the database to disk: two
fsyncs, milliseconds each on a busy disk, paid by whichever visit's commit comes
then. A writer instead turns automatic checkpoints off and hands them to a thread
with its own connection, which runs a PASSIVE checkpoint (it never blocks a writer or
a reader) every so many commits. Only a writer that commits faster than the thread
can catch up runs a short checkpoint itself, now and then (`Checkpoints`). Nothing
changes on disk: a committed batch is in the WAL before `emit` returns, and a
checkpoint only moves it; a process killed at any moment loses nothing committed.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

EVERY = 128  # commits between checkpoints (about SQLite's default of 1000 WAL pages)
PASSES = 4  # checkpoints the thread runs in a row to catch up with the writer


class Checkpoints:
    """A thread that checkpoints the WAL of `path` when `committed` says it is time.

    The WAL is written from its start again only by a transaction that begins once
    every frame in it is copied to the database; until then each commit appends to
    it (and extends the file). The writer goes on committing while the thread copies,
    so the thread checkpoints again until a pass finds nothing new. When the writer
    commits faster than that converges, `committed` asks the writer to run the last,
    short checkpoint itself, between two of its own commits: without that the WAL of a
    busy run would grow by every page it ever committed.
    """

    def __init__(self, path: Path, every: int | None = None) -> None:
        self.path = path
        self.every = every or EVERY
        self._commits = 0
        self._wake = threading.Event()
        self._stopping = False
        self._behind = False  # the thread's last round did not catch up
        self._thread = threading.Thread(target=self._run, name="swell-checkpoints", daemon=True)
        self._thread.start()

    def committed(self) -> bool:
        """One more commit by the writer; every `every` of them, a checkpoint. True when
        the writer should now checkpoint what the thread could not catch up with."""
        self._commits += 1
        if self._behind:
            self._behind = False
            return True
        if self._commits >= self.every:
            self._commits = 0
            self._wake.set()
        return False

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
                self._behind = not _catch_up(db)
        finally:
            db.close()


def checkpoint(db: sqlite3.Connection) -> tuple[int, int] | None:
    """A PASSIVE checkpoint (it never waits for a writer or a reader): the frames in
    the WAL and how many of them are now in the database; None if it failed."""
    try:
        _busy, frames, copied = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    except sqlite3.Error:
        return None  # busy or failing: the next round tries again
    return frames, copied


def _catch_up(db: sqlite3.Connection) -> bool:
    """Checkpoint until a pass finds nothing new; False if the writer kept ahead."""
    previous = None
    for _ in range(PASSES):
        done = checkpoint(db)
        if done is None:
            return True  # nothing to finish: the next round tries again
        if done == previous and done[0] == done[1]:
            return True
        previous = done
    return False
