"""Asking a store for a capability (`protocols.Capability`) it may not have.

A backend lists what it does beyond `Store` in its `capabilities`; every caller goes
through these functions, never through the backend's type. Each gives the backend's
own implementation when it declares the capability, else a fallback computed from the
required methods (pages, stats, notify), nothing kept (output), or one `StoreError`
saying what the store cannot do (claims: running a run needs them).
`tests/store/test_capabilities.py` checks that a backend implements what it declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from swell.errors import StoreError
from swell.store.protocols import (
    BenchRecords,
    BenchSource,
    Capability,
    Claims,
    Dispatch,
    Notify,
    OutputStore,
    PageSource,
    StatsReader,
    Store,
)

if TYPE_CHECKING:
    from swell.store.pages import PageReader, RunFilter
    from swell.store.stats import StatsSource
    from swell.streaming import OutputChunk


def page_reader(store: Store) -> PageReader:
    """The dashboard's pager: the backend's own queries, or pages computed from the
    `RunReader` methods (which read everything: fine for the memory store)."""
    if Capability.PAGES in store.capabilities and isinstance(store, PageSource):
        return store.pages()
    from swell.store.pages import ReaderPages

    return ReaderPages(store)


def stats_source(store: Store, filt: RunFilter) -> StatsSource:
    """What `retro stats` reads: added up by the backend, or from its `RunReader`."""
    if Capability.STATS in store.capabilities and isinstance(store, StatsReader):
        return store.stats_source(filt)
    from swell.store.stats import reader_stats

    return reader_stats(store, filt)


def output_store(store: Store) -> OutputStore:
    """Where running visits' output is kept: the backend, or nowhere (`swell logs`
    then shows a visit's output once it has finished, from its events)."""
    if Capability.OUTPUT in store.capabilities and isinstance(store, OutputStore):
        return store
    return NO_OUTPUT


def claims(store: Store) -> Claims:
    """The store's claims on runs; StoreError when it has none, since running or
    resuming a run must be sure no other process executes it."""
    if Capability.CLAIMS in store.capabilities and isinstance(store, Claims):
        return store
    raise StoreError(
        f"the store {store.identity} cannot claim a run for one process, "
        "so it can show runs but not run or resume them"
    )


def dispatch(store: Store) -> Dispatch:
    """The store's dispatch keys; StoreError when it keeps none, since a dispatcher
    without them could start a work item twice."""
    if Capability.DISPATCH in store.capabilities and isinstance(store, Dispatch):
        return store
    raise StoreError(
        f"the store {store.identity} keeps no dispatch keys, so it cannot dispatch work "
        "items exactly once"
    )


def wait_for_events(store: Store, run_id: str, after_seq: int, timeout: float) -> bool:
    """Block until the run has an event after `after_seq` (True) or `timeout` seconds
    pass (False): woken by the commit where the backend can, else by polling."""
    if Capability.NOTIFY in store.capabilities and isinstance(store, Notify):
        return store.wait_for_events(run_id, after_seq, timeout)
    from swell.store.waiting import poll_for_events

    return poll_for_events(store, run_id, after_seq, timeout)


def bench_records(store: Store) -> BenchRecords:
    """Where `swell bench` keeps its records; StoreError when the store keeps none."""
    if Capability.BENCH in store.capabilities and isinstance(store, BenchSource):
        return store.bench_records()
    raise StoreError(f"the store {store.identity} cannot keep benches (use the SQLite store)")


class _NoOutput:
    """Output of a store that keeps none: written chunks are dropped, none are read."""

    def write_output(self, chunks: Sequence[OutputChunk]) -> None:
        pass

    def drop_output(self, run_id: str, step_id: str, visit: int, seqs: range) -> None:
        pass

    def output(self, run_id: str, **where: Any) -> list[OutputChunk]:
        return []


NO_OUTPUT = _NoOutput()
