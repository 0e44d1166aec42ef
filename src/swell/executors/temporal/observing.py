"""Hooks and traces of runs on the Temporal engine: the worker that stores a batch of
a run's events (the `record` activity) hands the new ones to the run's observers
(swell/notify), as the local executor's bus does. Each event is stored once, so each
notification goes out once, from whichever worker stored it. A sub-pipeline run's
events go to its top run's observers (which hear its gates, and parent its spans)."""

from __future__ import annotations

import sys
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

from swell.events import models as ev
from swell.events.bus import EventSink
from swell.store.protocols import RunReader

RUNS_KEPT = 256  # top runs whose observers a worker keeps


class EngineObservers:
    """A worker's observers, by top run."""

    def __init__(self) -> None:
        self.tops: OrderedDict[str, list[EventSink]] = OrderedDict()
        self.top_of: dict[str, str] = {}

    def emit(self, store: RunReader, run_id: str, events: Sequence[ev.BaseEvent]) -> None:
        try:
            top = self._top(store, run_id)
            for sink in self._sinks(store, top):
                sink.emit(events)
        except Exception as exc:  # notifications never fail the recording of events
            print(f"warning: hooks of run {run_id}: {exc}", file=sys.stderr)
            return
        if any(isinstance(e, ev.RunFinished) and e.run_id == top for e in events):
            self.tops.pop(top, None)

    def _top(self, store: RunReader, run_id: str) -> str:
        if run_id not in self.top_of:
            run = store.get_run(run_id)
            self.top_of[run_id] = (
                self._top(store, run.parent_run_id) if run.parent_run_id else run.id
            )
        return self.top_of[run_id]

    def _sinks(self, store: RunReader, top: str) -> list[EventSink]:
        if top not in self.tops:
            self.tops[top] = _observers_of(store, top)
            while len(self.tops) > RUNS_KEPT:
                self.tops.popitem(last=False)
        self.tops.move_to_end(top)
        return self.tops[top]


def _observers_of(store: RunReader, run_id: str) -> list[EventSink]:
    from swell.manifest.loader import load_project, load_stored_pipeline
    from swell.notify import observers
    from swell.store.location import state_dir_for

    run = store.get_run(run_id)
    text = store.pipeline_text(run_id)
    if not run.project_root or not run.pipeline_path or text is None:
        return []
    project = load_project(Path(run.project_root))
    loaded = load_stored_pipeline(Path(run.pipeline_path), text)
    workspace = run.workspace or ""
    return observers(project, loaded, run.id, workspace, state_dir_for(project.root), store)
