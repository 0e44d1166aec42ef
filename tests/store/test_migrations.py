"""SQLite schema migrations on stores written by earlier versions: a store made with the
schema and event format of version 4 (every event stored whole) opens with this code,
is migrated, and reads back every event the same, now stored without its envelope and
defaults."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from event_samples import samples
from swell.events import models as ev
from swell.store.location import open_store
from swell.store.projections import SqliteTables, project
from swell.store.sqlite import migrations
from swell.store.sqlite.compact import pack_ts
from swell.store.sqlite.migrations import MIGRATIONS

from .conftest import Writer

V4 = 4  # the schema before snapshots and compact events


def _version_4_store(path: Path, runs: dict[str, list[ev.BaseEvent]]) -> None:
    """A state database as version 4 wrote it: its schema, events stored whole."""
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    db.execute("BEGIN")
    for version, step in enumerate(MIGRATIONS[:V4], start=1):
        step(db)
        db.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (version,))
    for run_id, events in runs.items():
        db.execute(
            "INSERT INTO runs (id, pipeline, status, input, created_at) "
            "VALUES (?, 'build', 'pending', '', '2026-11-24T10:00:00.000Z')",
            (run_id,),
        )
        for event in events:  # as version 4's emit did, one row at a time
            kind = getattr(event, "type", "")
            db.execute(
                "INSERT INTO events (run_id, seq, ts, type, step_id, visit, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    event.seq,
                    event.ts,
                    kind,
                    event.step_id,
                    event.visit,
                    event.model_dump_json(),
                ),
            )
            if kind != "run.finished":
                project(SqliteTables(db), event)
    db.execute("COMMIT")
    db.close()


def _runs() -> dict[str, list[ev.BaseEvent]]:
    runs: dict[str, list[ev.BaseEvent]] = {}
    for run_id in ("alpha", "beta", "gamma"):
        events = list(samples())
        for event in events:
            event.run_id = run_id
        runs[run_id] = events
    return runs


def _rows(path: Path) -> list[tuple[str, int, object, str]]:
    """(run_id, seq, stored ts, data) of every event row, by run id and seq."""
    db = sqlite3.connect(path)
    try:
        columns = {name for (_, name, *_) in db.execute("PRAGMA table_info(events)")}
        sql = (
            "SELECT run_id, seq, ts, data FROM events ORDER BY run_id, seq"
            if "run_id" in columns
            else "SELECT r.run_id, e.id & 4294967295, e.ts, e.data FROM events e "
            "JOIN event_runs r ON r.num = e.id >> 32 ORDER BY r.run_id, e.id"
        )
        return list(db.execute(sql))
    finally:
        db.close()


@pytest.mark.parametrize("batch", [migrations.COMPACT_BATCH, 7])
def test_a_version_4_store_is_migrated_and_reads_back_every_event_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch: int
) -> None:
    monkeypatch.setattr(migrations, "COMPACT_BATCH", batch)  # 7: many batches, runs split
    path = tmp_path / "state.db"
    runs = _runs()
    runs["delta"] = [e for e in runs.pop("gamma")[:3]]
    for n, event in enumerate(runs["delta"]):
        event.run_id, event.ts = "delta", ("t", "", "2026-11-24T10:00:00Z")[n]  # not packed
    _version_4_store(path, runs)
    before = _rows(path)
    assert all(data.startswith('{"run_id":') for *_, data in before)

    store = open_store(path)
    try:
        for run_id, events in runs.items():
            assert store.events(run_id) == events
            assert store.raw_events(run_id) == [ev.event_json(e) for e in events]
            assert store.get_run(run_id).last_seq == len(events)
            assert store.load_snapshot(run_id) is None  # the new table is there
        w = Writer(store, "alpha", seq=len(runs["alpha"]))  # and the run goes on
        (more,) = w.emit(ev.Warning(message="after the migration"))
        assert store.events("alpha", after_seq=more.seq - 1) == [more]
    finally:
        store.close()
    after = [row for row in _rows(path) if row[:2] != ("alpha", more.seq)]
    expected = [
        (run_id, e.seq, pack_ts(e.ts), ev.event_data(e))
        for run_id in sorted(runs)
        for e in runs[run_id]
    ]
    assert after == expected
    assert [ts for run_id, _, ts, _ in after if run_id == "delta"] == [
        "t",
        "",
        "2026-11-24T10:00:00Z",
    ]
    assert {type(ts) for run_id, _, ts, _ in after if run_id != "delta"} == {int}
    assert sum(len(d) for *_, d in after) * 2 < sum(len(d) for *_, d in before)
    db = sqlite3.connect(path)
    versions = [v for (v,) in db.execute("SELECT version FROM schema_migrations ORDER BY version")]
    db.close()
    assert versions == list(range(1, len(MIGRATIONS) + 1))


def test_a_row_that_does_not_parse_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    runs = {"alpha": [e for e in samples() if e.seq <= 4]}
    _version_4_store(path, runs)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute('UPDATE events SET data = \'{"run_id": "alpha", "bogus": 1}\' WHERE seq = 2')
    db.close()
    open_store(path).close()
    data = [d for *_, d in _rows(path)]
    assert data[1] == '{"run_id": "alpha", "bogus": 1}'
    assert data[0] == ev.event_data(runs["alpha"][0]) and data[2] == ev.event_data(runs["alpha"][2])


def test_a_migrated_store_is_not_migrated_again(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _version_4_store(path, _runs())
    open_store(path).close()
    once = _rows(path)
    open_store(path).close()
    assert _rows(path) == once


def test_a_store_from_before_the_counters_counts_the_visits_it_had(tmp_path: Path) -> None:
    """The migration that keeps a run's visit counts in its row (store/counters.py)
    counts the visits stored before it once; the run reads the same after."""
    from swell.store.capabilities import page_reader

    path = tmp_path / "state.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(
        "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    db.execute("BEGIN")
    for version, step in enumerate(MIGRATIONS[: MIGRATIONS.index(migrations._m13_run_counts)], 1):
        step(db)
        db.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'))", (version,))
    db.execute(
        "INSERT INTO runs (id, pipeline, status, input, created_at) "
        "VALUES ('r1', 'build', 'running', '', '2026-11-24T10:00:00.000Z')"
    )
    ts = "2026-11-24T10:00:01.000Z"
    for n, outcome in ((1, "failure"), (2, "success")):
        for event in (
            ev.StepStarted(step_id="implement", visit=n, kind="prompt"),
            ev.StepFinished(step_id="implement", visit=n, outcome=outcome, tokens_in=5),  # type: ignore[arg-type]
        ):
            event.run_id, event.seq, event.ts = "r1", 2 * n, ts
            project(SqliteTables(db), event)
    started = ev.StepStarted(step_id="test", visit=1, kind="command")
    started.run_id, started.seq, started.ts = "r1", 9, ts
    project(SqliteTables(db), started)
    db.execute("COMMIT")
    db.close()
    store = open_store(path)
    assert store.get_run("r1").visits == 3
    pages = page_reader(store)
    assert pages.visits_page("r1", 0, 1).total == 3
    assert pages.totals(["r1"])["r1"].tokens_in == 10
    assert pages.visits_total() == 2
    store.close()
