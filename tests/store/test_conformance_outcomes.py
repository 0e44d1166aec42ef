"""The conformance suite, continued (every backend): reading a run's events of some
kinds only (`events_of_kind`), which `swell status` uses for a run's outcomes."""

from __future__ import annotations

from swell.events import models as ev
from swell.store.protocols import Store

from .conftest import NewRun


def test_only_the_asked_kinds_come_back_in_seq_order(store: Store, new_run: NewRun) -> None:
    w, other = new_run("r1"), new_run("r2")
    w.emit(
        ev.StepStarted(step_id="pr", visit=1, kind="prompt"),
        ev.OutcomeRecorded(step_id="pr", visit=1, kind="pr", label="pr", value="https://x/1"),
        ev.Warning(step_id="pr", visit=1, message="outcome: no items"),
    )
    w.emit(ev.OutcomeRecorded(step_id="pr", visit=2, kind="url", label="u (1/1)", value="v"))
    other.emit(ev.OutcomeRecorded(kind="file", label="file", value="/tmp/f"))
    got = store.events_of_kind("r1", ["outcome.recorded"])
    assert [(e.type, e.step_id, e.visit, e.seq) for e in got] == [
        ("outcome.recorded", "pr", 1, 2),
        ("outcome.recorded", "pr", 2, 4),
    ]
    first = got[0]
    assert isinstance(first, ev.OutcomeRecorded) and first.value == "https://x/1" and first.ts
    both = store.events_of_kind("r1", ["outcome.recorded", "warning"])
    assert [e.seq for e in both] == [2, 3, 4]
    assert store.events_of_kind("missing", ["outcome.recorded"]) == []
