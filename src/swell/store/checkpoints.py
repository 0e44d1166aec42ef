"""WAL checkpoints off the commit path, for a process that writes events.

In WAL mode a commit appends the changed pages to the WAL, and now and then a
checkpoint copies them back into the database file. SQLite runs that checkpoint
inside the commit that fills the WAL past `wal_autocheckpoint` pages, and with
synchronous=NORMAL a checkpoint syncs the WAL and then the database to disk: two
fsyncs, milliseconds each on a busy disk, paid by whichever visit's commit comes
then. A writer instead turns automatic checkpoints off and hands them to a thread
with its own connection, which runs a PASSIVE checkpoint (it never blocks a writer or
a reader) every so many commits. Nothing changes on disk: a committed batch is in
the WAL before `emit` returns, and a checkpoint only moves it; a process killed at
any moment loses nothing committed.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

EVERY = 128  # commits between checkpoints (about SQLite's default of 1000 WAL pages)


class Checkpoints:
    """A thread that checkpoints the WAL of `path` when `committed` says it is time."""

    def __init__(self, path: Path, every: int | None = None) -> None:
        self.path = path
        self.every = every or EVERY
        self._commits = 0
        self._wake = threading.Event()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="swell-checkpoints", daemon=True)
        self._thread.start()

    def committed(self) -> None:
        """One more commit by the writer; every `every` of them, a checkpoint."""
        self._commits += 1
        if self._commits >= self.every:
            self._commits = 0
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
                try:
                    db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                except sqlite3.Error:
                    continue  # busy or failing: the next one tries again
        finally:
            db.close()
