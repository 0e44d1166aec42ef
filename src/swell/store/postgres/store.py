"""The shared store: Postgres, for several machines (or many processes) on one database.

Chosen by `open_store` for a `postgres://` or `postgresql://` URL (psycopg 3's
conninfo: `?options=-csearch_path%3Dmyschema` puts swell's tables in a schema of
their own). SQLite's tables (migrations.py) and projections (projections.py); lookups
and gate decisions are `rules.py`, so errors read as they do over SQLite.

**Claims** are session-level advisory locks (`pg_try_advisory_lock`), one per run
(a 64-bit key hashed from the schema and the run id), taken on the handle's own
connection: the server drops them when that connection ends, however the process
holding it ends (kill -9 included: the server sees the socket close), so liveness
follows the connection as the kernel's lock on the database file follows the process
for SQLite (`sqlite/run_locks.py`); `close` unlocks before it closes, so the locks are
gone when it returns. `owner` asks `pg_locks` whether the lock is held, and names the
pid and host the holder recorded in `runs` when it claimed. A connection pooler in
transaction mode would break session locks: connect directly, or through a pool in
session mode.

**Waking followers** (the `notify` capability): `emit` sends `NOTIFY` on the store's
channel (`swell_events_<hash of the schema>`, payload the run id) in its transaction
while a follower is registered in `listeners` (postgres/listen.py);
`wait_for_events` LISTENs on a second connection, registered, and wakes on the commit.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import psycopg

from swell.errors import RunNotFound, StoreError, SwellError
from swell.store import dispatch as dispatch_sql
from swell.store import output as output_table
from swell.store.dispatch import Dispatched, DispatchKey, SourceSummary
from swell.store.postgres.migrations import migrate
from swell.store.postgres.pages import PostgresPages
from swell.store.postgres.queries import HOLDER, INSERT_RUN, RUN_COLUMNS
from swell.store.postgres.stats import postgres_stats
from swell.store.protocols import Capability
from swell.store.rows import GateRow, Limit, Owner, StepRow, StoredRow, row_from, sql_limit
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
from swell.store.urls import redacted
from swell.streaming import OutputChunk

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from swell.events.models import BaseEvent, Event, RunForked
    from swell.store.pages import RunFilter
    from swell.store.postgres.listen import CommitListener
    from swell.store.stats import StatsSource

R = TypeVar("R", bound="DataclassInstance")
Connection = psycopg.Connection[tuple[Any, ...]]
Cursor = psycopg.Cursor[tuple[Any, ...]]


class PostgresStore(SqlReads):
    """Runs, events and their projections in a Postgres database (one schema of it)."""

    capabilities = frozenset(Capability) - {Capability.BENCH}  # SQL pages, stats, NOTIFY
    placeholder = "%s"  # in the SQL shared with SQLite (sql_reads.py)
    run_columns, prefix, age, no_limit = RUN_COLUMNS, "left(id, ?)", "num", None

    def __init__(self, url: str) -> None:
        self.url = url
        self.where = redacted(url)
        try:
            self.db: Connection = psycopg.connect(url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreError(f"cannot open the Postgres store at {self.where}: {exc}") from None
        try:
            migrate(self.db)
            row = self.db.execute("SELECT current_schema()").fetchone()
        except psycopg.Error as exc:
            self.db.close()
            raise StoreError(f"cannot prepare the Postgres store at {self.where}: {exc}") from None
        self.schema = str(row[0]) if row else "public"
        # Store.identity: where the server is, not how this URL reached it (no user,
        # no password)
        info = self.db.info
        self.identity = f"postgresql://{info.host}:{info.port}/{info.dbname} schema {self.schema}"
        digest = hashlib.sha256(self.schema.encode()).hexdigest()[:16]
        self.channel = f"swell_events_{digest}"
        self._lock = threading.RLock()  # one statement or transaction at a time per handle
        self._held: set[str] = set()  # runs this handle's connection holds the lock of
        self._listener: Connection | None = None
        self._batcher: psycopg.ClientCursor[tuple[Any, ...]] | None = None  # `emit`'s

    def close(self) -> None:
        with self._lock:
            if self._held and not self.db.closed:
                # closing only sends Terminate: the server may still hold the locks when
                # close() returns; unlocking is a round trip, done when the reply comes
                with contextlib.suppress(psycopg.Error):
                    self.db.execute("SELECT pg_advisory_unlock_all()")
            self._held.clear()
            if self._listener is not None:
                from swell.store.postgres.listen import unlisten

                with contextlib.suppress(psycopg.Error):
                    unlisten(self._listener)
                self._listener.close()
            self.db.close()

    # ------------------------------------------------------------------ writing

    def create_run(self, **run: Any) -> None:
        with self._tx() as cur:
            self._insert_run(cur, **run)

    def create_dispatched_run(self, key: DispatchKey, **run: Any) -> bool:
        with self._tx() as cur:
            row = (key.source, key.item, key.pipeline, run["run_id"], now_iso())
            cur.execute(dispatch_sql.INSERT.replace("?", "%s"), row)
            if not cur.rowcount:
                return False  # the key has its run: nothing is written
            self._insert_run(cur, **run)
        return True

    def dispatched(self, source: str, pipeline: str | None = None) -> list[Dispatched]:
        query = dispatch_sql.SELECT.replace("? IS NULL", "%s::text IS NULL").replace("?", "%s")
        with self._tx() as cur:
            rows = cur.execute(query, dispatch_sql.select_args(source, pipeline)).fetchall()
        return [Dispatched(*r) for r in rows]

    def dispatch_summary(self) -> list[SourceSummary]:
        with self._tx() as cur:
            return dispatch_sql.summary_rows(cur.execute(dispatch_sql.SUMMARY).fetchall())

    def _insert_run(self, cur: Cursor, **run: Any) -> None:
        try:
            cur.execute(INSERT_RUN, run_values(**run))
        except psycopg.errors.UniqueViolation:
            raise StoreError(f"run {run['run_id']} already exists") from None

    def claim(self, run_id: str) -> None:
        """Take the run's advisory lock on this handle's connection (RunBusy naming the
        holder when another connection has it) and record this process as executor."""
        owner = this_process()
        with self._lock:
            if run_id not in self._held:
                row = self._one("SELECT pg_try_advisory_lock(%s)", (self._key(run_id),))
                if not (row and row[0]):
                    raise busy(run_id, self._holder(run_id, wait=True))
                self._held.add(run_id)
            try:
                with self._tx() as cur:
                    cur.execute(
                        "UPDATE runs SET owner_pid = %s, owner_host = %s, "
                        "owner_backend = pg_backend_pid(), updated_at = %s WHERE id = %s",
                        (owner.pid, owner.host, now_iso(), run_id),
                    )
                    found = cur.rowcount
                if not found:
                    raise RunNotFound(f"no run '{run_id}' in {self.where}")
            except BaseException:
                self.release(run_id)
                raise

    def release(self, run_id: str) -> None:
        with self._lock:
            if run_id in self._held:
                self._held.discard(run_id)
                self._one("SELECT pg_advisory_unlock(%s)", (self._key(run_id),))

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Commit a batch of events (one INSERT) and their projections atomically, and
        notify followers when it commits: one message to the server, its statements
        with their values in line (`batch.py`), which the server runs as one
        transaction: one round trip a batch, and a failing statement rolls it all back."""
        if not events:
            return
        from swell.store.postgres.batch import batch_sql

        check_seqs(events)
        try:
            message = batch_sql(events, self.channel).encode()
        except ValueError as exc:  # a NUL in a text, which Postgres cannot store
            raise StoreError(f"the Postgres store at {self.where} failed: {exc}") from None
        try:
            with self._lock, self._errors():
                self._client().execute(message)
        except _Clash:
            # rolled back: which event was stored already (or twice in the batch)?
            raise already_stored(events, self._stored_seqs(events)) from None

    def _client(self) -> psycopg.ClientCursor[tuple[Any, ...]]:
        """The cursor that sends a batch: values bound here, statements as one message."""
        if self._batcher is None:
            self._batcher = psycopg.ClientCursor(self.db)
        return self._batcher

    def save_snapshot(self, run_id: str, seq: int, data: str) -> None:
        with self._tx() as cur:
            found, last = cur.execute(
                "SELECT EXISTS (SELECT 1 FROM runs WHERE id = %s), "
                "COALESCE((SELECT MAX(seq) FROM events WHERE run_id = %s), 0)",
                (run_id, run_id),
            ).fetchone() or (False, 0)
            check_snapshot(run_id, seq, bool(found), int(last), self.where)
            cur.execute(
                "INSERT INTO snapshots (run_id, seq, data, created_at) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT (run_id) DO UPDATE SET seq = EXCLUDED.seq, data = EXCLUDED.data, "
                "created_at = EXCLUDED.created_at WHERE EXCLUDED.seq >= snapshots.seq",
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
        with self._tx() as cur:
            # the run's gate rows stay as read until this commits (two deciders queue here)
            cur.execute("SELECT 1 FROM gates WHERE run_id = %s FOR UPDATE", (run_id,))
            gate = decide(self.gates(run_id), run_id, step_id, decision, choice, reason, by)
            cur.execute(
                "UPDATE gates SET decision = %s, choice = %s, reason = %s, decided_by = %s, "
                "decided_at = %s WHERE run_id = %s AND step_id = %s AND visit = %s",
                (decision, choice, reason, by, now_iso(), run_id, gate.step_id, gate.visit),
            )
            return gate

    def request_cancel(self, run_id: str) -> None:
        with self._tx() as cur:
            cur.execute("UPDATE runs SET cancel_requested = TRUE WHERE id = %s", (run_id,))

    # ------------------------------------------------------------------ reading

    def stored_rows(self, run_id: str, after_seq: int = 0, limit: Limit = None) -> list[StoredRow]:
        rows = self._all(
            "SELECT seq, ts, type, step_id, visit, data FROM events "
            "WHERE run_id = %s AND seq > %s ORDER BY seq LIMIT %s",
            (run_id, seq_after(after_seq), sql_limit(limit)),
        )
        return [StoredRow(*row) for row in rows]

    def events_of_kind(self, run_id: str, kinds: Sequence[str]) -> list[Event]:
        from swell.store.marks import marks_term  # the partial index of rare kinds

        rows = self._all(
            "SELECT seq, ts, type, step_id, visit, data FROM events "
            f"WHERE run_id = %s AND type = ANY(%s) {marks_term(kinds)}ORDER BY seq",
            (run_id, list(kinds)),
        )
        return [StoredRow(*row).event(run_id) for row in rows]

    def fork_links(self, origin_id: str) -> list[RunForked]:
        from swell.store.marks import MARKS  # the partial index of rare kinds

        rows = self._all(
            "SELECT run_id, seq, ts, type, step_id, visit, data FROM events "
            f"WHERE type = 'run.forked' AND {MARKS} AND strpos(data, %s) > 0",
            (origin_id,),
        )
        found = [StoredRow(*row[1:]).event(row[0]) for row in rows]
        return [e for e in found if e.type == "run.forked" and e.origin_run_id == origin_id]

    def steps(self, run_id: str) -> list[StepRow]:
        # each step's count and where it starts, then each step's last visit as `visits`
        # orders them (SQLite's NULL order: first going up, last going down)
        groups = self._all(
            "SELECT step_id, COUNT(*), MIN(started_at), bool_or(started_at IS NULL), "
            "SUM(cost_usd) FROM visits WHERE run_id = %s GROUP BY step_id",
            (run_id,),
        )
        lasts = {
            step: (visit, status, exit_code, started_at, model)
            for step, visit, status, exit_code, started_at, model in self._all(
                "SELECT DISTINCT ON (step_id) step_id, visit, status, exit_code, started_at, model "
                "FROM visits "
                "WHERE run_id = %s ORDER BY step_id, started_at DESC NULLS LAST, visit DESC",
                (run_id,),
            )
        }
        groups.sort(key=lambda g: (0, "", g[0]) if g[3] else (1, g[2], g[0]))
        return [
            StepRow(step, int(count), *lasts[step][:4], float(cost or 0), lasts[step][4])
            for step, count, _, _, cost in groups
        ]

    def owner(self, run_id: str) -> Owner | None:
        with self._lock:
            if run_id in self._held:
                return this_process()
            return self._holder(run_id, wait=False)

    # ------------------------------------------------------------------ output

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        """Chunks in the order given; one stored already moves to the end with a new id,
        as SQLite's INSERT OR REPLACE does."""
        if not chunks:
            return
        with self._tx() as cur:
            cur.executemany(
                "INSERT INTO output (run_id, step_id, visit, stream, seq, ts, text) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (run_id, step_id, visit, seq) DO UPDATE SET id = DEFAULT, "
                "stream = EXCLUDED.stream, ts = EXCLUDED.ts, text = EXCLUDED.text",
                [(c.run_id, c.step_id, c.visit, c.stream, c.seq, c.ts, c.text) for c in chunks],
            )

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        with self._tx() as cur:
            cur.execute(
                "DELETE FROM output WHERE run_id = %s AND step_id = %s AND visit = %s "
                "AND seq >= %s AND seq < %s",
                (run_id, step_id, visit, seqs.start, seqs.stop),
            )

    def output(self, run_id: str, **where: Any) -> list[OutputChunk]:  # Store.output's
        rows = self._all(output_table.POSTGRES_READ, output_table.postgres_read(run_id, **where))
        return [OutputChunk(r[1], r[2], r[3], r[4], r[5], r[6], r[7], id=r[0]) for r in rows]

    # ------------------------------------------------------------------ following

    def stats_source(self, filt: RunFilter) -> StatsSource:
        """Facts for `swell retro stats`, added up in SQL (store/stats.py)."""
        return postgres_stats(self._all, filt)

    def pages(self) -> PostgresPages:
        """The dashboard's pages in SQL (postgres/pages.py)."""
        return PostgresPages(self._rows, self._all, self._one)

    def wait_for_events(self, run_id: str, after_seq: int, timeout: float) -> bool:
        """Wait until the run has an event after `after_seq` (True) or `timeout` seconds
        pass (False): woken by the NOTIFY `emit` sends, not by polling."""
        deadline = time.monotonic() + max(timeout, 0.0)
        listener = self._listen()
        while True:
            row = self._one("SELECT MAX(seq) FROM events WHERE run_id = %s", (run_id,))
            if row and row[0] is not None and row[0] > after_seq:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            try:
                for _ in listener.notifies(timeout=remaining, stop_after=1):
                    pass
            except psycopg.Error as exc:
                raise StoreError(f"lost the Postgres store at {self.where}: {exc}") from None

    def commit_listener(self) -> CommitListener:
        """Every commit's run id, on a LISTEN connection of its own (web/tails.py)."""
        from swell.store.postgres.listen import CommitListener

        return CommitListener(self.url, self.channel, self.where)

    # ---------------------------------------------------------------- internals

    def _listen(self) -> Connection:
        with self._lock:
            return self._listener or self._new_listener()

    def _new_listener(self) -> Connection:
        if self._listener is None:
            try:
                from swell.store.postgres.listen import listen

                listener = psycopg.connect(self.url, autocommit=True)
                listen(listener, self.channel)
            except psycopg.Error as exc:
                raise StoreError(f"cannot listen to the store at {self.where}: {exc}") from None
            self._listener = listener
        return self._listener

    def _key(self, run_id: str) -> int:
        """The run's advisory lock key: 64 bits of a hash of the schema and the run id."""
        digest = hashlib.sha256(f"swell.run\0{self.schema}\0{run_id}".encode()).digest()
        return int.from_bytes(digest[:8], "big", signed=True)

    def _holder(self, run_id: str, *, wait: bool) -> Owner | None:
        """The process holding the run's lock, or None when no connection holds it.
        Just after a process takes the lock it has not yet recorded itself: `wait`
        a moment for it, as the SQLite store does."""
        key = self._key(run_id)
        params = (run_id, (key >> 32) & 0xFFFFFFFF, key & 0xFFFFFFFF)
        deadline = time.monotonic() + (1.0 if wait else 0.0)
        while True:
            row = self._one(HOLDER, params)
            if row is None:
                return None
            backend, recorded, pid, host = row
            if recorded == backend or time.monotonic() >= deadline:
                return Owner(int(pid), str(host)) if pid is not None and host else Owner(0, "?")
            time.sleep(0.01)

    def _stored_seqs(self, events: Sequence[BaseEvent]) -> set[tuple[str, int]]:
        """Which of the events' (run_id, seq) the store holds."""
        found: set[tuple[str, int]] = set()
        for run_id in {e.run_id for e in events}:
            seqs = sorted({e.seq for e in events if e.run_id == run_id})
            rows = self._all(
                "SELECT seq FROM events WHERE run_id = %s AND seq = ANY(%s)", (run_id, seqs)
            )
            found |= {(run_id, int(seq)) for (seq,) in rows}
        return found

    def _rows(self, cls: type[R], query: str, params: tuple[Any, ...]) -> list[R]:
        with self._lock, self._errors():
            cur = self.db.execute(query.encode(), params)
            names = [d.name for d in cur.description or ()]
            return [row_from(cls, dict(zip(names, row, strict=True))) for row in cur.fetchall()]

    def _all(self, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
        with self._lock, self._errors():
            return self.db.execute(query.encode(), params).fetchall()

    def _one(self, query: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        with self._lock, self._errors():
            return self.db.execute(query.encode(), params).fetchone()

    @contextmanager
    def _tx(self) -> Iterator[Cursor]:
        """One transaction on this handle's connection; a unique key clash is `_Clash`."""
        with self._lock, self._errors(), self.db.transaction(), self.db.cursor() as cur:
            yield cur

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except psycopg.errors.UniqueViolation:
            raise _Clash from None
        except SwellError:
            raise
        except psycopg.Error as exc:
            raise StoreError(f"the Postgres store at {self.where} failed: {exc}") from None


class _Clash(Exception):
    """A row's unique key is stored already: the transaction is rolled back."""
