"""An in-memory store: the same behaviour as SqliteStore, without a file.

For an in-process engine test harness and for users' own tests. Several handles can
share one database the way several SqliteStore objects share a file: pass one
handle's `database` to the next (`MemoryStore(store.database)`).

The tables mirror the SQLite schema: a record is a dict of column values (JSON
columns as JSON text) and rows are decoded by the same `row_from`. Every call holds
the database's lock; a batch that fails is undone from a journal, so readers never
see part of one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from swell.errors import RunNotFound, StoreError
from swell.events.models import BaseEvent, Event, RunForked, event_data, event_json
from swell.store.dispatch import Dispatched, DispatchKey, SourceSummary, summarize
from swell.store.memory.tables import Journal, MemoryDatabase, project
from swell.store.protocols import Capability
from swell.store.records import Record
from swell.store.rows import (
    ArtifactRow,
    GateRow,
    Limit,
    Owner,
    ReviewRow,
    RoundRow,
    RunRow,
    StepRow,
    StoredRow,
    VisitRow,
    row_from,
    stored_page,
)
from swell.store.rules import (
    CANDIDATES,
    busy,
    check_seqs,
    check_snapshot,
    decide,
    now_iso,
    one_run,
    pending,
    run_values,
    this_process,
)
from swell.streaming import OutputChunk

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

R = TypeVar("R", bound="DataclassInstance")


# `run_values` in the order it gives them, and the columns a new run starts with
INSERTED = ("id", "pipeline", "pipeline_path", "project_root", "input", "parent_run_id",
            "parent_step_id", "workspace", "options", "created_at", "updated_at", "owner_pid",
            "pipeline_text")  # fmt: skip
NEW_RUN = {"status": "pending", "started_at": None, "finished_at": None, "error": None,
           "visits": 0, "owner_host": None, "cancel_requested": 0}  # fmt: skip


def _none_first(value: str | None) -> tuple[bool, str]:
    """A sort key that puts None first, as SQL orders NULL."""
    return (value is not None, value or "")


class MemoryStore:
    """A handle on an in-memory database: a new private one, or `database`."""

    location = "memory:"
    # pages, stats and followers are computed from the methods below
    # (store/capabilities.py); a database lives in one process, so no NOTIFY
    capabilities = frozenset({Capability.OUTPUT, Capability.CLAIMS, Capability.DISPATCH})

    def __init__(self, database: MemoryDatabase | None = None) -> None:
        self.database = database or MemoryDatabase()
        self.identity = f"memory:{id(self.database):x}"  # Store.identity
        self._open = True

    def close(self) -> None:
        """This handle is done (its claims end with it); other handles keep the database."""
        with self.database.lock:
            for run_id, (_, handle) in list(self.database.claims.items()):
                if handle == id(self):
                    del self.database.claims[run_id]
        self._open = False

    # ------------------------------------------------------------------ writing

    def create_run(self, **run: Any) -> None:
        record = dict(zip(INSERTED, run_values(**run), strict=True)) | NEW_RUN
        run_id = record["id"]
        with self._write() as journal:
            if run_id in self.database.runs:
                raise StoreError(f"run {run_id} already exists")
            journal.put(self.database.runs, run_id, record)

    def create_dispatched_run(self, key: DispatchKey, **run: Any) -> bool:
        with self._write() as journal:
            if (key.source, key.item, key.pipeline) in self.database.dispatches:
                return False
            done = Dispatched(key.source, key.item, key.pipeline, run["run_id"], now_iso())
            journal.put(self.database.dispatches, (key.source, key.item, key.pipeline), done)
            self.create_run(**run)  # the same lock, re-entered: undone with the key if it fails
        return True

    def dispatched(self, source: str, pipeline: str | None = None) -> list[Dispatched]:
        with self.database.lock:
            rows = list(self.database.dispatches.values())
        return [d for d in rows if d.source == source and pipeline in (None, d.pipeline)]

    def dispatch_summary(self) -> list[SourceSummary]:
        with self.database.lock:
            rows = list(self.database.dispatches.values())
        return summarize(rows, lambda run_id: self.get_run(run_id).status)

    def claim(self, run_id: str) -> None:
        """Make this handle the run's only executor (RunBusy if another one is): handles
        stand for processes, as connections do for SQLite."""
        owner = this_process()
        with self._write() as journal:
            if run_id not in self.database.runs:
                raise RunNotFound(f"no run '{run_id}' in {self.location}")
            holder = self.database.claims.get(run_id)
            if holder is not None and holder[1] != id(self):
                raise busy(run_id, holder[0])
            journal.put(self.database.claims, run_id, (owner, id(self)))
            journal.update(
                self.database.runs,
                run_id,
                owner_pid=owner.pid,
                owner_host=owner.host,
                updated_at=now_iso(),
            )

    def release(self, run_id: str) -> None:
        with self._write():
            holder = self.database.claims.get(run_id)
            if holder is not None and holder[1] == id(self):
                del self.database.claims[run_id]

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Store a batch of events and their projections atomically."""
        if not events:
            return
        check_seqs(events)
        db = self.database
        with self._write() as journal:
            for event in events:
                kind = getattr(event, "type", "")
                log = db.table("events", event.run_id)
                if event.seq in log:
                    raise StoreError(f"event {event.seq} of run {event.run_id} is already stored")
                record = {
                    "ts": event.ts,
                    "type": kind,
                    "step_id": event.step_id,
                    "visit": event.visit,
                    "data": event_data(event),
                }
                journal.put(log, event.seq, record)
                project(db, journal, event)

    def decide_gate(
        self,
        run_id: str,
        step_id: str | None,
        decision: Literal["approved", "rejected"],
        *,
        choice: str | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> GateRow:
        with self._write() as journal:
            gate = decide(self.gates(run_id), run_id, step_id, decision, choice, reason, by)
            journal.update(
                self.database.table("gates", run_id),
                (gate.step_id, gate.visit),
                decision=decision,
                choice=choice,
                reason=reason,
                decided_by=by,
                decided_at=now_iso(),
            )
            return gate

    def request_cancel(self, run_id: str) -> None:
        with self._write() as journal:
            journal.update(self.database.runs, run_id, cancel_requested=1)

    def save_snapshot(self, run_id: str, seq: int, data: str) -> None:
        with self._write() as journal:
            db = self.database
            last = max(db.rows("events", run_id), default=0)
            check_snapshot(run_id, seq, run_id in db.runs, last, self.location)
            kept = db.snapshots.get(run_id)
            if kept is None or seq >= kept[0]:
                journal.put(db.snapshots, run_id, (seq, data))

    # ------------------------------------------------------------------ reading

    def get_run(self, run_id: str) -> RunRow:
        with self._read() as db:
            if run_id in db.runs:
                return self._run(db.runs[run_id])
            found = [r for r in db.runs.values() if run_id and r["id"].startswith(run_id)]
            found = found[::-1][: CANDIDATES + 1]  # newest first, as SQLite orders them
            return one_run(run_id, [self._run(r) for r in found], self.location)

    def list_runs(self, limit: int = 50, include_children: bool = True) -> list[RunRow]:
        with self._read() as db:
            order = {run_id: n for n, run_id in enumerate(db.runs)}
            runs = [r for r in db.runs.values() if include_children or r["parent_run_id"] is None]
            runs.sort(key=lambda r: (r["created_at"], order[r["id"]]), reverse=True)
            return [self._run(r) for r in (runs[:limit] if limit >= 0 else runs)]

    def children(self, run_id: str) -> list[RunRow]:
        with self._read() as db:
            # dicts keep insertion order and sort() is stable: ties stay in rowid order
            runs = [r for r in db.runs.values() if r["parent_run_id"] == run_id]
            runs.sort(key=lambda r: r["created_at"])
            return [self._run(r) for r in runs]

    def events_of_kind(self, run_id: str, kinds: Sequence[str]) -> list[Event]:
        return [e for e in self.events(run_id) if e.type in kinds]  # memory: all are cheap

    def fork_links(self, origin_id: str) -> list[RunForked]:
        with self._read() as db:
            runs = [r for r, rows in db.tables["events"].items() if rows]
        found = [e for r in runs for e in self.events_of_kind(r, ("run.forked",))]
        return [e for e in found if e.type == "run.forked" and e.origin_run_id == origin_id]

    def events(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[Event]:
        return [row.event(run_id) for row in self.stored_rows(run_id, after_seq, limit)]

    def stored_rows(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[StoredRow]:
        with self._read() as db:
            return stored_page(db.rows("events", run_id), after_seq, limit)

    def raw_events(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[str]:
        return [event_json(event) for event in self.events(run_id, after_seq, limit)]

    def load_snapshot(self, run_id: str) -> tuple[int, str] | None:
        with self._read() as db:
            return db.snapshots.get(run_id)

    def visits(self, run_id: str) -> list[VisitRow]:
        return self._select(VisitRow, "visits", run_id, "started_at")

    def steps(self, run_id: str) -> list[StepRow]:
        with self._read() as db:
            first: dict[str, Record] = {}
            last: dict[str, Record] = {}
            counts: dict[str, int] = {}
            costs: dict[str, float] = {}
            for (step_id, visit), row in db.rows("visits", run_id).items():
                costs[step_id] = costs.get(step_id, 0.0) + row["cost_usd"]
                # a step's visits as `visits` orders them: by started_at, then visit
                key = (_none_first(row["started_at"]), visit)
                counts[step_id] = counts.get(step_id, 0) + 1
                if step_id not in first or key < first[step_id]["_key"]:
                    first[step_id] = {**row, "_key": key}
                if step_id not in last or key > last[step_id]["_key"]:
                    last[step_id] = {**row, "_key": key}
            order = sorted(first, key=lambda s: (first[s]["_key"][0], s))
            return [
                StepRow(
                    step_id=s,
                    visits=counts[s],
                    last_visit=last[s]["visit"],
                    last_status=last[s]["status"],
                    last_exit_code=last[s]["exit_code"],
                    last_started_at=last[s]["started_at"],
                    cost_usd=costs[s],
                    last_model=last[s]["model"],
                )
                for s in order
            ]

    def artifacts(self, run_id: str) -> list[ArtifactRow]:
        return self._select(ArtifactRow, "artifacts", run_id, "created_at")

    def context(self, run_id: str) -> dict[str, str]:
        with self._read() as db:
            return {r["key"]: r["value"] for _, r in sorted(db.rows("context", run_id).items())}

    def gates(self, run_id: str) -> list[GateRow]:
        return self._select(GateRow, "gates", run_id, "created_at")

    def pending_decision(self, run_id: str, step_id: str, visit: int) -> GateRow | None:
        return pending(self.gates(run_id), step_id, visit)

    def reviews(self, run_id: str) -> list[ReviewRow]:
        return self._select(ReviewRow, "reviews", run_id, "ts")

    def owner(self, run_id: str) -> Owner | None:
        with self._read() as db:
            holder = db.claims.get(run_id)
            return holder[0] if holder else None

    def pipeline_text(self, run_id: str) -> str | None:
        with self._read() as db:
            run = db.runs.get(run_id)
            return run["pipeline_text"] if run else None

    def cancel_requested(self, run_id: str) -> bool:
        with self._read() as db:
            run = db.runs.get(run_id)
            return bool(run and run["cancel_requested"])

    # ------------------------------------------------------------------ rounds

    def round_count(self, run_id: str, thread: str | None) -> int:
        with self._read() as db:
            if thread is None:
                return max((n for (n,) in db.rows("rounds", run_id)), default=0)
            index = db.thread_rounds.get(run_id, {})
            return max((n for t, n in index if t == thread), default=0)

    def rounds_between(
        self, run_id: str, thread: str | None, first: int, last: int
    ) -> list[RoundRow]:
        with self._read() as db:
            table = db.rows("rounds", run_id)
            if thread is None:
                keys = {n: (n,) for (n,) in table}
            else:
                index = db.thread_rounds.get(run_id, {})
                keys = {n: (r,) for (t, n), r in index.items() if t == thread}
            wanted = sorted(n for n in keys if first <= n <= last)
            return [row_from(RoundRow, {**table[keys[n]], "id": n}) for n in wanted]

    # ------------------------------------------------------------------ output

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        with self._read() as db:
            db.output.write(chunks)

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        with self._read() as db:
            db.output.drop(run_id, step_id, visit, seqs)

    def output(self, run_id: str, **where: Any) -> list[OutputChunk]:  # Store.output's
        with self._read() as db:
            return db.output.read(run_id, **where)

    # ---------------------------------------------------------------- internals

    @contextmanager
    def _read(self) -> Iterator[MemoryDatabase]:
        if not self._open:
            raise StoreError(f"the store {self.location} is closed")
        with self.database.lock:
            yield self.database

    @contextmanager
    def _write(self) -> Iterator[Journal]:
        with self._read():
            journal = Journal()
            try:
                yield journal
            except BaseException:
                journal.rollback()
                raise

    def _run(self, record: Record) -> RunRow:
        """A run row with the fields SQLite derives for runs still going."""
        run_id = record["id"]
        visits = record["visits"]
        if record["finished_at"] is None:
            table = self.database.rows("visits", run_id)
            # those going on too, not interrupted ones, as SQLite counts them
            visits = sum(v["status"] != "interrupted" for v in table.values())
        last_seq = max(self.database.rows("events", run_id), default=0)
        return row_from(RunRow, {**record, "visits": visits, "last_seq": last_seq})

    def _select(self, cls: type[R], table: str, run_id: str, order: str) -> list[R]:
        """One run's rows ordered by `order`, then by primary key, as SQLite orders them."""
        with self._read() as db:
            rows = db.rows(table, run_id)
            return [row_from(cls, rows[k]) for k in sorted(rows, key=lambda k: (rows[k][order], k))]
