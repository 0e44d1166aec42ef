"""The engine's own scenarios again, resumed from run state snapshots.

`swell resume` starts from the run's newest snapshot and replays only the events after
it. Here every resume the harness does starts that way (from a snapshot taken two
thirds into the stored events), and every run the harness checks must also equal, at
every event, a snapshot there followed by the rest. The scenarios are the engine
tests' own (imported below, so they run a second time in this module): crashes at
every batch boundary, crashes inside a child run, Ctrl-C, gates that wait across
resumes, retries, rework with a reviewer's feedback, the breaker, context routing.
"""

from __future__ import annotations

import json

import pytest
from harness import Harness, Result, h_fixture  # noqa: F401 - the fixture `h`
from test_child_runs import (  # noqa: F401 - collected again here
    test_a_crash_inside_a_child_then_resume_continues_that_child,
)
from test_contract_policies import (  # noqa: F401
    test_retry_runs_the_step_again_until_the_contract_passes,
    test_rework_gets_the_reviewers_feedback_then_the_contracts_run_again,
)
from test_crashes_and_stops import (  # noqa: F401
    test_a_crash_at_every_batch_boundary_then_resume_loses_and_repeats_nothing,
    test_a_run_that_crashes_again_and_again_still_finishes_the_same,
    test_ctrl_c_interrupts_the_running_visits_and_resume_runs_them_again,
)
from test_gate_decisions import (  # noqa: F401
    test_a_choice_routes_back_and_the_gate_waits_again,
    test_a_waiting_gate_stays_open_when_the_run_stops_and_resume_picks_it_up,
)
from test_loops import (  # noqa: F401
    test_breaker_trips_on_the_same_normalized_error,
    test_context_from_json_stdout_routes,
)

from swell.engine.loop.state import RunState
from swell.events import models as ev


def from_snapshot(run_id: str, events: list[ev.BaseEvent], at: int) -> RunState:
    """The state a resume builds from a snapshot after `at` events, then the rest."""
    snapshot = json.dumps(RunState.replay(run_id, events[:at]).to_snapshot())
    state = RunState.from_snapshot(json.loads(snapshot))
    for event in events[at:]:
        state.apply(event)
    return state


@pytest.fixture(autouse=True)
def resume_from_snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    check = Harness.check_replay

    def check_replay(self: Harness) -> None:
        check(self)
        for run_id, driven in self.runs.items():
            if driven.crashed:
                continue
            events = self.sink.of(run_id)
            for at in range(len(events) + 1):
                assert from_snapshot(run_id, events, at) == driven.runner.state, (run_id, at)

    def resume(self: Harness, run_id: str, *, crash_after: int | None = None) -> Result:
        self.sink.dead = False
        events = self.sink.of(run_id)
        state = from_snapshot(run_id, events, len(events) * 2 // 3)
        return self._drive(self.start(self.runs[run_id].plan, state), crash_after)

    monkeypatch.setattr(Harness, "check_replay", check_replay)
    monkeypatch.setattr(Harness, "resume", resume)
