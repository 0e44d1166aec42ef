"""Numbered schema migrations, applied in order and recorded in `schema_migrations`."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _run_script(db: sqlite3.Connection, script: str) -> None:
    # executescript() would commit the surrounding transaction, so run statements one by one
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)


def _m1_initial(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE runs (
            id TEXT PRIMARY KEY,
            pipeline TEXT NOT NULL,
            pipeline_path TEXT,
            project_root TEXT,
            status TEXT NOT NULL,
            input TEXT,
            parent_run_id TEXT,
            parent_step_id TEXT,
            workspace TEXT,
            options TEXT,
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT,
            updated_at TEXT,
            error TEXT,
            visits INTEGER NOT NULL DEFAULT 0,
            last_seq INTEGER NOT NULL DEFAULT 0,
            owner_pid INTEGER,
            cancel_requested INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX runs_created ON runs (created_at DESC);
        CREATE INDEX runs_parent ON runs (parent_run_id);

        CREATE TABLE events (
            run_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            ts TEXT NOT NULL,
            type TEXT NOT NULL,
            step_id TEXT,
            visit INTEGER,
            data TEXT NOT NULL,
            PRIMARY KEY (run_id, seq)
        ) WITHOUT ROWID;

        CREATE TABLE visits (
            run_id TEXT NOT NULL,
            step_id TEXT NOT NULL,
            visit INTEGER NOT NULL,
            kind TEXT,
            status TEXT NOT NULL,
            outcome TEXT,
            exit_code INTEGER,
            error TEXT,
            error_key TEXT,
            output_tail TEXT,
            persona TEXT,
            adapter TEXT,
            model TEXT,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            started_at TEXT,
            finished_at TEXT,
            duration_ms INTEGER,
            PRIMARY KEY (run_id, step_id, visit)
        ) WITHOUT ROWID;

        CREATE TABLE context (
            run_id TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT NOT NULL,
            step_id TEXT,
            visit INTEGER,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (run_id, key)
        ) WITHOUT ROWID;

        CREATE TABLE artifacts (
            run_id TEXT NOT NULL,
            step_id TEXT NOT NULL,
            visit INTEGER NOT NULL,
            name TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            type TEXT,
            created_at TEXT NOT NULL,
            PRIMARY KEY (run_id, step_id, visit, name)
        ) WITHOUT ROWID;

        CREATE TABLE gates (
            run_id TEXT NOT NULL,
            step_id TEXT NOT NULL,
            visit INTEGER NOT NULL,
            gate_type TEXT NOT NULL,
            status TEXT NOT NULL,
            message TEXT,
            choices TEXT,
            deadline TEXT,
            decision TEXT,
            choice TEXT,
            reason TEXT,
            decided_by TEXT,
            created_at TEXT NOT NULL,
            decided_at TEXT,
            PRIMARY KEY (run_id, step_id, visit)
        ) WITHOUT ROWID;
        CREATE INDEX gates_waiting ON gates (status);
        """,
    )


def _m2_rounds(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE rounds (
            run_id TEXT NOT NULL,
            round INTEGER NOT NULL,
            thread TEXT,
            thread_round INTEGER,
            step_id TEXT,
            visit INTEGER,
            role TEXT,
            persona TEXT,
            ts TEXT NOT NULL,
            metadata TEXT NOT NULL,
            content TEXT NOT NULL,
            PRIMARY KEY (run_id, round)
        ) WITHOUT ROWID;
        CREATE UNIQUE INDEX rounds_thread ON rounds (run_id, thread, thread_round)
        """,
    )


def _m3_reviews(db: sqlite3.Connection) -> None:
    _run_script(
        db,
        """
        CREATE TABLE reviews (
            run_id TEXT NOT NULL,
            step_id TEXT NOT NULL,
            visit INTEGER NOT NULL,
            contract INTEGER NOT NULL,
            for_step TEXT,
            reviewer TEXT NOT NULL,
            adapter TEXT,
            model TEXT,
            verdict TEXT,
            issues TEXT NOT NULL,
            suggestions TEXT NOT NULL,
            confidence REAL,
            summary TEXT,
            error TEXT,
            tokens_in INTEGER NOT NULL DEFAULT 0,
            tokens_out INTEGER NOT NULL DEFAULT 0,
            cost_usd REAL NOT NULL DEFAULT 0,
            duration_ms INTEGER NOT NULL DEFAULT 0,
            ts TEXT NOT NULL,
            PRIMARY KEY (run_id, step_id, visit, contract)
        ) WITHOUT ROWID;
        CREATE INDEX reviews_verdict ON reviews (verdict)
        """,
    )


def _m4_run_owner_host_and_pipeline_text(db: sqlite3.Connection) -> None:
    # the host of the process executing a run (its pid was there already), and the
    # pipeline file as it was when the run started, which `swell resume` runs
    _run_script(
        db,
        """
        ALTER TABLE runs ADD COLUMN owner_host TEXT;
        ALTER TABLE runs ADD COLUMN pipeline_text TEXT
        """,
    )


def _m5_snapshots(db: sqlite3.Connection) -> None:
    # a run's state after event `seq`, so a resume replays only the events after it
    _run_script(
        db,
        """
        CREATE TABLE snapshots (
            run_id TEXT PRIMARY KEY,
            seq INTEGER NOT NULL,
            data TEXT NOT NULL,
            created_at TEXT NOT NULL
        )
        """,
    )


COMPACT_BATCH = 2000  # event rows moved per statement by _m6


def _m6_compact_events(db: sqlite3.Connection) -> None:
    """Events keep what their columns do not (`events.models.event_data`), keyed by
    `compact.event_id` (a small run number from `event_runs` and the seq) instead of
    the run id and seq, their time as integer milliseconds (`compact.pack_ts`): the
    table is rebuilt that way, a batch of rows at a time, in the migration's
    transaction. A row that does not parse keeps its data (it reads as before)."""
    from pydantic import ValidationError  # loaded only to migrate: readers stay quick

    from swell.events.models import event_data, stored_event
    from swell.store.sqlite.compact import event_id, pack_ts

    _run_script(
        db,
        """
        CREATE TABLE event_runs (
            num INTEGER PRIMARY KEY,
            run_id TEXT NOT NULL UNIQUE
        );
        CREATE TABLE compact_events (
            id INTEGER PRIMARY KEY,
            ts NOT NULL,
            type TEXT NOT NULL,
            step_id TEXT,
            visit INTEGER,
            data TEXT NOT NULL
        )
        """,
    )
    nums: dict[str, int] = {}
    after: tuple[str, int] = ("", 0)
    while True:
        rows = db.execute(
            "SELECT run_id, seq, ts, type, step_id, visit, data FROM events "
            "WHERE (run_id, seq) > (?, ?) ORDER BY run_id, seq LIMIT ?",
            (*after, COMPACT_BATCH),
        ).fetchall()
        if not rows:
            break
        moved = []
        for run_id, seq, ts, kind, step_id, visit, data in rows:
            if run_id not in nums:
                cursor = db.execute("INSERT INTO event_runs (run_id) VALUES (?)", (run_id,))
                nums[run_id] = int(cursor.lastrowid or 0)
            try:
                event = stored_event(
                    kind, data, run_id=run_id, seq=seq, ts=ts, step_id=step_id, visit=visit
                )
                data = event_data(event)
            except (ValidationError, ValueError):
                pass
            moved.append((event_id(nums[run_id], seq), pack_ts(ts), kind, step_id, visit, data))
        db.executemany("INSERT INTO compact_events VALUES (?, ?, ?, ?, ?, ?)", moved)
        after = (rows[-1][0], rows[-1][1])
    _run_script(db, "DROP TABLE events; ALTER TABLE compact_events RENAME TO events")


def _m7_thread_index_for_threads_only(db: sqlite3.Connection) -> None:
    # rounds outside any thread are most rounds: they need no entry in the thread index
    # (which every commit of a visit would otherwise write a page of)
    _run_script(
        db,
        """
        DROP INDEX rounds_thread;
        CREATE UNIQUE INDEX rounds_thread ON rounds (run_id, thread, thread_round)
            WHERE thread IS NOT NULL
        """,
    )


def _m8_output(db: sqlite3.Connection) -> None:
    # running visits' output, stored as it arrives (store/output.py)
    from swell.store.output import CREATE

    _run_script(db, CREATE)


def _m9_dispatches(db: sqlite3.Connection) -> None:
    # exactly-once dispatch: a work item's key, written with its run (store/dispatch.py)
    from swell.store.dispatch import CREATE

    _run_script(db, CREATE)


def _m10_bench(db: sqlite3.Connection) -> None:
    # `swell bench`'s records (store/sqlite/bench.py)
    from swell.store.sqlite.bench import CREATE

    _run_script(db, CREATE)


def _m11_event_marks(db: sqlite3.Connection) -> None:
    # the few events read by kind, indexed alone (store/marks.py): `swell status` of a
    # long run finds its forks and rewinds without reading all its events
    from swell.store.marks import MARKS

    db.execute(f"CREATE INDEX IF NOT EXISTS events_marks ON events (id) WHERE {MARKS}")


def _m12_visits_by_start(db: sqlite3.Connection) -> None:
    # a run's visits newest first (the run page's visit table and timeline) read from an
    # index: sorting a 10,000-visit run's rows took 20 ms of the page's 100
    db.execute(
        "CREATE INDEX IF NOT EXISTS visits_by_start "
        "ON visits (run_id, started_at DESC, step_id DESC, visit DESC)"
    )


def _m13_run_counts(db: sqlite3.Connection) -> None:
    # a run's visit counts and spend kept in run_counts by triggers (store/counters.py):
    # reading a running run no longer counts its visits
    from swell.store.counters import sqlite_script

    for statement in sqlite_script():
        db.execute(statement)


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _m1_initial,
    _m2_rounds,
    _m3_reviews,
    _m4_run_owner_host_and_pipeline_text,
    _m5_snapshots,
    _m6_compact_events,
    _m7_thread_index_for_threads_only,
    _m8_output,
    _m9_dispatches,
    _m10_bench,
    _m11_event_marks,
    _m12_visits_by_start,
    _m13_run_counts,
]


def migrate(db: sqlite3.Connection) -> None:
    """Apply every migration not yet recorded; safe when processes race to do it."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    (current,) = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    if current >= len(MIGRATIONS):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        (current,) = db.execute(
            "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
        ).fetchone()
        for version, step in enumerate(MIGRATIONS, start=1):
            if version > current:
                step(db)
                db.execute(
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, datetime('now'))",
                    (version,),
                )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
