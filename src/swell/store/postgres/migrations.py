"""Postgres's numbered schema migrations, applied in order and recorded in `schema_migrations`.

The tables are SQLite's (`sqlite/migrations.py`) as they are after its last migration, with
Postgres types; events stay keyed by (run_id, seq) (SQLite's compact keys are a
SQLite layout matter, `sqlite/compact.py`). Text columns compare and sort bytewise (`COLLATE
"C"`), as SQLite's do, whatever the database's locale: run ids, step ids and
timestamps order the same on every backend. A new schema change is a function
appended to MIGRATIONS, as for SQLite.

Migrations run in one transaction holding a transaction-level advisory lock, so
processes that open the store at the same time apply each migration once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psycopg

_M1_INITIAL = """
CREATE TABLE runs (
    num BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
    id TEXT COLLATE "C" PRIMARY KEY,
    pipeline TEXT NOT NULL,
    pipeline_path TEXT,
    project_root TEXT,
    status TEXT NOT NULL,
    input TEXT,
    parent_run_id TEXT COLLATE "C",
    parent_step_id TEXT,
    workspace TEXT,
    options TEXT,
    created_at TEXT COLLATE "C" NOT NULL,
    started_at TEXT,
    finished_at TEXT,
    updated_at TEXT,
    error TEXT,
    visits INTEGER NOT NULL DEFAULT 0,
    owner_pid INTEGER,
    owner_host TEXT,
    owner_backend INTEGER,
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    pipeline_text TEXT
);
CREATE INDEX runs_created ON runs (created_at DESC, num DESC);
CREATE INDEX runs_parent ON runs (parent_run_id);

CREATE TABLE events (
    run_id TEXT COLLATE "C" NOT NULL,
    seq BIGINT NOT NULL,
    ts TEXT NOT NULL,
    type TEXT NOT NULL,
    step_id TEXT,
    visit INTEGER,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE visits (
    run_id TEXT COLLATE "C" NOT NULL,
    step_id TEXT COLLATE "C" NOT NULL,
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
    tokens_in BIGINT NOT NULL DEFAULT 0,
    tokens_out BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    started_at TEXT COLLATE "C",
    finished_at TEXT,
    duration_ms BIGINT,
    PRIMARY KEY (run_id, step_id, visit)
);

CREATE TABLE context (
    run_id TEXT COLLATE "C" NOT NULL,
    key TEXT COLLATE "C" NOT NULL,
    value TEXT NOT NULL,
    step_id TEXT,
    visit INTEGER,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);

CREATE TABLE artifacts (
    run_id TEXT COLLATE "C" NOT NULL,
    step_id TEXT COLLATE "C" NOT NULL,
    visit INTEGER NOT NULL,
    name TEXT COLLATE "C" NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size BIGINT NOT NULL,
    type TEXT,
    created_at TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, step_id, visit, name)
);

CREATE TABLE gates (
    run_id TEXT COLLATE "C" NOT NULL,
    step_id TEXT COLLATE "C" NOT NULL,
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
    created_at TEXT COLLATE "C" NOT NULL,
    decided_at TEXT,
    PRIMARY KEY (run_id, step_id, visit)
);
CREATE INDEX gates_waiting ON gates (status);

CREATE TABLE rounds (
    run_id TEXT COLLATE "C" NOT NULL,
    round INTEGER NOT NULL,
    thread TEXT COLLATE "C",
    thread_round INTEGER,
    step_id TEXT,
    visit INTEGER,
    role TEXT,
    persona TEXT,
    ts TEXT NOT NULL,
    metadata TEXT NOT NULL,
    content TEXT NOT NULL,
    PRIMARY KEY (run_id, round)
);
CREATE UNIQUE INDEX rounds_thread ON rounds (run_id, thread, thread_round)
    WHERE thread IS NOT NULL;

CREATE TABLE reviews (
    run_id TEXT COLLATE "C" NOT NULL,
    step_id TEXT COLLATE "C" NOT NULL,
    visit INTEGER NOT NULL,
    contract INTEGER NOT NULL,
    for_step TEXT,
    reviewer TEXT NOT NULL,
    adapter TEXT,
    model TEXT,
    verdict TEXT,
    issues TEXT NOT NULL,
    suggestions TEXT NOT NULL,
    confidence DOUBLE PRECISION,
    summary TEXT,
    error TEXT,
    tokens_in BIGINT NOT NULL DEFAULT 0,
    tokens_out BIGINT NOT NULL DEFAULT 0,
    cost_usd DOUBLE PRECISION NOT NULL DEFAULT 0,
    duration_ms BIGINT NOT NULL DEFAULT 0,
    ts TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (run_id, step_id, visit, contract)
);
CREATE INDEX reviews_verdict ON reviews (verdict);

CREATE TABLE snapshots (
    run_id TEXT COLLATE "C" PRIMARY KEY,
    seq BIGINT NOT NULL,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL
);

CREATE TABLE output (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id TEXT COLLATE "C" NOT NULL,
    step_id TEXT COLLATE "C" NOT NULL,
    visit INTEGER NOT NULL,
    stream TEXT NOT NULL,
    seq BIGINT NOT NULL,
    ts TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX output_run ON output (run_id, id);
CREATE UNIQUE INDEX output_visit ON output (run_id, step_id, visit, seq)
"""


def _run_script(db: psycopg.Connection[tuple[object, ...]], script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement.encode())


def _m1_initial(db: psycopg.Connection[tuple[object, ...]]) -> None:
    _run_script(db, _M1_INITIAL)


def _m2_dispatches(db: psycopg.Connection[tuple[object, ...]]) -> None:
    # exactly-once dispatch: a work item's key, written with its run (store/dispatch.py)
    from swell.store.dispatch import CREATE

    _run_script(db, CREATE)


def _m3_event_marks(db: psycopg.Connection[tuple[object, ...]]) -> None:
    # the few events read by kind, indexed alone (store/marks.py), as over SQLite
    from swell.store.marks import MARKS

    db.execute(
        f"CREATE INDEX IF NOT EXISTS events_marks ON events (run_id, seq) WHERE {MARKS}".encode()
    )


def _m4_run_counts(db: psycopg.Connection[tuple[object, ...]]) -> None:
    # a run's visit counts and spend kept in run_counts by triggers (store/counters.py),
    # and the connections that LISTEN, so that a commit notifies only when one does
    # (postgres/listen.py)
    from swell.store.counters import postgres_script

    for statement in postgres_script():
        db.execute(statement.encode())
    db.execute(b"CREATE TABLE IF NOT EXISTS listeners (pid INTEGER PRIMARY KEY)")


MIGRATIONS: list[Callable[[psycopg.Connection[tuple[object, ...]]], None]] = [
    _m1_initial,
    _m2_dispatches,
    _m3_event_marks,
    _m4_run_counts,
]
# the tables swell writes (`swell doctor` checks it may): the migrations' and their record
TABLES = (
    "schema_migrations",
    *re.findall(r"CREATE TABLE (\w+)", _M1_INITIAL),
    "dispatches",
    "listeners",
    "run_counts",
)

# the transaction-level advisory lock migrations hold (pg_advisory_xact_lock), one per schema
_LOCK = "SELECT pg_advisory_xact_lock(hashtextextended('swell.migrate.' || current_schema(), 0))"


def migrate(db: psycopg.Connection[tuple[object, ...]]) -> None:
    """Apply every migration not yet recorded (`db` is in autocommit mode)."""
    with db.transaction():
        db.execute(_LOCK)
        db.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        row = db.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
        current = int(row[0]) if row else 0  # type: ignore[call-overload]
        for version, step in enumerate(MIGRATIONS, start=1):
            if version > current:
                step(db)
                db.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (version,))
