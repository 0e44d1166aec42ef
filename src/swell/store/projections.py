"""The store's query tables, kept up to date from events in the same transaction.

One function per event kind that changes a table; events of other kinds are only
stored in `events`.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any


def _p_run_status(status: str) -> Any:
    def project(db: sqlite3.Connection, e: Any) -> None:
        db.execute(
            "UPDATE runs SET status = ?, started_at = COALESCE(started_at, ?), updated_at = ? WHERE id = ?",
            (status, e.ts, e.ts, e.run_id),
        )

    return project


def _p_run_resumed(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "UPDATE runs SET status = 'running', finished_at = NULL, error = NULL, cancel_requested = 0, "
        "updated_at = ? WHERE id = ?",
        (e.ts, e.run_id),
    )


def _p_run_finished(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "UPDATE runs SET status = ?, finished_at = ?, updated_at = ?, error = ?, visits = ? WHERE id = ?",
        (e.status, e.ts, e.ts, e.error, e.visits, e.run_id),
    )


def _p_step_started(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO visits (run_id, step_id, visit, kind, status, persona, adapter, model, started_at) "
        "VALUES (?, ?, ?, ?, 'running', ?, ?, ?, ?)",
        (e.run_id, e.step_id, e.visit, e.kind, e.persona, e.adapter, e.model, e.ts),
    )


def _p_step_finished(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "UPDATE visits SET status = ?, outcome = ?, exit_code = ?, error = ?, error_key = ?, output_tail = ?, "
        "tokens_in = ?, tokens_out = ?, cost_usd = ?, finished_at = ?, duration_ms = ? "
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
            e.run_id,
            e.step_id,
            e.visit,
        ),
    )


def _p_step_interrupted(db: sqlite3.Connection, e: Any) -> None:
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


def _p_context(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO context (run_id, key, value, step_id, visit, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        (e.run_id, e.key, e.value, e.step_id, e.visit, e.ts),
    )


def _p_artifact(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO artifacts (run_id, step_id, visit, name, path, sha256, size, type, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.run_id,
            e.step_id or "",
            e.visit or 0,
            e.name,
            e.path,
            e.sha256,
            e.size,
            e.artifact_type,
            e.ts,
        ),
    )


def _p_gate_waiting(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO gates (run_id, step_id, visit, gate_type, status, message, choices, deadline, "
        "created_at) VALUES (?, ?, ?, ?, 'waiting', ?, ?, ?, ?)",
        (
            e.run_id,
            e.step_id,
            e.visit,
            e.gate_type,
            e.message,
            json.dumps([c.model_dump() for c in e.choices]),
            e.deadline,
            e.ts,
        ),
    )


def _p_gate_resolved(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "UPDATE gates SET status = ?, decision = ?, choice = ?, reason = ?, decided_by = COALESCE(decided_by, ?), "
        "decided_at = COALESCE(decided_at, ?) WHERE run_id = ? AND step_id = ? AND visit = ?",
        (e.decision, e.decision, e.choice, e.reason, e.by, e.ts, e.run_id, e.step_id, e.visit),
    )
    db.execute(
        "UPDATE runs SET status = 'running' WHERE id = ? AND status = 'waiting'", (e.run_id,)
    )


def _p_round(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO rounds (run_id, round, thread, thread_round, step_id, visit, role, persona, "
        "ts, metadata, content) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.run_id,
            e.round,
            e.thread,
            e.thread_round,
            e.step_id,
            e.visit,
            e.role,
            e.persona,
            e.ts,
            json.dumps(e.metadata, default=str),
            e.content,
        ),
    )


def _p_review(db: sqlite3.Connection, e: Any) -> None:
    db.execute(
        "INSERT OR REPLACE INTO reviews (run_id, step_id, visit, contract, for_step, reviewer, adapter, model, "
        "verdict, issues, suggestions, confidence, summary, error, tokens_in, tokens_out, cost_usd, "
        "duration_ms, ts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            e.run_id,
            e.step_id,
            e.visit,
            e.index,
            e.for_step,
            e.reviewer,
            e.adapter,
            e.model,
            e.verdict,
            json.dumps(e.issues),
            json.dumps(e.suggestions),
            e.confidence,
            e.summary,
            e.error,
            e.tokens_in,
            e.tokens_out,
            e.cost_usd,
            e.duration_ms,
            e.ts,
        ),
    )


PROJECTIONS = {
    "run.started": _p_run_status("running"),
    "run.resumed": _p_run_resumed,
    "run.waiting": _p_run_status("waiting"),
    "run.finished": _p_run_finished,
    "step.started": _p_step_started,
    "step.finished": _p_step_finished,
    "step.interrupted": _p_step_interrupted,
    "context.set": _p_context,
    "artifact.written": _p_artifact,
    "gate.waiting": _p_gate_waiting,
    "gate.resolved": _p_gate_resolved,
    "round.recorded": _p_round,
    "review.completed": _p_review,
}
