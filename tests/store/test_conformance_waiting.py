"""The conformance suite, continued (every backend): waiting for a run's next events
(`wait_for_events`, what `swell logs --follow` sleeps on)."""

from __future__ import annotations

import threading
import time

from swell.events import models as ev
from swell.store.capabilities import wait_for_events
from swell.store.protocols import Store

from .conftest import Backend, NewRun, Writer, started


def test_waiting_returns_at_once_when_events_are_there(store: Store, new_run: NewRun) -> None:
    started(new_run("r1"))  # seq 1 and 2
    assert wait_for_events(store, "r1", 1, timeout=5) is True
    begun = time.monotonic()
    assert wait_for_events(store, "r1", 2, timeout=0.2) is False
    assert wait_for_events(store, "missing", 0, timeout=0) is False
    assert 0.2 <= time.monotonic() - begun < 2


def test_events_through_another_handle_end_the_wait(backend: Backend, new_run: NewRun) -> None:
    new_run("r1")
    writer, follower = backend.open(), backend.open()
    wait_for_events(follower, "r1", 0, timeout=0)  # ready (Postgres: listening)

    def write_later() -> None:
        time.sleep(0.3)
        Writer(writer, "r1").emit(ev.RunStarted(pipeline="build"))

    thread = threading.Thread(target=write_later)
    begun = time.monotonic()
    thread.start()
    try:
        assert wait_for_events(follower, "r1", 0, timeout=10) is True
    finally:
        thread.join()
    assert 0.25 <= time.monotonic() - begun < 5
