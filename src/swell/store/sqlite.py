"""The embedded store: SQLite in WAL mode at `.swell/state.db`.

One writer per run (the process running it) appends events; other processes read,
and write only decisions (gate approvals, cancel requests) into their own columns.
WAL with synchronous=NORMAL survives a killed process (kill -9) without losing a
committed batch; set SWELL_SYNC=full to also survive power loss at a cost per commit.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from swell.errors import RunNotFound, RunStateError, StoreError

if TYPE_CHECKING:
    from swell.events.models import BaseEvent, Event
from swell.store.migrations import migrate
from swell.store.projections import PROJECTIONS


@dataclass
class RunRow:
    id: str
    pipeline: str
    status: str
    input: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    updated_at: str | None
    error: str | None
    visits: int
    last_seq: int
    parent_run_id: str | None
    parent_step_id: str | None
    workspace: str | None
    pipeline_path: str | None
    project_root: str | None
    owner_pid: int | None
    options: dict[str, Any]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


_RUN_FIELDS = [f.name for f in fields(RunRow)]


@dataclass
class VisitRow:
    step_id: str
    visit: int
    kind: str | None
    status: str
    outcome: str | None
    exit_code: int | None
    error: str | None
    started_at: str | None
    finished_at: str | None
    duration_ms: int | None
    tokens_in: int
    tokens_out: int
    cost_usd: float


@dataclass
class ArtifactRow:
    step_id: str
    visit: int
    name: str
    path: str
    sha256: str
    size: int
    type: str | None


@dataclass
class RoundRow:
    id: int  # the run-wide round number, or the thread's own when a thread is asked for
    role: str | None
    ts: str
    metadata: dict[str, Any]
    content: str
    thread: str | None


@dataclass
class GateRow:
    run_id: str
    step_id: str
    visit: int
    gate_type: str
    status: str
    message: str | None
    choices: list[dict[str, Any]]
    deadline: str | None
    decision: str | None
    choice: str | None
    reason: str | None
    decided_by: str | None


# visits and last_seq are derived for runs still going, so writers need not keep them current
_RUN_COLS = (
    "id, pipeline, status, input, created_at, started_at, finished_at, updated_at, error, "
    "CASE WHEN finished_at IS NULL THEN (SELECT COUNT(*) FROM visits v WHERE v.run_id = runs.id "
    "AND v.status IN ('succeeded', 'failed')) ELSE visits END, "
    "(SELECT COALESCE(MAX(seq), 0) FROM events e WHERE e.run_id = runs.id), "
    "parent_run_id, parent_step_id, workspace, pipeline_path, project_root, owner_pid, options"
)


def _run(row: tuple[Any, ...]) -> RunRow:
    data = dict(zip(_RUN_FIELDS, row, strict=True))
    data["options"] = json.loads(data["options"]) if data["options"] else {}
    return RunRow(**data)


class SqliteStore:
    """Runs, events and their projections in one SQLite file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(
                path, isolation_level=None, timeout=30.0, check_same_thread=False
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            sync = "FULL" if os.environ.get("SWELL_SYNC", "").lower() == "full" else "NORMAL"
            self.db.execute(f"PRAGMA synchronous={sync}")
            self.db.execute("PRAGMA busy_timeout=30000")
            migrate(self.db)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the state database {path}: {exc}") from None

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ writing

    def create_run(
        self,
        *,
        run_id: str,
        pipeline: str,
        input_text: str,
        workspace: str,
        pipeline_path: str | None = None,
        project_root: str | None = None,
        parent_run_id: str | None = None,
        parent_step_id: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        stamp = now_iso()
        with self._tx():
            self.db.execute(
                "INSERT INTO runs (id, pipeline, pipeline_path, project_root, status, input, parent_run_id, "
                "parent_step_id, workspace, options, created_at, updated_at, owner_pid) "
                "VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    pipeline,
                    pipeline_path,
                    project_root,
                    input_text,
                    parent_run_id,
                    parent_step_id,
                    workspace,
                    json.dumps(options or {}),
                    stamp,
                    stamp,
                    os.getpid(),
                ),
            )

    def claim(self, run_id: str, pid: int) -> None:
        """Record which process is executing the run."""
        with self._tx():
            self.db.execute(
                "UPDATE runs SET owner_pid = ?, updated_at = ? WHERE id = ?",
                (pid, now_iso(), run_id),
            )

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Commit a batch of events and their projections atomically."""
        if not events:
            return
        from swell.events.models import event_json  # loaded only by writers: readers stay quick

        with self._tx():
            for event in events:
                data = event_json(event)
                kind = getattr(event, "type", "")
                self.db.execute(
                    "INSERT INTO events (run_id, seq, ts, type, step_id, visit, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (event.run_id, event.seq, event.ts, kind, event.step_id, event.visit, data),
                )
                project = PROJECTIONS.get(kind)
                if project:
                    project(self.db, event)

    def decide_gate(
        self,
        run_id: str,
        step_id: str | None,
        decision: str,
        *,
        choice: str | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> GateRow:
        """Record a person's decision on a waiting gate; the running process acts on it."""
        with self._tx():
            waiting = [g for g in self._gates(run_id) if g.status == "waiting"]
            if step_id:
                waiting = [g for g in waiting if g.step_id == step_id]
            if not waiting:
                what = f"step '{step_id}' of run {run_id}" if step_id else f"run {run_id}"
                raise RunStateError(f"no gate is waiting at {what}")
            if len(waiting) > 1:
                names = ", ".join(g.step_id for g in waiting)
                raise RunStateError(f"several gates are waiting ({names}); name the step")
            gate = waiting[0]
            if gate.decision is not None:
                raise RunStateError(
                    f"gate '{gate.step_id}' was already {gate.decision}; the run has not "
                    "picked the decision up yet (is it running? try `swell resume`)"
                )
            keys = [c["key"] for c in gate.choices]
            if choice is not None and keys and choice not in keys:
                raise RunStateError(
                    f"'{choice}' is not a choice of gate '{gate.step_id}' (choices: {', '.join(keys)})"
                )
            self.db.execute(
                "UPDATE gates SET decision = ?, choice = ?, reason = ?, decided_by = ?, decided_at = ? "
                "WHERE run_id = ? AND step_id = ? AND visit = ?",
                (decision, choice, reason, by, now_iso(), run_id, gate.step_id, gate.visit),
            )
            gate.decision, gate.choice, gate.reason, gate.decided_by = decision, choice, reason, by
            return gate

    def request_cancel(self, run_id: str) -> None:
        with self._tx():
            self.db.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))

    # ------------------------------------------------------------------ reading

    def get_run(self, run_id: str) -> RunRow:
        row = self.db.execute(f"SELECT {_RUN_COLS} FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            rows = self.db.execute(
                f"SELECT {_RUN_COLS} FROM runs WHERE id LIKE ? ORDER BY created_at DESC LIMIT 2",
                (run_id.replace("%", "") + "%",),
            ).fetchall()
            if len(rows) == 1:
                return _run(rows[0])
            if len(rows) > 1:
                raise RunNotFound(f"run id prefix '{run_id}' matches several runs")
            raise RunNotFound(f"no run '{run_id}' in {self.path} (see `swell list`)")
        return _run(row)

    def list_runs(self, limit: int = 50, include_children: bool = True) -> list[RunRow]:
        where = "" if include_children else "WHERE parent_run_id IS NULL"
        rows = self.db.execute(
            f"SELECT {_RUN_COLS} FROM runs {where} ORDER BY created_at DESC, rowid DESC LIMIT ?",
            (limit,),
        ).fetchall()
        return [_run(r) for r in rows]

    def children(self, run_id: str) -> list[RunRow]:
        rows = self.db.execute(
            f"SELECT {_RUN_COLS} FROM runs WHERE parent_run_id = ? ORDER BY created_at", (run_id,)
        ).fetchall()
        return [_run(r) for r in rows]

    def events(self, run_id: str, after_seq: int = 0) -> list[Event]:
        from swell.events.models import parse_event

        rows = self.db.execute(
            "SELECT data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq", (run_id, after_seq)
        ).fetchall()
        return [parse_event(data) for (data,) in rows]

    def raw_events(self, run_id: str, after_seq: int = 0) -> list[str]:
        rows = self.db.execute(
            "SELECT data FROM events WHERE run_id = ? AND seq > ? ORDER BY seq", (run_id, after_seq)
        ).fetchall()
        return [data for (data,) in rows]

    def visits(self, run_id: str) -> list[VisitRow]:
        rows = self.db.execute(
            "SELECT step_id, visit, kind, status, outcome, exit_code, error, started_at, finished_at, duration_ms, "
            "tokens_in, tokens_out, cost_usd FROM visits WHERE run_id = ? ORDER BY started_at, step_id, visit",
            (run_id,),
        ).fetchall()
        return [VisitRow(*r) for r in rows]

    def artifacts(self, run_id: str) -> list[ArtifactRow]:
        rows = self.db.execute(
            "SELECT step_id, visit, name, path, sha256, size, type FROM artifacts WHERE run_id = ? "
            "ORDER BY created_at, step_id, visit, name",
            (run_id,),
        ).fetchall()
        return [ArtifactRow(*r) for r in rows]

    def context(self, run_id: str) -> dict[str, str]:
        rows = self.db.execute(
            "SELECT key, value FROM context WHERE run_id = ? ORDER BY key", (run_id,)
        )
        return dict(rows.fetchall())

    def gates(self, run_id: str) -> list[GateRow]:
        return self._gates(run_id)

    def _gates(self, run_id: str) -> list[GateRow]:
        rows = self.db.execute(
            "SELECT run_id, step_id, visit, gate_type, status, message, choices, deadline, decision, choice, "
            "reason, decided_by FROM gates WHERE run_id = ? ORDER BY created_at",
            (run_id,),
        ).fetchall()
        return [GateRow(*r[:6], json.loads(r[6] or "[]"), *r[7:]) for r in rows]  # type: ignore[call-arg]

    def pending_decision(self, run_id: str, step_id: str, visit: int) -> GateRow | None:
        """A decision recorded for a gate the run has not acted on yet."""
        for gate in self._gates(run_id):
            if (
                gate.step_id == step_id
                and gate.visit == visit
                and gate.status == "waiting"
                and gate.decision
            ):
                return gate
        return None

    def reviews(self, run_id: str) -> list[dict[str, Any]]:
        cur = self.db.execute(
            "SELECT step_id, visit, contract, for_step, reviewer, adapter, model, verdict, issues, suggestions, "
            "confidence, summary, error, tokens_in, tokens_out, cost_usd, duration_ms, ts FROM reviews "
            "WHERE run_id = ? ORDER BY ts",
            (run_id,),
        )
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, row, strict=True)) for row in cur.fetchall()]
        for row in rows:
            row["issues"], row["suggestions"] = (
                json.loads(row["issues"]),
                json.loads(row["suggestions"]),
            )
        return rows

    # ------------------------------------------------------------------ rounds

    def round_count(self, run_id: str, thread: str | None) -> int:
        if thread is None:
            row = self.db.execute(
                "SELECT MAX(round) FROM rounds WHERE run_id = ?", (run_id,)
            ).fetchone()
        else:
            row = self.db.execute(
                "SELECT MAX(thread_round) FROM rounds WHERE run_id = ? AND thread = ?",
                (run_id, thread),
            ).fetchone()
        return int(row[0] or 0)

    def rounds_between(
        self, run_id: str, thread: str | None, first: int, last: int
    ) -> list[RoundRow]:
        """Rounds with first <= id <= last (run-wide ids, or the thread's own), in id order."""
        if thread is None:
            rows = self.db.execute(
                "SELECT round, role, ts, metadata, content, thread FROM rounds "
                "WHERE run_id = ? AND round BETWEEN ? AND ? ORDER BY round",
                (run_id, first, last),
            ).fetchall()
        else:
            rows = self.db.execute(
                "SELECT thread_round, role, ts, metadata, content, thread FROM rounds "
                "WHERE run_id = ? AND thread = ? AND thread_round BETWEEN ? AND ? ORDER BY thread_round",
                (run_id, thread, first, last),
            ).fetchall()
        return [RoundRow(r[0], r[1], r[2], json.loads(r[3] or "{}"), r[4], r[5]) for r in rows]

    def cancel_requested(self, run_id: str) -> bool:
        row = self.db.execute(
            "SELECT cancel_requested FROM runs WHERE id = ?", (run_id,)
        ).fetchone()
        return bool(row and row[0])

    # ---------------------------------------------------------------- internals

    def _tx(self) -> _Transaction:
        return _Transaction(self.db)


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write to the state database: {exc}") from None

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            try:
                self.db.execute("COMMIT")
            except sqlite3.Error as err:
                self.db.execute("ROLLBACK")
                raise StoreError(f"cannot commit to the state database: {err}") from None
        else:
            self.db.execute("ROLLBACK")
