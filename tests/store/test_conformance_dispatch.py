"""Exactly-once dispatch on every backend (store/dispatch.py): a work item's key is
committed with its run, once; handles racing for one item create one run between them."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from swell.errors import StoreError
from swell.events import models as ev
from swell.events.codec import stamp
from swell.store.capabilities import claims, dispatch
from swell.store.dispatch import AlreadyDispatched, DispatchKey, SourceSummary, record_run
from swell.store.memory import MemoryStore
from swell.store.protocols import Capability, Store

from .conftest import Backend, needs

KEY = DispatchKey("file:queue.jsonl", "item-1", "build")


def _run(run_id: str) -> dict[str, Any]:
    return {"run_id": run_id, "pipeline": "build", "input_text": "{}", "workspace": "/ws"}


def test_a_dispatched_run_is_stored_with_its_key(store: Store) -> None:
    needs(store, Capability.DISPATCH)
    record_run(store, KEY, **_run("r1"))
    assert store.get_run("r1").status == "pending"
    [row] = dispatch(store).dispatched("file:queue.jsonl")
    assert (row.source, row.item, row.pipeline, row.run_id) == (
        "file:queue.jsonl",
        "item-1",
        "build",
        "r1",
    )


def test_a_key_dispatched_twice_creates_nothing_the_second_time(store: Store) -> None:
    needs(store, Capability.DISPATCH)
    record_run(store, KEY, **_run("r1"))
    with pytest.raises(AlreadyDispatched, match="item-1 -> build was dispatched already"):
        record_run(store, KEY, **_run("r2"))
    assert [r.id for r in store.list_runs()] == ["r1"]


def test_the_same_item_for_another_pipeline_is_another_key(store: Store) -> None:
    needs(store, Capability.DISPATCH)
    record_run(store, KEY, **_run("r1"))
    record_run(store, DispatchKey(KEY.source, KEY.item, "audit"), **_run("r2"))
    assert [d.run_id for d in dispatch(store).dispatched(KEY.source, "audit")] == ["r2"]
    assert len(dispatch(store).dispatched(KEY.source)) == 2
    assert dispatch(store).dispatched("file:other.jsonl") == []


def test_the_summary_counts_items_and_runs_not_started_per_source(store: Store) -> None:
    """/metrics' queue depth and dispatch lag: per source, the dispatched items, the
    runs of them still pending, and when the oldest of those was recorded."""
    needs(store, Capability.DISPATCH)
    assert dispatch(store).dispatch_summary() == []
    record_run(store, KEY, **_run("r1"))
    record_run(store, DispatchKey(KEY.source, "item-2", "build"), **_run("r2"))
    record_run(store, DispatchKey("webhook:github", "d-1", "build"), **_run("r3"))
    claims(store).claim("r2")
    started = [ev.RunStarted(pipeline="build", input="{}")]
    stamp(started, "r2", 0)
    store.emit(started)
    claims(store).release("r2")
    queue, hooks = dispatch(store).dispatch_summary()
    first = dispatch(store).dispatched(KEY.source)[0].created_at
    assert queue == SourceSummary(KEY.source, 2, 1, first)
    assert (hooks.source, hooks.dispatched, hooks.waiting) == ("webhook:github", 1, 1)


def test_a_run_that_cannot_be_created_leaves_its_key_unrecorded(store: Store) -> None:
    """The key and the run are one transaction: a failing run insert keeps no key."""
    needs(store, Capability.DISPATCH)
    store.create_run(**_run("r1"))
    with pytest.raises(StoreError, match="already exists"):
        record_run(store, KEY, **_run("r1"))
    assert dispatch(store).dispatched(KEY.source) == []
    record_run(store, KEY, **_run("r2"))  # the item is still to dispatch
    assert dispatch(store).dispatched(KEY.source)[0].run_id == "r2"


def test_handles_racing_for_the_same_items_share_them_without_overlap(backend: Backend) -> None:
    first = backend.open()
    needs(first, Capability.DISPATCH)
    handles = [first, backend.open(), backend.open()]
    won: list[list[str]] = [[] for _ in handles]
    start = threading.Barrier(len(handles))

    def dispatcher(n: int) -> None:
        start.wait()
        for i in range(40):
            try:
                record_run(handles[n], DispatchKey("q", f"item-{i}", "build"), **_run(f"r{n}-{i}"))
                won[n].append(f"item-{i}")
            except AlreadyDispatched:
                pass

    threads = [threading.Thread(target=dispatcher, args=(n,)) for n in range(len(handles))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    items = [item for w in won for item in w]
    assert sorted(items) == sorted(f"item-{i}" for i in range(40))  # each once, none lost
    assert len(first.list_runs(limit=1000)) == 40
    assert len(dispatch(first).dispatched("q")) == 40


class NoDispatch(MemoryStore):
    capabilities: frozenset[Capability] = frozenset({Capability.CLAIMS})


def test_a_store_without_dispatch_keys_refuses_to_dispatch() -> None:
    store = NoDispatch()
    with pytest.raises(StoreError, match="keeps no dispatch keys"):
        record_run(store, KEY, **_run("r1"))
    assert store.list_runs() == []
