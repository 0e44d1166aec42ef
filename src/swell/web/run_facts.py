"""What the graph and the timeline need from a run's events, read once and kept.

The routes, gate choices and reworks a run took (the graph's highlighted path) and the
visits that were retries or reworks (the timeline's flags) are in its events, which a
10,000-visit run has 40,000 of. They are read once per run (only the four event types
concerned) and kept with the seq read up to; a later page of the same run reads only
the events stored since, so following a live run costs what it added."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from swell.store.protocols import Store

KINDS = ("route.taken", "gate.resolved", "rework.requested", "retry.requested")
RUNS_KEPT = 64


@dataclass
class Facts:
    seq: int = 0  # the events up to this seq are in
    taken: set[tuple[str, str]] = field(default_factory=set)  # (step, target)
    marks: dict[tuple[str, int], str] = field(default_factory=dict)  # visit -> retry/rework
    reworks: dict[str, int] = field(default_factory=dict)  # rework step -> reworks so far

    def add(self, e: dict[str, Any]) -> None:
        kind, step = e.get("type"), e.get("step_id") or ""
        if kind == "retry.requested":
            self.marks[(step, int(e.get("visit") or 0) + 1)] = "retry"
        elif kind == "rework.requested":
            self.reworks[step] = self.reworks.get(step, 0) + 1
            self.marks[(step, self.reworks[step])] = "rework"
            if e.get("for_step"):
                self.taken.add((str(e["for_step"]), step))
        elif e.get("target"):
            self.taken.add((step, str(e["target"])))


@dataclass
class FactsCache:
    runs: OrderedDict[str, Facts] = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, store: Store, run_id: str, upto: int | None = None) -> Facts:
        """The run's facts up to now (`upto`: the run's last seq, when the caller has
        read it): all read the first time, then only what is new."""
        if upto is None:
            upto = store.get_run(run_id).last_seq
        with self.lock:
            found = self.runs.get(run_id)
            if found is not None:
                self.runs.move_to_end(run_id)
        if found is None:
            found = Facts(seq=upto)
            for event in store.events_of_kind(run_id, KINDS):
                found.add(event.model_dump())
                found.seq = max(found.seq, event.seq)  # never read one twice
        elif found.seq < upto:
            lines = store.raw_events(run_id, found.seq)
            for line in lines:
                if any(kind in line for kind in KINDS):
                    found.add(json.loads(line))
            if lines:
                found.seq = max(found.seq, int(json.loads(lines[-1])["seq"]))
        with self.lock:
            self.runs[run_id] = found
            while len(self.runs) > RUNS_KEPT:
                self.runs.popitem(last=False)
        return found
