"""What a backend does beyond `Store` (protocols.Capability): each declares its
capabilities, implements the protocol of each one it declares, and a caller asking a
store for one it lacks gets the fallback or one clear error (store/capabilities.py)."""

from __future__ import annotations

import inspect

import pytest

from swell.errors import StoreError
from swell.events import models as ev
from swell.store.capabilities import claims, output_store, page_reader, stats_source
from swell.store.memory import MemoryStore
from swell.store.pages import RunFilter
from swell.store.protocols import PROTOCOLS, Capability, Store
from swell.streaming import OutputChunk

from .conftest import Backend

# what each backend of tests/store/conftest.py:BACKENDS declares; a new backend adds a row
DECLARED = {
    "sqlite": {
        Capability.PAGES,
        Capability.STATS,
        Capability.OUTPUT,
        Capability.CLAIMS,
        Capability.DISPATCH,
        Capability.BENCH,
    },
    "memory": {Capability.OUTPUT, Capability.CLAIMS, Capability.DISPATCH},
    "postgres": set(Capability) - {Capability.BENCH},
    "plugin": {Capability.OUTPUT, Capability.CLAIMS, Capability.DISPATCH},
}


def test_a_backend_declares_its_capabilities(backend: Backend) -> None:
    assert backend.open().capabilities == DECLARED[backend.name]


def test_a_backend_implements_each_capability_it_declares(store: Store) -> None:
    for capability in store.capabilities:
        protocol = PROTOCOLS[capability]
        assert isinstance(store, protocol), capability
        for name in _methods(protocol):
            assert callable(getattr(store, name)), f"{capability}: {name}"


def test_a_backend_declares_each_capability_it_implements(store: Store) -> None:
    """A method of a capability it did not declare would never be called: callers ask
    `capabilities`, not the type."""
    for capability, protocol in PROTOCOLS.items():
        if capability not in store.capabilities:
            assert not any(hasattr(store, name) for name in _methods(protocol)), capability


class ShowOnly(MemoryStore):
    """A backend that declares nothing beyond `Store` (as a plugin's read-only one might)."""

    capabilities: frozenset[Capability] = frozenset()


def test_a_store_without_claims_cannot_run_runs() -> None:
    store = ShowOnly()
    with pytest.raises(StoreError) as err:
        claims(store)
    assert str(err.value) == (
        f"the store {store.identity} cannot claim a run for one process, "
        "so it can show runs but not run or resume them"
    )


def test_without_output_running_visits_output_is_not_kept() -> None:
    store = ShowOnly()
    kept = output_store(store)
    kept.write_output([OutputChunk("r1", "build", 1, "stdout", 1, "2026-11-24T10:00:00.000Z", "x")])
    assert kept.output("r1") == []


def test_pages_and_stats_are_computed_where_a_backend_has_none() -> None:
    store = ShowOnly()
    store.create_run(run_id="r1", pipeline="build", input_text="", workspace="/ws")
    store.emit([ev.RunStarted(run_id="r1", seq=1, ts="2026-11-24T10:00:00.000Z", pipeline="build")])
    page = page_reader(store).runs_page(RunFilter(), 0, 10)
    assert [r.id for r in page.runs] == ["r1"] and page.total == 1
    assert [r.id for r in stats_source(store, RunFilter()).runs] == ["r1"]


def _methods(protocol: type) -> list[str]:
    return [n for n, _ in inspect.getmembers(protocol, inspect.isfunction) if not n.startswith("_")]
