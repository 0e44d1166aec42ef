"""Fixtures of the store conformance suite: every test runs once per backend.

A backend is a way to open handles (connections) on one fresh database; adding one
is one entry in BACKENDS. Postgres's database is a fresh schema of the session's server
(tests/postgres_server.py): skipped when Postgres is not installed, a failure then
with SWELL_REQUIRE_POSTGRES=1. "plugin" is the store backend of tests/plugins/site
(`scratch:NAME`), found through its entry point as a user's installed plugin would be.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import pytest

from swell.events import models as ev
from swell.events.models import BaseEvent
from swell.store.location import backends, open_store
from swell.store.memory import MemoryDatabase, MemoryStore
from swell.store.protocols import Capability, Store

Opener = Callable[[], Store]
PLUGINS = Path(__file__).parents[1] / "plugins" / "site"


def _memory(request: pytest.FixtureRequest, tmp: Path) -> Opener:
    database = MemoryDatabase()
    return lambda: MemoryStore(database)


def _plugin(request: pytest.FixtureRequest, tmp: Path) -> Opener:
    # on the path for this test only, as pip would install the plugin (its entry points
    # too): on it for the whole session, its step kind would join every registry
    request.getfixturevalue("monkeypatch").syspath_prepend(str(PLUGINS))
    backends.cache_clear()  # scanned again, with the plugin, and again after the test
    request.addfinalizer(backends.cache_clear)
    return lambda: open_store(f"scratch:{tmp}")


def _postgres(request: pytest.FixtureRequest, tmp: Path) -> Opener:
    url = request.getfixturevalue("postgres_server").fresh_schema()
    return lambda: open_store(url)


# backend name -> for a test (its request and tmp_path), how to open a handle on its
# fresh database
BACKENDS: dict[str, Callable[[pytest.FixtureRequest, Path], Opener]] = {
    "sqlite": lambda request, tmp: lambda: open_store(f"sqlite://{tmp / 'state.db'}"),
    "memory": _memory,
    "postgres": _postgres,
    "plugin": _plugin,
}


def needs(store: Store, capability: Capability) -> None:
    """Skip a test of an optional capability on a backend that does not declare it
    (tests/store/test_capabilities.py checks what each declares)."""
    if capability not in store.capabilities:
        pytest.skip(f"{store.identity} does not declare {capability}")


@dataclass
class Backend:
    """One database of one backend; each `open()` is another handle (connection) on it."""

    name: str
    opener: Opener
    handles: list[Store] = field(default_factory=list)

    def open(self) -> Store:
        handle = self.opener()
        self.handles.append(handle)
        return handle


@pytest.fixture(params=list(BACKENDS))
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    database = Backend(request.param, BACKENDS[request.param](request, tmp_path))
    yield database
    for handle in database.handles:
        handle.close()


@pytest.fixture
def store(backend: Backend) -> Store:
    return backend.open()


_EPOCH = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
_ticks = itertools.count(1)


def tick() -> str:
    """A timestamp later than every one before it, in the events' format."""
    stamp = _EPOCH + timedelta(milliseconds=next(_ticks))
    return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stamp(run_id: str, seq: int, event: BaseEvent, ts: str | None = None) -> BaseEvent:
    event.run_id, event.seq, event.ts = run_id, seq, ts or tick()
    return event


@dataclass
class Writer:
    """Writes one run's events as the run loop does: seq in order, stamped, in batches."""

    store: Store
    run_id: str
    seq: int = 0

    def emit(self, *events: BaseEvent, ts: str | None = None) -> list[BaseEvent]:
        """One batch; `ts` gives every event of it the same time."""
        for event in events:
            self.seq += 1
            stamp(self.run_id, self.seq, event, ts)
        self.store.emit(list(events))
        return list(events)


class NewRun(Protocol):
    def __call__(self, run_id: str, **fields: Any) -> Writer: ...


@pytest.fixture
def new_run(store: Store) -> NewRun:
    """Creates a run in `store` and returns a writer for its events."""

    def create(run_id: str, **fields: Any) -> Writer:
        fields = {"pipeline": "build", "input_text": "", "workspace": "/ws", **fields}
        store.create_run(run_id=run_id, **fields)
        return Writer(store, run_id)

    return create


# ------------------------------------------------------------ test helpers

CHOICES = [
    ev.GateChoiceInfo(key="ship", label="Ship it", target="deploy"),
    ev.GateChoiceInfo(key="rework", label="Rework", target="implement"),
]
CHOICE_DICTS = [
    {"key": "ship", "label": "Ship it", "target": "deploy"},
    {"key": "rework", "label": "Rework", "target": "implement"},
]
ISSUE = {"severity": "major", "file": "src/app.py", "line": 12, "detail": "no error handling"}


def cols(row: Any, names: str) -> tuple[Any, ...]:
    """The row's values of the fields named (space-separated)."""
    return tuple(getattr(row, name) for name in names.split())


def started(w: Writer) -> ev.BaseEvent:
    return w.emit(
        ev.RunStarted(pipeline="build", input="add a greeting", workspace="/ws"),
        ev.StepQueued(step_id="implement", reason="entry"),
    )[0]


def wait_at(w: Writer, step: str = "approve", visit: int = 1, **gate: Any) -> None:
    """A gate step starts waiting, and with it the run."""
    w.emit(
        ev.StepStarted(step_id=step, visit=visit, kind="gate"),
        ev.GateWaiting(step_id=step, visit=visit, gate_type="approval", message=f"{step}?", **gate),
        ev.RunWaiting(gates=[step]),
    )


def a_round(
    n: int, thread: str | None = None, thread_round: int | None = None, **fields: Any
) -> ev.RoundRecorded:
    fields = {
        "step_id": "implement",
        "visit": n,
        "role": "implement",
        "content": f"round {n}",
        "metadata": {"outcome": "success"},
        **fields,
    }
    return ev.RoundRecorded(round=n, thread=thread, thread_round=thread_round, **fields)
