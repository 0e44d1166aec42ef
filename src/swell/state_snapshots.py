"""Snapshots of a run's state, written as its events are stored, so a resume replays
only the events after the last one."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_core import to_jsonable_python

from swell.engine.loop.state import RunState
from swell.errors import RunNotFound, StoreError
from swell.events import models as ev
from swell.events.statuses import ENDED_FOR_GOOD as FINAL
from swell.store.protocols import RunWriter

SNAPSHOT_EVERY = 1000  # a run's events between two snapshots of its state, at least
SNAPSHOT_BYTES_PER_EVENT = 256  # and one event more per this many bytes of the last one


def _snapshot_every() -> int:
    """SNAPSHOT_EVERY, or $SWELL_SNAPSHOT_EVERY (tests write snapshots often with it)."""
    value = os.environ.get("SWELL_SNAPSHOT_EVERY", "")
    return int(value) if value.isdigit() and int(value) > 0 else SNAPSHOT_EVERY


@dataclass
class _Watched:
    state: RunState
    since: int  # events since the last snapshot
    every: int  # events between snapshots, for the size of the last one


class StateSnapshots:
    """An observer after the store on the event bus: every so many events of a run this
    process executes, it writes the runner's state down (`RunState.to_snapshot`) in the
    store, so `swell resume` starts from it and replays only the events after it.

    The store has committed the batch before this sees it, and a snapshot is taken only
    when the state is exactly the fold of the run's events up to the batch's last. A
    snapshot is a cache: one that cannot be written is skipped (resume replays more).
    Writing one costs about its size, so a larger state is written less often: the
    cost per event stays flat, and so does the number of events a resume replays.
    """

    def __init__(self, store: RunWriter, every: int | None = None) -> None:
        self.store = store
        self.every = every or _snapshot_every()
        self._runs: dict[str, _Watched] = {}

    def watch(self, run_id: str, state: RunState, *, resumed: bool = False) -> None:
        """Write snapshots of `state`, the live state of run `run_id`. A resumed run is
        written down at its first batch: its replay is then no longer than it was."""
        self._runs[run_id] = _Watched(state, state.seq if resumed else 0, self.every)

    def forget(self, run_id: str) -> None:
        self._runs.pop(run_id, None)

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        last: dict[str, int] = {}
        for event in events:
            watched = self._runs.get(event.run_id)
            if watched is not None:
                watched.since += 1
                last[event.run_id] = event.seq
        for run_id, seq in last.items():
            watched = self._runs[run_id]
            state = watched.state
            if watched.since < watched.every or state.seq != seq or state.status in FINAL:
                continue
            data = json.dumps(
                state.to_snapshot(), separators=(",", ":"), default=to_jsonable_python
            )
            try:
                self.store.save_snapshot(run_id, seq, data)
            except (StoreError, RunNotFound):
                continue
            watched.since = 0
            watched.every = max(self.every, len(data) // SNAPSHOT_BYTES_PER_EVENT)
