"""The memory store's tables: a database of dicts mirroring SQLite's, the journal that
undoes a failed call, and the fold that keeps the query tables up to date from events
(the same changes as the SQL backends', `store/projections.py`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, assert_never, cast

from swell.events.folds import UNREAD_BY_TABLES, unread_by_tables
from swell.events.models import (
    ArtifactWritten,
    BaseEvent,
    ContextSet,
    Event,
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
from swell.store.dispatch import Dispatched
from swell.store.output import MemoryOutput
from swell.store.records import PRIMARY_KEYS, Record
from swell.store.rows import Owner
from swell.store.rules import FINISHED_FOR_GOOD

Table = dict[Any, Record]  # one run's rows by primary key (the run id left out)
_MISSING = object()


TABLES = ("events", *PRIMARY_KEYS)


@dataclass
class MemoryDatabase:
    """The shared tables; open handles on it with `MemoryStore(database)`."""

    lock: threading.RLock = field(default_factory=threading.RLock)
    runs: dict[str, Record] = field(default_factory=dict)  # insertion order is SQLite's rowid
    # table name -> run id -> that run's rows by primary key (events: by seq)
    tables: dict[str, dict[str, Table]] = field(
        default_factory=lambda: {name: {} for name in TABLES}
    )
    # run id -> (thread, thread_round) -> round: the unique index of the rounds table
    thread_rounds: dict[str, dict[tuple[str, int], int]] = field(default_factory=dict)
    claims: dict[str, tuple[Owner, int]] = field(default_factory=dict)  # run -> owner, handle
    snapshots: dict[str, tuple[int, str]] = field(default_factory=dict)  # run -> seq, data
    output: MemoryOutput = field(default_factory=MemoryOutput)  # running visits' output
    # (source, item, pipeline) -> the dispatch key's record (store/dispatch.py)
    dispatches: dict[tuple[str, str, str], Dispatched] = field(default_factory=dict)

    def table(self, name: str, run_id: str) -> Table:
        """One run's rows of a table (to write: it is created when missing)."""
        return self.tables[name].setdefault(run_id, {})

    def rows(self, name: str, run_id: str) -> Table:
        """One run's rows of a table (to read)."""
        return self.tables[name].get(run_id, {})


class Journal:
    """The writes of one call, undone in reverse if the call fails."""

    def __init__(self) -> None:
        self._undo: list[tuple[dict[Any, Any], Any, Any]] = []

    def put(self, table: dict[Any, Any], key: Any, value: Any) -> None:
        self._undo.append((table, key, table.get(key, _MISSING)))
        table[key] = value

    def update(self, table: dict[Any, Record], key: Any, **changes: Any) -> None:
        """Like SQL UPDATE: change the row if there is one."""
        if key in table:
            self.put(table, key, {**table[key], **changes})

    def delete(self, table: dict[Any, Any], key: Any) -> None:
        if key in table:
            self._undo.append((table, key, table.pop(key)))

    def rollback(self) -> None:
        for table, key, old in reversed(self._undo):
            if old is _MISSING:
                table.pop(key, None)
            else:
                table[key] = old


# ------------------------------------------------------------------ projections
# The same changes as the SQL backends' (`projections.py`), on the tables above.


def project(db: MemoryDatabase, journal: Journal, event: BaseEvent) -> None:
    """Apply one stored event to the tables (the same changes as `projections.project`)."""
    if type(event) not in UNREAD_BY_TABLES:
        _project(db, journal, cast("Event", event))  # one of the union's (events/models.py)


def _project(db: MemoryDatabase, journal: Journal, e: Event) -> None:
    """`project`'s fold; every kind is named here or in `events/folds.py`. The cases go
    by how often runs emit them: each case is a type check, so the common kinds first."""
    match e:
        case StepStarted():
            _insert(db, journal, "visits", records.visit_row(e))
        case StepFinished():
            _step_finished(db, journal, e)
        case RoundRecorded():
            _round(db, journal, e)
        case ContextSet():
            _insert(db, journal, "context", records.context_row(e))
        case ArtifactWritten():
            _insert(db, journal, "artifacts", records.artifact_row(e))
        case ReviewCompleted():
            _insert(db, journal, "reviews", records.review_row(e))
        case GateWaiting():
            _insert(db, journal, "gates", records.gate_row(e))
        case GateResolved():
            _gate_resolved(db, journal, e)
        case StepInterrupted():
            _step_interrupted(db, journal, e)
        case RunStarted() | RunWaiting():
            _run_status(db, journal, e, "running" if isinstance(e, RunStarted) else "waiting")
        case RunRewound():
            _rewound(db, journal, e)
        case RunResumed():
            journal.update(
                db.runs,
                e.run_id,
                status="running",
                finished_at=None,
                error=None,
                cancel_requested=0,
                updated_at=e.ts,
            )
        case RunFinished():
            _run_finished(db, journal, e)
        case _ if not unread_by_tables(e):  # the others `project` passed over
            assert_never(e)


def _insert(db: MemoryDatabase, journal: Journal, table: str, record: Record) -> None:
    key = tuple(record[column] for column in PRIMARY_KEYS[table])
    journal.put(db.table(table, record["run_id"]), key, record)


def _round(db: MemoryDatabase, journal: Journal, e: RoundRecorded) -> None:
    """A round replaces the one of the same number, and the one of the same thread round."""
    rounds, index = db.table("rounds", e.run_id), db.thread_rounds.setdefault(e.run_id, {})
    old = rounds.get((e.round,))
    if old and old["thread"] is not None and old["thread_round"] is not None:
        journal.delete(index, (old["thread"], old["thread_round"]))
    if e.thread is not None and e.thread_round is not None:
        clash = index.get((e.thread, e.thread_round))
        if clash is not None:
            journal.delete(rounds, (clash,))
        journal.put(index, (e.thread, e.thread_round), e.round)
    _insert(db, journal, "rounds", records.round_row(e))


def _rewound(db: MemoryDatabase, journal: Journal, e: RunRewound) -> None:
    """A rewound run goes on; the rows of the visits it abandoned go (the events stay)."""
    journal.update(
        db.runs,
        e.run_id,
        status="running",
        finished_at=None,
        error=None,
        cancel_requested=0,
        updated_at=e.ts,
    )
    gone = {records.visit_of(v) for v in e.abandoned} - {None}
    for name in ("visits", "artifacts", "rounds", "reviews", "gates"):
        rows = db.table(name, e.run_id)
        for key, row in list(rows.items()):
            if (row["step_id"], row["visit"]) not in gone:
                continue
            journal.delete(rows, key)
            if name == "rounds" and row["thread"] is not None:
                index = db.thread_rounds.setdefault(e.run_id, {})
                journal.delete(index, (row["thread"], row["thread_round"]))
    if e.context is not None:  # the values an abandoned visit set go with it
        rows = db.table("context", e.run_id)
        for key in list(rows):
            journal.delete(rows, key)
        for record in records.rewound_context(e):
            _insert(db, journal, "context", record)


def _coalesce(value: Any, default: Any) -> Any:
    return default if value is None else value


def _run_status(
    db: MemoryDatabase, journal: Journal, e: RunStarted | RunWaiting, status: str
) -> None:
    run = db.runs.get(e.run_id)
    if run:
        started = _coalesce(run["started_at"], e.ts)
        journal.update(db.runs, e.run_id, status=status, started_at=started, updated_at=e.ts)


def _run_finished(db: MemoryDatabase, journal: Journal, e: RunFinished) -> None:
    journal.update(
        db.runs,
        e.run_id,
        status=e.status,
        finished_at=e.ts,
        updated_at=e.ts,
        error=e.error,
        visits=e.visits,
    )
    if e.status in FINISHED_FOR_GOOD:
        journal.delete(db.snapshots, e.run_id)


def _step_finished(db: MemoryDatabase, journal: Journal, e: StepFinished) -> None:
    # an agent visit's adapter and model are known once it ran
    resolved = {k: v for k, v in (("adapter", e.adapter), ("model", e.model)) if v is not None}
    journal.update(
        db.table("visits", e.run_id),
        (e.step_id, e.visit),
        **resolved,
        status="succeeded" if e.outcome == "success" else "failed",
        outcome=e.outcome,
        exit_code=e.exit_code,
        error=e.error,
        error_key=e.error_key,
        output_tail=e.output_tail,
        tokens_in=e.tokens_in,
        tokens_out=e.tokens_out,
        cost_usd=e.cost_usd,
        finished_at=e.ts,
        duration_ms=e.duration_ms,
    )


def _step_interrupted(db: MemoryDatabase, journal: Journal, e: StepInterrupted) -> None:
    key = (e.step_id, e.visit)
    journal.update(
        db.table("visits", e.run_id), key, status="interrupted", finished_at=e.ts, error=e.reason
    )
    gates = db.table("gates", e.run_id)
    if key in gates and gates[key]["status"] == "waiting":
        journal.update(gates, key, status="cancelled")


def _gate_resolved(db: MemoryDatabase, journal: Journal, e: GateResolved) -> None:
    gates, key = db.table("gates", e.run_id), (e.step_id, e.visit)
    if key in gates:
        journal.update(
            gates,
            key,
            status=e.decision,
            decision=e.decision,
            choice=e.choice,
            reason=e.reason,
            decided_by=_coalesce(gates[key]["decided_by"], e.by),
            decided_at=_coalesce(gates[key]["decided_at"], e.ts),
        )
    run = db.runs.get(e.run_id)
    if run and run["status"] == "waiting":
        journal.update(db.runs, e.run_id, status="running")
