"""The embedded store: SQLite in WAL mode at `.swell/state.db`.

One writer per run (the process running it) appends events; other processes read,
and write only decisions (gate approvals, cancel requests) into their own columns.
WAL with synchronous=NORMAL survives a killed process (kill -9) without losing a
committed batch; synchronous=FULL (SWELL_SYNC=full, read by `open_store`) also
survives power loss at a cost per commit.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from swell.errors import RunNotFound, StoreError
from swell.store import dispatch as dispatch_sql
from swell.store import output as output_table
from swell.store.dispatch import Dispatched, DispatchKey, SourceSummary
from swell.store.protocols import Capability
from swell.store.rows import (
    GateRow,
    Owner,
    StepRow,
    StoredRow,
    row_from,
)
from swell.store.rules import (
    already_stored,
    busy,
    check_seqs,
    check_snapshot,
    decide,
    now_iso,
    run_values,
    seq_after,
    this_process,
)
from swell.store.sql_reads import SqlReads
from swell.store.sqlite.checkpoints import Checkpoints, checkpoint
from swell.store.sqlite.compact import event_id, pack_ts, seq_of, unpack_ts
from swell.store.sqlite.errors import os_store_error, store_error, translated
from swell.store.sqlite.migrations import migrate
from swell.store.sqlite.queries import EVENTS_AFTER, INSERT_RUN, RUN_COLUMNS
from swell.store.sqlite.run_locks import RunLocks, alive
from swell.store.sqlite.transactions import BUSY_MS, Writes
from swell.store.sqlite.writers import Line

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from swell.events.models import BaseEvent, Event, RunForked
    from swell.store.pages import PageReader, RunFilter
    from swell.store.sqlite.bench import SqliteBench
    from swell.store.stats import StatsSource
    from swell.streaming import OutputChunk

R = TypeVar("R", bound="DataclassInstance")

_INSERT_EVENT = "INSERT INTO events (id, ts, type, step_id, visit, data) VALUES (?, ?, ?, ?, ?, ?)"
_SYNC_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")


@translated
class SqliteStore(SqlReads):
    """Runs, events and their projections in one SQLite file. Every public method
    raises what goes wrong with the file as a `StoreError` naming it (sqlite/errors.py)."""

    # no NOTIFY: nothing wakes another process when a commit lands, followers poll
    capabilities = frozenset(
        {Capability.PAGES, Capability.STATS, Capability.OUTPUT, Capability.CLAIMS}
        | {Capability.DISPATCH, Capability.BENCH}
    )

    run_columns = RUN_COLUMNS
    # `+`: not by the parent_run_id index, which every top-level run matches: SQLite took
    # it, computed each run's visits and last event, and sorted them all for the newest
    # (90 ms of `swell status` with 10,000 runs); by created_at it reads only the newest
    top_level = "+parent_run_id IS NULL"

    def __init__(self, path: Path, synchronous: str = "NORMAL") -> None:
        self.path, self.where = path, str(path)
        if synchronous.upper() not in _SYNC_LEVELS:
            raise StoreError(
                f"unknown SQLite synchronous level '{synchronous}' (use {', '.join(_SYNC_LEVELS)})"
            )
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise os_store_error(exc, path) from None
        # opened before SQLite opens the file: a FIFO there is refused, never waited on
        self.locks = RunLocks(path)
        self.line = Line(path)  # writers.py
        try:
            self.db = sqlite3.connect(
                path, isolation_level=None, timeout=30.0, check_same_thread=False
            )
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self.db.execute(f"PRAGMA busy_timeout={BUSY_MS}")
            migrate(self.db)
        except (sqlite3.Error, OSError) as exc:
            self.locks.close()
            self.line.close()
            if isinstance(exc, OSError):
                raise os_store_error(exc, path) from None
            raise store_error(exc, path) from None
        self.identity = f"sqlite://{path.resolve()}"  # Store.identity
        self._tx = Writes(self.db, self.line)  # `with self._tx():` a write transaction
        self._nums: dict[str, int] = {}  # run id -> its number in `events`, once committed
        self._checkpoints: Checkpoints | None = None  # started by the first `emit`

    def close(self) -> None:
        if self._checkpoints is not None:
            self._checkpoints.close()
        self.db.close()
        self.line.close()
        self.locks.close()  # after SQLite's connection: see run_locks.py

    # ------------------------------------------------------------------ writing

    def create_run(self, **run: Any) -> None:
        with self._tx():
            self._insert_run(**run)

    def create_dispatched_run(self, key: DispatchKey, **run: Any) -> bool:
        with self._tx():
            row = (key.source, key.item, key.pipeline, run["run_id"], now_iso())
            if not self.db.execute(dispatch_sql.INSERT, row).rowcount:
                return False  # the key has its run: nothing is written
            self._insert_run(**run)
        return True

    def dispatched(self, source: str, pipeline: str | None = None) -> list[Dispatched]:
        rows = self.db.execute(dispatch_sql.SELECT, dispatch_sql.select_args(source, pipeline))
        return [Dispatched(*r) for r in rows]

    def dispatch_summary(self) -> list[SourceSummary]:
        return dispatch_sql.summary_rows(self.db.execute(dispatch_sql.SUMMARY))

    def _insert_run(self, **run: Any) -> None:
        try:
            self.db.execute(INSERT_RUN, run_values(**run))
        except sqlite3.IntegrityError:
            raise StoreError(f"run {run['run_id']} already exists") from None

    def claim(self, run_id: str) -> None:
        """Make this process the run's only executor (RunBusy if another one is)."""
        owner = this_process()
        if not self.locks.acquire(run_id):
            raise busy(run_id, self._recorded_owner(run_id, wait=1.0))
        try:
            with self._tx():
                found = self.db.execute(
                    "UPDATE runs SET owner_pid = ?, owner_host = ?, updated_at = ? WHERE id = ?",
                    (owner.pid, owner.host, now_iso(), run_id),
                ).rowcount
            if not found:
                raise RunNotFound(f"no run '{run_id}' in {self.path}")
        except BaseException:
            self.locks.release(run_id)
            raise

    def release(self, run_id: str) -> None:
        self.locks.release(run_id)

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Commit a batch of events and their projections atomically: the events in one
        statement, each stored as its `event_data` next to its envelope columns."""
        if not events:
            return
        from swell.events.models import event_data  # loaded only by writers: readers stay quick
        from swell.store.projections import SqliteTables, Statements, project

        check_seqs(events)
        if self._checkpoints is None:  # this process writes events: checkpoint off the way
            self.db.execute("PRAGMA wal_autocheckpoint=0")
            self._checkpoints = Checkpoints(self.path)
            self._tx.wait_itself()  # in the writers' line, not SQLite's busy handler
        # everything but the writing is done before the transaction: other runs' writers
        # wait while it is open (writers.py)
        stamps: dict[str, int | str] = {}  # a batch's events mostly share one time
        for event in events:
            if event.ts not in stamps:
                stamps[event.ts] = pack_ts(event.ts)
        rows = [
            (
                e.run_id,
                e.seq,
                stamps[e.ts],
                getattr(e, "type", ""),
                e.step_id,
                e.visit,
                event_data(e),
            )
            for e in events
        ]
        statements = Statements()
        tables = SqliteTables(statements)
        for event in events:
            project(tables, event)
        try:
            with self._tx():
                nums = self._run_nums(events)
                try:
                    self.db.executemany(
                        _INSERT_EVENT, [(event_id(nums[r[0]], r[1]), *r[2:]) for r in rows]
                    )
                except sqlite3.IntegrityError:
                    raise _Clash from None
                for statement, params in statements:
                    self.db.execute(statement, params)
        except _Clash:
            # rolled back: which event was stored already (or twice in the batch)?
            raise already_stored(events, self._stored_seqs(events)) from None
        self._nums.update(nums)
        self._committed()

    def _committed(self) -> None:
        assert self._checkpoints is not None
        self._checkpoints.committed(lambda: checkpoint(self.db))

    def save_snapshot(self, run_id: str, seq: int, data: str) -> None:
        with self._tx():
            found, last = self.db.execute(
                "SELECT (SELECT COUNT(*) FROM runs WHERE id = ?), "
                f"COALESCE((SELECT MAX(id) FROM events WHERE {EVENTS_AFTER}) & 4294967295, 0)",
                (run_id, run_id, 0, run_id),
            ).fetchone()
            check_snapshot(run_id, seq, bool(found), last, str(self.path))
            self.db.execute(
                "INSERT INTO snapshots (run_id, seq, data, created_at) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, data = excluded.data, "
                "created_at = excluded.created_at WHERE excluded.seq >= snapshots.seq",
                (run_id, seq, data, now_iso()),
            )

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
        """Record a person's decision on a waiting gate; the running process acts on it."""
        with self._tx():
            gate = decide(self.gates(run_id), run_id, step_id, decision, choice, reason, by)
            self.db.execute(
                "UPDATE gates SET decision = ?, choice = ?, reason = ?, decided_by = ?, decided_at = ? "
                "WHERE run_id = ? AND step_id = ? AND visit = ?",
                (decision, choice, reason, by, now_iso(), run_id, gate.step_id, gate.visit),
            )
            return gate

    def request_cancel(self, run_id: str) -> None:
        with self._tx():
            self.db.execute("UPDATE runs SET cancel_requested = 1 WHERE id = ?", (run_id,))

    # ------------------------------------------------------------------ reading

    def stored_rows(
        self, run_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredRow]:
        return self._stored_rows("", (run_id, seq_after(after_seq), run_id), limit)

    def events_of_kind(self, run_id: str, kinds: Sequence[str]) -> list[Event]:
        from swell.store.marks import marks_term  # the partial index of rare kinds

        marks = ", ".join("?" for _ in kinds)
        condition = f"AND type IN ({marks}) {marks_term(kinds)}"
        rows = self._stored_rows(condition, (run_id, 0, run_id, *kinds))
        return [row.event(run_id) for row in rows]

    def fork_links(self, origin_id: str) -> list[RunForked]:
        from swell.store.marks import MARKS  # the partial index of rare kinds

        # the id is the run's number and the seq (compact.py): a fork's events come
        # after its origin's first (numbers are given in order), so only the marks
        # of runs numbered after the origin are looked at; `instr` only narrows
        rows = self.db.execute(
            "SELECT n.run_id, e.id, e.ts, e.type, e.step_id, e.visit, e.data FROM events e "
            "JOIN event_runs n ON n.num = e.id / 4294967296 "
            f"WHERE e.id > (SELECT num * 4294967296 FROM event_runs WHERE run_id = ?) "
            f"AND e.type = 'run.forked' AND {MARKS} AND instr(e.data, ?) > 0",
            (origin_id, origin_id),
        ).fetchall()
        found = [
            StoredRow(seq_of(key), unpack_ts(ts), kind, step, visit, data).event(run_id)
            for run_id, key, ts, kind, step, visit, data in rows
        ]
        return [e for e in found if e.type == "run.forked" and e.origin_run_id == origin_id]

    def _stored_rows(
        self, condition: str, params: tuple[Any, ...], limit: int | None = None
    ) -> list[StoredRow]:
        """A run's events after a seq (`EVENTS_AFTER`'s parameters first), as stored;
        at most `limit` of them (SQLite's LIMIT -1: all)."""
        rows = self.db.execute(
            f"SELECT id, ts, type, step_id, visit, data FROM events WHERE {EVENTS_AFTER} "
            f"{condition}ORDER BY id LIMIT ?",
            (*params, -1 if limit is None else max(limit, 0)),
        )
        stamps: dict[int | str, str] = {}  # a batch's events share one time
        stored = []
        for key, stored_ts, kind, step, visit, data in rows:
            ts = stamps.get(stored_ts)
            if ts is None:
                ts = stamps[stored_ts] = unpack_ts(stored_ts)
            stored.append(StoredRow(seq_of(key), ts, kind, step, visit, data))
        return stored

    def steps(self, run_id: str) -> list[StepRow]:
        # one pass in primary key order (no sort) counts each step's visits and finds
        # where it starts; then each step's last visit, as `visits` orders them
        groups = self.db.execute(
            "SELECT step_id, COUNT(*), MIN(started_at), MAX(started_at IS NULL), SUM(cost_usd) "
            "FROM visits WHERE run_id = ? GROUP BY step_id",
            (run_id,),
        ).fetchall()
        # NULL sorts first in SQL: a step with a visit of no start time comes first
        groups.sort(key=lambda g: (0, "", g[0]) if g[3] else (1, g[2], g[0]))
        steps = []
        for step_id, visits, _, _, cost in groups:
            visit, status, exit_code, started_at, model = self.db.execute(
                "SELECT visit, status, exit_code, started_at, model FROM visits "
                "WHERE run_id = ? AND step_id = ? ORDER BY started_at DESC, visit DESC LIMIT 1",
                (run_id, step_id),
            ).fetchone()
            steps.append(
                StepRow(
                    step_id, visits, visit, status, exit_code, started_at, float(cost or 0), model
                )
            )
        return steps

    def owner(self, run_id: str) -> Owner | None:
        held = self.locks.holder(run_id)
        if held == "here":
            return this_process()
        return self._recorded_owner(run_id, wait=1.0) if held else None

    def _recorded_owner(self, run_id: str, wait: float) -> Owner:
        """The executor the run's row names, for a run whose lock another process holds.
        Just after a process takes the lock the row may still name the previous executor,
        which is gone: `wait` that long for the new name."""
        deadline = time.monotonic() + wait
        while True:
            row = self.db.execute(
                "SELECT owner_pid, owner_host FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            found = Owner(int(row[0]), str(row[1])) if row and row[0] and row[1] else None
            if found and (found.host != this_process().host or alive(found.pid)):
                return found
            if time.monotonic() >= deadline:
                return found or Owner(0, "?")
            time.sleep(0.01)

    # ------------------------------------------------------------------ output

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        if not chunks:
            return
        with self._tx():
            output_table.write(self.db, chunks)
        if self._checkpoints is not None:
            self._committed()

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        with self._tx():
            output_table.drop(self.db, run_id, step_id, visit, seqs)

    def output(
        self,
        run_id: str,
        *,
        after_id: int = 0,
        step_id: str | None = None,
        visit: int | None = None,
        limit: int | None = None,
    ) -> list[OutputChunk]:
        return output_table.read(self.db, run_id, after_id, step_id, visit, limit)

    # ---------------------------------------------------------------- internals

    def stats_source(self, filt: RunFilter) -> StatsSource:
        """Facts for `swell retro stats`, added up in SQL (store/stats.py)."""
        from swell.store.sqlite.stats import sqlite_stats  # only `retro stats` asks

        return sqlite_stats(self.db, self.path, filt)

    def bench_records(self) -> SqliteBench:
        from swell.store.sqlite.bench import SqliteBench  # only `swell bench` asks

        return SqliteBench(self.db, self.path, self._tx)

    def pages(self) -> PageReader:
        """The dashboard's pages in SQL, ordered by the tables' indexes."""
        from swell.store.sqlite.pages import SqlitePages  # only the dashboard asks

        return SqlitePages(self.db, self.path)

    def _run_nums(self, events: Sequence[BaseEvent]) -> dict[str, int]:
        """The events' runs' numbers in `events`, numbering new ones (in a transaction)."""
        nums: dict[str, int] = {}
        for event in events:
            run_id = event.run_id
            if run_id in nums:
                continue
            num = self._nums.get(run_id)
            if num is None:
                row = self.db.execute(
                    "SELECT num FROM event_runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                if row is None:
                    cursor = self.db.execute(
                        "INSERT INTO event_runs (run_id) VALUES (?)", (run_id,)
                    )
                    row = (cursor.lastrowid,)
                num = int(row[0])
            nums[run_id] = num
        return nums

    def _stored_seqs(self, events: Sequence[BaseEvent]) -> set[tuple[str, int]]:
        """Which of the events' (run_id, seq) the store holds."""
        found: set[tuple[str, int]] = set()
        for run_id in {e.run_id for e in events}:
            seqs = sorted({e.seq for e in events if e.run_id == run_id})
            rows = self.db.execute(
                f"SELECT id FROM events WHERE {EVENTS_AFTER} "
                f"AND (id & 4294967295) IN ({', '.join('?' * len(seqs))})",
                (run_id, 0, run_id, *seqs),
            )
            found |= {(run_id, seq_of(key)) for (key,) in rows}
        return found

    def _all(self, sql: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.db.execute(sql, params).fetchone()
        return row

    def _rows(self, cls: type[R], sql: str, params: tuple[Any, ...]) -> list[R]:
        cursor = self.db.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [row_from(cls, dict(zip(names, row, strict=True))) for row in cursor.fetchall()]


class _Clash(Exception):
    """An event's (run_id, seq) is stored already: the batch is rolled back."""
