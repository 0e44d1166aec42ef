"""SQLite's query tables, kept up to date from events in the same transaction.

Rows an event adds come from `records.INSERTS`, shared with every backend; the
functions in `UPDATES` change rows already there, in SQL both SQL backends run
(`?` placeholders; Postgres's store translates them, postgres/projections.py).
Events of other kinds are only stored in `events`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from swell.store.records import INSERTS, Record
from swell.store.rules import FINISHED_FOR_GOOD


class Executes(Protocol):
    """What a projection writes through: a connection or cursor in the transaction."""

    def execute(self, sql: str, params: Sequence[Any], /) -> Any: ...


Projection = Callable[[Executes, Any], None]


def _insert(table: str, build: Callable[[Any], Record]) -> Projection:
    statement = ""  # made from the first record: a build gives its columns in one order

    def project(db: Executes, e: Any) -> None:
        nonlocal statement
        record = build(e)
        if not statement:
            statement = (
                f"INSERT OR REPLACE INTO {table} ({', '.join(record)}) "
                f"VALUES ({', '.join('?' * len(record))})"
            )
        db.execute(statement, tuple(record.values()))

    return project


def _p_run_status(status: str) -> Projection:
    def project(db: Executes, e: Any) -> None:
        db.execute(
            "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), updated_at = ? WHERE id = ?",
            (status, e.ts, e.ts, e.run_id),
        )

    return project


def _p_run_resumed(db: Executes, e: Any) -> None:
    db.execute(
        "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, cancel_requested = ?, "
        "updated_at = ? WHERE id = ?",
        (False, e.ts, e.run_id),
    )


def _p_run_finished(db: Executes, e: Any) -> None:
    db.execute(
        "UPDATE runs SET status = ?, finished_at = ?, updated_at = ?, error = ?, visits = ? WHERE id = ?",
        (e.status, e.ts, e.ts, e.error, e.visits, e.run_id),
    )
    if e.status in FINISHED_FOR_GOOD:
        db.execute("DELETE FROM snapshots WHERE run_id = ?", (e.run_id,))


def _p_step_finished(db: Executes, e: Any) -> None:
    db.execute(
        "UPDATE visits SET status = ?, outcome = ?, exit_code = ?, error = ?, error_key = ?, output_tail = ?, "
        "tokens_in = ?, tokens_out = ?, cost_usd = ?, finished_at = ?, duration_ms = ?, "
        "adapter = COALESCE(?, adapter), model = COALESCE(?, model) "
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


def _p_step_interrupted(db: Executes, e: Any) -> None:
    db.execute(
        "UPDATE visits SET status = 'interrupted', finished_at = ?, error = ? "
        "WHERE run_id = ? AND step_id = ? AND visit = ?",
        (e.ts, e.reason, e.run_id, e.step_id, e.visit),
    )
    db.execute(
        "UPDATE gates SET status = 'cancelled' WHERE run_id = ? AND step_id = ? AND visit = ? "
        "AND status = 'waiting'",
        (e.run_id, e.step_id, e.visit),
    )


def _p_gate_resolved(db: Executes, e: Any) -> None:
    db.execute(
        "UPDATE gates SET status = ?, decision = ?, choice = ?, reason = ?, decided_by = COALESCE(decided_by, ?), "
        "decided_at = COALESCE(decided_at, ?) WHERE run_id = ? AND step_id = ? AND visit = ?",
        (e.decision, e.decision, e.choice, e.reason, e.by, e.ts, e.run_id, e.step_id, e.visit),
    )
    db.execute(
        "UPDATE runs SET status = 'running' WHERE id = ? AND status = 'waiting'", (e.run_id,)
    )


# the events that change rows already there, the same in every SQL backend
UPDATES: dict[str, Projection] = {
    "run.started": _p_run_status("running"),
    "run.resumed": _p_run_resumed,
    "run.waiting": _p_run_status("waiting"),
    "run.finished": _p_run_finished,
    "step.finished": _p_step_finished,
    "step.interrupted": _p_step_interrupted,
    "gate.resolved": _p_gate_resolved,
}

PROJECTIONS: dict[str, Projection] = {
    **{kind: _insert(table, build) for kind, (table, build) in INSERTS.items()},
    **UPDATES,
}
