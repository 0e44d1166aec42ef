"""What consumers may ask of a store: the required `Store`, and optional capabilities.

Every backend (`SqliteStore`, `MemoryStore`, `PostgresStore`) implements `Store` (a
`RunWriter`, `RunReader` and `ThreadReader`), and `tests/store/` runs one suite against
each. A consumer asks for the narrowest protocol it uses: the engine's gate and cancel
checks a `RunReader`, `swell thread` a `ThreadReader`.

What only some backends do is a `Capability` the backend declares in its
`capabilities`; callers reach it through `store/capabilities.py`, which gives the
backend's own (checked by the conformance suite), a fallback computed from the
required methods, or one clear `StoreError` when there is none.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from swell.store.rows import (
    ArtifactRow,
    GateRow,
    Owner,
    ReviewRow,
    RoundRow,
    RunRow,
    StepRow,
    StoredRow,
    VisitRow,
)

if TYPE_CHECKING:
    from swell.events.models import BaseEvent, Event, RunForked
    from swell.store.dispatch import Dispatched, DispatchKey, SourceSummary
    from swell.store.pages import PageReader, RunFilter
    from swell.store.stats import StatsSource
    from swell.streaming import OutputChunk


class RunWriter(Protocol):
    """Writes runs and their events; also the event sink the run loop commits to.

    One process runs a run and is its only event writer; other processes write only
    decisions (gate approvals, cancel requests). Every call is one transaction.
    """

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
        pipeline_text: str | None = None,
    ) -> None:
        """Record a `pending` run; StoreError if the id exists. `pipeline_text`: the
        pipeline file as it is now, which resuming the run will use."""
        ...

    def emit(self, events: Sequence[BaseEvent]) -> None:
        """Store a batch of stamped events and update the projections, all or nothing.

        A (run_id, seq) already stored, or twice in the batch, is a StoreError and
        nothing of the batch is kept.
        """
        ...

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
        """Record a person's decision on the waiting gate (RunStateError if none fits)."""
        ...

    def request_cancel(self, run_id: str) -> None:
        """Ask the process executing the run to stop it."""
        ...

    def save_snapshot(self, run_id: str, seq: int, data: str) -> None:
        """Keep `data` (JSON text: the run's state after its events up to `seq`) as the
        run's snapshot, in place of an older one (one of a later seq stays). StoreError
        when `seq` is past the run's stored events, RunNotFound when there is no such run.
        A snapshot is a cache: it is dropped when the run ends for good (succeeded,
        failed, cancelled)."""
        ...

    def close(self) -> None: ...


class RunReader(Protocol):
    """Runs and what their events left in the store."""

    def get_run(self, run_id: str) -> RunRow:
        """The run with this id, or the one run whose id starts with it (RunNotFound)."""
        ...

    def list_runs(self, limit: int = 50, include_children: bool = True) -> list[RunRow]:
        """Runs, newest first."""
        ...

    def children(self, run_id: str) -> list[RunRow]:
        """The run's sub-pipeline runs, oldest first."""
        ...

    def events(self, run_id: str, after_seq: int = 0, limit: int | None = None) -> list[Event]:
        """The run's events with seq > after_seq, in seq order; the first `limit` of
        them when a limit is given (read a page at a time: the store reads no more)."""
        ...

    def raw_events(self, run_id: str, after_seq: int = 0, limit: int | None = None) -> list[str]:
        """The same events as NDJSON lines (`event_json`: every field, unset ones null)."""
        ...

    def stored_rows(
        self, run_id: str, after_seq: int = 0, limit: int | None = None
    ) -> list[StoredRow]:
        """The same events as they are stored, not parsed (for `events.views`)."""
        ...

    def events_of_kind(self, run_id: str, kinds: Sequence[str]) -> list[Event]:
        """The run's events of these types (`outcome.recorded`, ...), in seq order;
        the others are not read."""
        ...

    def fork_links(self, origin_id: str) -> list[RunForked]:
        """Every run's `run.forked` events that name `origin_id` as their origin (a
        fork of a fork also holds its origin's, copied): the forks of a run whatever
        its own log recorded (ops/lineage.py)."""
        ...

    def load_snapshot(self, run_id: str) -> tuple[int, str] | None:
        """The run's newest snapshot as (seq, data), or None: the run's state is the
        snapshot's followed by its events after that seq."""
        ...

    def visits(self, run_id: str) -> list[VisitRow]:
        """Visits in the order they started."""
        ...

    def steps(self, run_id: str) -> list[StepRow]:
        """Each step the run visited, with its number of visits and its last visit: the
        steps in the order of their first visit (as `visits` lists them), a step's last
        visit the one `visits` lists last. Computed by the backend, not from every visit."""
        ...

    def artifacts(self, run_id: str) -> list[ArtifactRow]: ...

    def context(self, run_id: str) -> dict[str, str]:
        """The run's context values, by key."""
        ...

    def gates(self, run_id: str) -> list[GateRow]:
        """Every gate the run reached, in the order they started waiting."""
        ...

    def pending_decision(self, run_id: str, step_id: str, visit: int) -> GateRow | None:
        """A decision recorded for a gate the run has not acted on yet."""
        ...

    def reviews(self, run_id: str) -> list[ReviewRow]:
        """Agent reviews, in the order they completed."""
        ...

    def cancel_requested(self, run_id: str) -> bool: ...

    def owner(self, run_id: str) -> Owner | None:
        """The process executing the run now (its claim is held), else None: a run that
        reads `running` with no owner was left by a process that ended. A backend
        without the `claims` capability executes no run, so it answers None."""
        ...

    def pipeline_text(self, run_id: str) -> str | None:
        """The pipeline file as it was when the run was created (None: not kept)."""
        ...


class ThreadReader(Protocol):
    """A run's rounds by id, for `swell thread` (ids are the thread's own when one is named)."""

    def round_count(self, run_id: str, thread: str | None) -> int:
        """The highest round id, 0 when there is none."""
        ...

    def rounds_between(
        self, run_id: str, thread: str | None, first: int, last: int
    ) -> list[RoundRow]:
        """Rounds with first <= id <= last (run-wide ids, or the thread's own), in id order."""
        ...


class Capability(StrEnum):
    """What a backend may do beyond `Store`; it lists what it does in `capabilities`."""

    PAGES = "pages"  # `PageSource`: the dashboard's pages by the backend's own queries
    STATS = "stats"  # `StatsReader`: `retro stats` added up by the backend
    OUTPUT = "output"  # `OutputStore`: running visits' output kept for `swell logs`
    CLAIMS = "claims"  # `Claims`: one process executes a run (running, resuming)
    NOTIFY = "notify"  # `Notify`: a follower is woken by the commit, not by polling
    DISPATCH = "dispatch"  # `Dispatch`: a run created with its work item's dispatch key
    BENCH = "bench"  # `BenchSource`: `swell bench` keeps its tasks' records (bench/)


@runtime_checkable
class PageSource(Protocol):
    def pages(self) -> PageReader:
        """The dashboard's pager over this handle, in the backend's own queries."""
        ...


@runtime_checkable
class StatsReader(Protocol):
    def stats_source(self, filt: RunFilter) -> StatsSource:
        """The runs `filt` keeps, their steps and reviews added up, and their events of
        FRICTION_TYPES in seq order (store/stats.py)."""
        ...


@runtime_checkable
class OutputStore(Protocol):
    """Running visits' output (store/output.py): the engine writes it through
    `streaming.OutputSink` (these two writing methods), `swell logs` reads it."""

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        """Keep one visit's chunks, committed when this returns (a (visit, seq) stored
        already is replaced)."""
        ...

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        """Delete the visit's chunks whose seq is in `seqs` (a range)."""
        ...

    def output(
        self,
        run_id: str,
        *,
        after_id: int = 0,
        step_id: str | None = None,
        visit: int | None = None,
        limit: int | None = None,
    ) -> list[OutputChunk]:
        """The run's chunks stored after chunk `after_id` (of one step, one visit), in
        the order they were stored; the first `limit` of them when one is given."""
        ...


@runtime_checkable
class Claims(Protocol):
    def claim(self, run_id: str) -> None:
        """Make this process the only one executing the run, atomically: RunBusy (naming
        the holder's pid and host) when another process holds it. Held until `release`
        or until the process ends, however it ends (a crash frees the run at once)."""
        ...

    def release(self, run_id: str) -> None:
        """This process no longer executes the run."""
        ...


@runtime_checkable
class Notify(Protocol):
    def wait_for_events(self, run_id: str, after_seq: int, timeout: float) -> bool:
        """Block until the run has an event after `after_seq` (True) or `timeout` seconds
        pass (False), woken by the commit that stores it (Postgres: LISTEN/NOTIFY)."""
        ...

    def commit_listener(self) -> CommitFeed:
        """A feed of every commit's run id, for a process that follows many runs."""
        ...


class CommitFeed(Protocol):
    """Run ids as their commits land (store/postgres/listen.py)."""

    def start(self, on_commit: Callable[[str], None]) -> None:
        """Call `on_commit(run_id)`, from a thread of the feed's, for each commit."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Dispatch(Protocol):
    """Exactly-once dispatch (store/dispatch.py): a work item's key and its run are
    committed together, and a key is recorded once (a unique constraint)."""

    def create_dispatched_run(self, key: DispatchKey, **run: Any) -> bool:
        """`create_run(**run)` and record `key` for it in one transaction; False, and
        nothing created, when `key` is recorded already."""
        ...

    def dispatched(self, source: str, pipeline: str | None = None) -> list[Dispatched]:
        """The keys recorded for `source` (and `pipeline`), oldest first."""
        ...

    def dispatch_summary(self) -> list[SourceSummary]:
        """Per source: items dispatched, runs still pending, the oldest of those."""
        ...


@runtime_checkable
class BenchRecords(Protocol):
    """A bench's records (bench/records.py): one JSON text per key, the last put kept."""

    def put(self, bench_id: str, key: str, data: str) -> None:
        """Keep `data` under (bench, key), committed when this returns."""
        ...

    def records(self, bench_id: str | None = None) -> list[tuple[str, str, str]]:
        """(bench, key, data) of one bench (None: every bench), in the order first put."""
        ...


@runtime_checkable
class BenchSource(Protocol):
    def bench_records(self) -> BenchRecords:
        """The records `swell bench` keeps in this store."""
        ...


class Store(RunWriter, RunReader, ThreadReader, Protocol):
    """What every store backend provides."""

    # which database this handle is on, safe to write down (never a password):
    # `sqlite:///abs/state.db`, `postgresql://HOST:PORT/DB schema S`, `memory:ID`. A run's
    # workspace records it (workspace/owner.py), so `swell clean` removes only its own.
    identity: str
    # what it does beyond this protocol (store/capabilities.py asks for each)
    capabilities: frozenset[Capability]


# each capability's protocol: a backend that declares one implements it
PROTOCOLS: dict[Capability, type] = {
    Capability.PAGES: PageSource,
    Capability.STATS: StatsReader,
    Capability.OUTPUT: OutputStore,
    Capability.CLAIMS: Claims,
    Capability.NOTIFY: Notify,
    Capability.DISPATCH: Dispatch,
    Capability.BENCH: BenchSource,
}
