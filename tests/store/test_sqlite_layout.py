"""How the SQLite store keeps events (store/sqlite/compact.py) and checkpoints its WAL
(store/sqlite/checkpoints.py): details of one backend, below what the conformance suite sees."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from swell.errors import StoreError
from swell.events import models as ev
from swell.store.location import open_store
from swell.store.sqlite import checkpoints
from swell.store.sqlite.compact import SEQS, event_id, pack_ts, seq_of, unpack_ts
from swell.store.sqlite.store import SqliteStore

from .conftest import Writer


def test_event_times_are_kept_as_milliseconds_when_nothing_is_lost() -> None:
    start = datetime(1969, 12, 31, 23, 59, tzinfo=UTC)
    for n in range(0, 400_000_000_000, 7_919_333_777):  # 1969 to 1982, every ~92 days
        when = start + timedelta(milliseconds=n)
        ts = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert isinstance(pack_ts(ts), int) and unpack_ts(pack_ts(ts)) == ts
    assert pack_ts(ev.now_iso()) == pytest.approx(
        (datetime.now(UTC) - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds() * 1000, abs=5000
    )
    for odd in ("", "t", "2026-11-24T10:00:00Z", "2026-02-30T10:00:00.000Z", "2026-11-24T24:00:00.000Z",
                "2026-11-24T1\uff10:00:00.000Z", "0000-01-01T00:00:00.000Z", " 2026-11-24T10:00:00.000Z"):  # fmt: skip
        assert pack_ts(odd) == odd and unpack_ts(odd) == odd


def test_an_event_key_holds_the_run_number_and_the_seq() -> None:
    assert event_id(3, 0) == 3 * SEQS and seq_of(event_id(3, 0)) == 0
    assert seq_of(event_id(7, SEQS - 1)) == SEQS - 1 and event_id(7, SEQS - 1) < event_id(8, 0)


def test_a_seq_the_key_cannot_hold_is_refused(tmp_path: Path) -> None:
    store = open_store(tmp_path / "state.db")
    store.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    for seq in (-1, SEQS):
        event = ev.Warning(message="x", run_id="r1", seq=seq, ts="t")
        with pytest.raises(StoreError, match=r"has a seq out of range"):
            store.emit([event])
    store.close()


def test_rows_are_compact_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = open_store(path)
    store.create_run(
        run_id="run-with-a-long-id-20261124", pipeline="p", input_text="", workspace="/ws"
    )
    w = Writer(store, "run-with-a-long-id-20261124")
    w.emit(ev.StepQueued(step_id="build", reason="entry"), ts="2026-11-24T10:00:00.000Z")
    w.emit(ev.Warning(message="odd time"), ts="yesterday")
    store.close()
    db = sqlite3.connect(path)
    rows = db.execute(
        "SELECT id, ts, type, step_id, visit, data FROM events ORDER BY id"
    ).fetchall()
    (num,) = db.execute("SELECT num FROM event_runs").fetchone()
    db.close()
    assert rows == [
        (event_id(num, 1), 1795514400000, "step.queued", "build", None, '{"reason":"entry"}'),
        (event_id(num, 2), "yesterday", "warning", None, None, '{"message":"odd time"}'),
    ]


def _checkpointers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "swell-checkpoints"]


def test_a_writer_checkpoints_from_a_thread_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoints, "EVERY", 5)
    path = tmp_path / "state.db"
    reader = open_store(path)
    assert isinstance(reader, SqliteStore) and reader._checkpoints is None
    assert reader.db.execute("PRAGMA wal_autocheckpoint").fetchone() == (1000,)
    writer = open_store(path)
    assert isinstance(writer, SqliteStore)
    writer.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    w = Writer(writer, "r1")
    before = len(_checkpointers())
    w.emit(ev.Warning(message="first"))
    # the commit path no longer checkpoints: the thread does, every EVERY commits
    assert writer.db.execute("PRAGMA wal_autocheckpoint").fetchone() == (0,)
    assert len(_checkpointers()) == before + 1
    pages = path.stat().st_size
    for n in range(40):
        w.emit(ev.Warning(message="x" * 3000 + str(n)))
    deadline = datetime.now() + timedelta(seconds=10)
    while path.stat().st_size == pages and datetime.now() < deadline:
        w.emit(ev.Warning(message="more"))
    assert path.stat().st_size > pages  # pages were copied into the database file
    writer.close()
    assert len(_checkpointers()) == before
    assert len(reader.events("r1")) == w.seq
    reader.close()


def test_the_wal_of_a_long_run_is_written_again_from_its_start(tmp_path: Path) -> None:
    """A writer that never pauses (as fast as Python commits) still lets the WAL restart:
    it stays a small multiple of what a round of checkpointing leaves, instead of
    growing by every page the run ever committed."""
    path = tmp_path / "state.db"
    writer = open_store(path)
    writer.create_run(run_id="r1", pipeline="p", input_text="", workspace="/ws")
    w = Writer(writer, "r1")
    batches = 20 * checkpoints.EVERY
    for n in range(batches):
        w.emit(ev.Warning(message="x" * 2000 + str(n)), ev.Warning(message="y" * 2000))
    wal = path.with_name("state.db-wal").stat().st_size
    writer.close()
    # two events of 2 kB a batch: appended without a restart, the WAL holds about four
    # 4 kB pages a batch (17 kB); written again from its start, less than one
    assert wal < batches * 4096, f"the WAL grew to {wal} bytes"
