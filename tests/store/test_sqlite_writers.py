"""Writers of one SQLite store take turns (store/sqlite/writers.py): a run that starts
while others commit without pause gets its turn, instead of polling SQLite's lock
until they are done (or until its 30 s timeout)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from swell.events import models as ev
from swell.store.location import open_store
from swell.store.protocols import Store

BUSY = """
import sys
from pathlib import Path
from swell.events import models as ev
from swell.store.location import open_store
path, run_id, commits, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), Path(sys.argv[4])
store = open_store(path)
store.create_run(run_id=run_id, pipeline="p", input_text="", workspace="/ws")
for seq in range(1, commits + 1):
    store.emit([ev.Warning(message="busy", run_id=run_id, seq=seq, ts="2026-11-28T08:00:00.000Z")])
    if seq == 20:
        ready.touch()
store.close()
"""
WRITERS = 6
LATE = 10  # the late run's commits
COMMITS = 3000  # each busy writer's; several seconds of commits back to back


def _stored(store: Store) -> list[int]:
    return [len(store.stored_rows(f"busy{n}")) for n in range(WRITERS)]


def test_a_writer_among_busy_writers_gets_its_turn(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    open_store(path).close()
    busy = [
        subprocess.Popen(
            [sys.executable, "-c", BUSY, str(path), f"busy{n}", str(COMMITS), str(tmp_path / f"r{n}")]
        )
        for n in range(WRITERS)
    ]  # fmt: skip
    try:
        while not all((tmp_path / f"r{n}").exists() for n in range(WRITERS)):
            for proc in busy:
                assert proc.poll() is None, "a busy writer ended early"
            time.sleep(0.01)
        store = open_store(path)
        before = _stored(store)
        store.create_run(run_id="late", pipeline="p", input_text="", workspace="/ws")
        for seq in range(1, LATE + 1):
            store.emit([ev.Warning(message="late", run_id="late", seq=seq, ts="2026-11-28T08:00:00.000Z")])  # fmt: skip
        # each of the late run's commits waited a turn of each of the others (about one
        # commit each), where polling SQLite's lock it waited for a hundred or more
        after = _stored(store)
        assert max(a - b for a, b in zip(after, before, strict=True)) < 8 * LATE, (before, after)
        assert len(store.stored_rows("late")) == LATE
        store.close()
    finally:
        for proc in busy:
            proc.wait(timeout=600)
    assert all(proc.returncode == 0 for proc in busy)


def test_a_writer_alone_begins_with_one_statement(tmp_path: Path) -> None:
    """A run writing alone pays BEGIN IMMEDIATE, its statements and COMMIT: no PRAGMA
    switching SQLite's busy handler off and on around each BEGIN (issue 35: ~30 us a
    commit), and no ticket."""
    store = open_store(tmp_path / "state.db")
    store.create_run(run_id="alone", pipeline="p", input_text="", workspace="/ws")
    ts = "2026-11-28T08:00:00.000Z"
    store.emit([ev.Warning(message="first", run_id="alone", seq=1, ts=ts)])
    sent: list[str] = []
    store.db.set_trace_callback(sent.append)  # type: ignore[attr-defined]
    for seq in range(2, 5):
        store.emit([ev.Warning(message="again", run_id="alone", seq=seq, ts=ts)])
    store.db.set_trace_callback(None)  # type: ignore[attr-defined]
    store.close()
    assert [s for s in sent if s.upper().startswith("PRAGMA")] == []
    assert sum(s == "BEGIN IMMEDIATE" for s in sent) == 3
    assert (tmp_path / "state.db-writers").read_bytes()[:8] in (b"", bytes(8))  # no ticket
