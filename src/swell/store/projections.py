"""The SQL backends' query tables, kept up to date from events in the same transaction.

`project(tables, event)` is one fold over every event kind (`match` on the event
classes; a new kind must be decided here): the rows an event adds come from
`records.py`, shared with every backend, and go through `tables.insert` (SQLite's
`INSERT OR REPLACE`, Postgres's upsert: postgres/projections.py); changes to rows
already there are SQL both backends run, given to `tables.update` with `?`
placeholders. Events of other kinds are only stored in `events`.

It imports the event models: a backend imports it in `emit`, so a store that only
reads never loads them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, assert_never, cast

from swell.events.folds import UNREAD_BY_TABLES, unread_by_tables
from swell.events.models import (
    ArtifactWritten,
    BaseEvent,
    ContextSet,
    GateResolved,
    GateWaiting,
    ReviewCompleted,
    RoundRecorded,
    RunFinished,
    RunResumed,
    RunRewound,
    RunStarted,
    RunWaiting,
    StepFinished,
    StepInterrupted,
    StepStarted,
)
from swell.store import records
from swell.store.records import PRIMARY_KEYS, Record
from swell.store.rules import FINISHED_FOR_GOOD

if TYPE_CHECKING:
    from swell.events.models import Event


class Executes(Protocol):
    """What SQLite's projections write through: a connection or cursor in the transaction."""

    def execute(self, sql: str, params: Sequence[Any], /) -> Any: ...


class Statements(list[tuple[str, Sequence[Any]]]):
    """SQLite's projection statements, kept to run later: made before the transaction
    begins, so that the write lock is held only to run them (sqlite/store.py)."""

    def execute(self, sql: str, params: Sequence[Any], /) -> None:
        self.append((sql, params))


class Tables(Protocol):
    """A backend's query tables inside the emitting transaction."""

    def insert(self, table: str, record: Record) -> None:
        """Add the row, replacing any row of the same unique key."""
        ...

    def update(self, sql: str, params: Sequence[Any]) -> None:
        """Run one statement of the shared SQL (`?` placeholders)."""
        ...


class SqliteTables:
    """SQLite's: `INSERT OR REPLACE` (a statement per table, made from its first record:
    a record builder gives its columns in one order)."""

    def __init__(self, db: Executes) -> None:
        self.db = db

    def insert(self, table: str, record: Record) -> None:
        statement = _STATEMENTS.get(table)
        if statement is None:
            statement = _STATEMENTS[table] = _sqlite_insert(table, record)
        self.db.execute(statement, tuple(record.values()))

    def update(self, sql: str, params: Sequence[Any]) -> None:
        self.db.execute(sql, params)


def _sqlite_insert(table: str, record: Record) -> str:
    """`INSERT OR REPLACE`; a visit row as an upsert instead, which SQLite's update
    trigger sees (a REPLACE deletes the old row without firing the delete trigger
    that keeps the run's counters: store/counters.py)."""
    values = f"({', '.join(record)}) VALUES ({', '.join('?' * len(record))})"
    if table != "visits":
        return f"INSERT OR REPLACE INTO {table} {values}"
    keys = ("run_id", *PRIMARY_KEYS[table])
    updates = ", ".join(f"{c} = excluded.{c}" for c in record if c not in keys)
    return f"INSERT INTO visits {values} ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"


_STATEMENTS: dict[str, str] = {}


def project(tables: Tables, event: BaseEvent) -> None:
    """Apply one stored event to the query tables."""
    if type(event) not in UNREAD_BY_TABLES:
        _project(tables, cast("Event", event))  # one of the union's (events/models.py)


def _project(tables: Tables, e: Event) -> None:
    """`project`'s fold; every kind is named here or in `events/folds.py`. The cases go
    by how often runs emit them: each case is a type check, so the common kinds first."""
    match e:
        case StepStarted():
            tables.insert("visits", records.visit_row(e))
        case StepFinished():
            _step_finished(tables, e)
        case RoundRecorded():
            tables.insert("rounds", records.round_row(e))
        case ContextSet():
            tables.insert("context", records.context_row(e))
        case ArtifactWritten():
            tables.insert("artifacts", records.artifact_row(e))
        case ReviewCompleted():
            tables.insert("reviews", records.review_row(e))
        case GateWaiting():
            tables.insert("gates", records.gate_row(e))
        case GateResolved():
            _gate_resolved(tables, e)
        case StepInterrupted():
            tables.update(
                "UPDATE visits SET status = 'interrupted', finished_at = ?, error = ? "
                "WHERE run_id = ? AND step_id = ? AND visit = ?",
                (e.ts, e.reason, e.run_id, e.step_id, e.visit),
            )
            tables.update(
                "UPDATE gates SET status = 'cancelled' WHERE run_id = ? AND step_id = ? "
                "AND visit = ? AND status = 'waiting'",
                (e.run_id, e.step_id, e.visit),
            )
        case RunStarted() | RunWaiting():
            tables.update(
                "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), "
                "updated_at = ? WHERE id = ?",
                ("running" if isinstance(e, RunStarted) else "waiting", e.ts, e.ts, e.run_id),
            )
        case RunRewound():
            _rewound(tables, e)
        case RunResumed():
            tables.update(
                "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, "
                "cancel_requested = ?, updated_at = ? WHERE id = ?",
                (False, e.ts, e.run_id),
            )
        case RunFinished():
            _run_finished(tables, e)
        case _ if not unread_by_tables(e):  # the others `project` passed over
            assert_never(e)


DERIVED = ("visits", "artifacts", "rounds", "reviews", "gates")  # rows of one visit each


def _rewound(tables: Tables, e: RunRewound) -> None:
    """A rewound run goes on; the rows of the visits it abandoned go (the events stay)."""
    tables.update(
        "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, "
        "cancel_requested = ?, updated_at = ? WHERE id = ?",
        (False, e.ts, e.run_id),
    )
    for at in e.abandoned:
        found = records.visit_of(at)
        if found is None:
            continue
        for table in DERIVED:
            tables.update(
                f"DELETE FROM {table} WHERE run_id = ? AND step_id = ? AND visit = ?",
                (e.run_id, *found),
            )
    if e.context is not None:  # the values an abandoned visit set go with it
        tables.update("DELETE FROM context WHERE run_id = ?", (e.run_id,))
        for record in records.rewound_context(e):
            tables.insert("context", record)


def _run_finished(tables: Tables, e: RunFinished) -> None:
    tables.update(
        "UPDATE runs SET status = ?, finished_at = ?, updated_at = ?, error = ?, visits = ? "
        "WHERE id = ?",
        (e.status, e.ts, e.ts, e.error, e.visits, e.run_id),
    )
    if e.status in FINISHED_FOR_GOOD:
        tables.update("DELETE FROM snapshots WHERE run_id = ?", (e.run_id,))


def _step_finished(tables: Tables, e: StepFinished) -> None:
    tables.update(
        "UPDATE visits SET status = ?, outcome = ?, exit_code = ?, error = ?, error_key = ?, "
        "output_tail = ?, tokens_in = ?, tokens_out = ?, cost_usd = ?, finished_at = ?, "
        "duration_ms = ?, adapter = COALESCE(?, adapter), model = COALESCE(?, model) "
        "WHERE run_id = ? AND step_id = ? AND visit = ?",
        (
            "succeeded" if e.outcome == "success" else "failed",
            e.outcome,
            e.exit_code,
            e.error,
            e.error_key,
            e.output_tail,
            e.tokens_in,
            e.tokens_out,
            e.cost_usd,
            e.ts,
            e.duration_ms,
            e.adapter,  # an agent visit's, known once it ran
            e.model,
            e.run_id,
            e.step_id,
            e.visit,
        ),
    )


def _gate_resolved(tables: Tables, e: GateResolved) -> None:
    tables.update(
        "UPDATE gates SET status = ?, decision = ?, choice = ?, reason = ?, "
        "decided_by = COALESCE(decided_by, ?), decided_at = COALESCE(decided_at, ?) "
        "WHERE run_id = ? AND step_id = ? AND visit = ?",
        (e.decision, e.decision, e.choice, e.reason, e.by, e.ts, e.run_id, e.step_id, e.visit),
    )
    tables.update(
        "UPDATE runs SET status = 'running' WHERE id = ? AND status = 'waiting'", (e.run_id,)
    )
