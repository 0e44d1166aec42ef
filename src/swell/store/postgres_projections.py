"""Postgres's query tables, kept up to date from events in the emitting transaction.

The same changes as SQLite's `projections.py`, in Postgres's SQL: rows an event adds
come from `records.INSERTS` and replace a row of the same primary key (`ON CONFLICT
... DO UPDATE` every column, which is SQLite's `INSERT OR REPLACE` for a table with
one unique key); a round also replaces the round holding its thread round (the
second unique key of `rounds`), so it deletes both first.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from swell.store.records import INSERTS, PRIMARY_KEYS, Record
from swell.store.rules import FINISHED_FOR_GOOD

Projection = Callable[[Any, Any], None]  # (a cursor in the emitting transaction, the event)


def _upsert(table: str, record: Record) -> bytes:
    keys = ("run_id", *PRIMARY_KEYS[table])
    updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in record if c not in keys)
    return (
        f"INSERT INTO {table} ({', '.join(record)}) VALUES ({', '.join(['%s'] * len(record))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
    ).encode()


def _insert(table: str, build: Callable[[Any], Record]) -> Projection:
    statement = b""  # made from the first record: a build gives its columns in one order

    def project(cur: Any, e: Any) -> None:
        nonlocal statement
        record = build(e)
        if not statement:
            statement = _upsert(table, record)
        cur.execute(statement, tuple(record.values()))

    return project


def _insert_round(build: Callable[[Any], Record]) -> Projection:
    statement = b""

    def project(cur: Any, e: Any) -> None:
        nonlocal statement
        record = build(e)
        if not statement:
            statement = (
                f"INSERT INTO rounds ({', '.join(record)}) "
                f"VALUES ({', '.join(['%s'] * len(record))})"
            ).encode()
        cur.execute(
            "DELETE FROM rounds WHERE run_id = %s AND (round = %s OR "
            "(thread IS NOT NULL AND thread = %s AND thread_round = %s))",
            (e.run_id, record["round"], record["thread"], record["thread_round"]),
        )
        cur.execute(statement, tuple(record.values()))

    return project


def _p_run_status(status: str) -> Projection:
    def project(cur: Any, e: Any) -> None:
        cur.execute(
            "UPDATE runs SET status = %s, started_at = COALESCE(started_at, %s), updated_at = %s "
            "WHERE id = %s",
            (status, e.ts, e.ts, e.run_id),
        )

    return project


def _p_run_resumed(cur: Any, e: Any) -> None:
    cur.execute(
        "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, "
        "cancel_requested = FALSE, updated_at = %s WHERE id = %s",
        (e.ts, e.run_id),
    )


def _p_run_finished(cur: Any, e: Any) -> None:
    cur.execute(
        "UPDATE runs SET status = %s, finished_at = %s, updated_at = %s, error = %s, visits = %s "
        "WHERE id = %s",
        (e.status, e.ts, e.ts, e.error, e.visits, e.run_id),
    )
    if e.status in FINISHED_FOR_GOOD:
        cur.execute("DELETE FROM snapshots WHERE run_id = %s", (e.run_id,))


def _p_step_finished(cur: Any, e: Any) -> None:
    cur.execute(
        "UPDATE visits SET status = %s, outcome = %s, exit_code = %s, error = %s, error_key = %s, "
        "output_tail = %s, tokens_in = %s, tokens_out = %s, cost_usd = %s, finished_at = %s, "
        "duration_ms = %s WHERE run_id = %s AND step_id = %s AND visit = %s",
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
            e.run_id,
            e.step_id,
            e.visit,
        ),
    )


def _p_step_interrupted(cur: Any, e: Any) -> None:
    cur.execute(
        "UPDATE visits SET status = 'interrupted', finished_at = %s, error = %s "
        "WHERE run_id = %s AND step_id = %s AND visit = %s",
        (e.ts, e.reason, e.run_id, e.step_id, e.visit),
    )
    cur.execute(
        "UPDATE gates SET status = 'cancelled' WHERE run_id = %s AND step_id = %s AND visit = %s "
        "AND status = 'waiting'",
        (e.run_id, e.step_id, e.visit),
    )


def _p_gate_resolved(cur: Any, e: Any) -> None:
    cur.execute(
        "UPDATE gates SET status = %s, decision = %s, choice = %s, reason = %s, "
        "decided_by = COALESCE(decided_by, %s), decided_at = COALESCE(decided_at, %s) "
        "WHERE run_id = %s AND step_id = %s AND visit = %s",
        (e.decision, e.decision, e.choice, e.reason, e.by, e.ts, e.run_id, e.step_id, e.visit),
    )
    cur.execute(
        "UPDATE runs SET status = 'running' WHERE id = %s AND status = 'waiting'", (e.run_id,)
    )


PROJECTIONS: dict[str, Projection] = {
    **{kind: _insert(table, build) for kind, (table, build) in INSERTS.items()},
    "round.recorded": _insert_round(INSERTS["round.recorded"][1]),
    "run.started": _p_run_status("running"),
    "run.resumed": _p_run_resumed,
    "run.waiting": _p_run_status("waiting"),
    "run.finished": _p_run_finished,
    "step.finished": _p_step_finished,
    "step.interrupted": _p_step_interrupted,
    "gate.resolved": _p_gate_resolved,
}
