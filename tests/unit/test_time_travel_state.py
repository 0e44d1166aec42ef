"""Issue 33: after a fork or a rewind, no agent's own session of an earlier round is
resumed natively (it went on past that point in the origin or in abandoned visits):
the thread's transcript is replayed instead. And a rewind's abandoned events are left
out of the replayed state."""

from __future__ import annotations

from swell.engine.loop.state import RunState
from swell.events import models as ev
from swell.events.codec import stamp
from swell.ops.timetravel import replay_events


def _round(n: int) -> ev.RoundRecorded:
    meta = {"adapter": "claude", "session_id": f"s-{n}", "session_host": None}
    return ev.RoundRecorded(
        round=n, role="dev", content=f"turn {n}", thread="t", thread_round=n, metadata=meta
    )


def test_a_fork_or_rewind_stops_native_session_resume() -> None:
    for moved in (
        ev.RunForked(origin_run_id="o", at_step="a", at_visit=1),
        ev.RunRewound(at_step="a", at_visit=1, kept_seq=1),
    ):
        events: list[ev.BaseEvent] = [_round(1)]
        stamp(events, "r", 0)
        before = RunState.replay("r", events)
        assert before.threads["t"][0].metadata["session_host"] is None
        after = [*events, moved, _round(2)]
        stamp(after[1:], "r", 1)
        state = RunState.replay("r", after)
        first, second = state.threads["t"]
        assert first.metadata["session_host"] == "moved on (fork or rewind)"
        assert second.metadata["session_host"] is None  # a round after it resumes as ever


def test_a_rewinds_abandoned_events_are_not_replayed() -> None:
    events: list[ev.BaseEvent] = [_round(1), _round(2), _round(3)]
    events.append(ev.RunRewound(at_step="a", at_visit=1, kept_seq=1))
    events.append(_round(2))
    stamp(events, "r", 0)
    kept = replay_events(events)
    assert [e.seq for e in kept] == [1, 4, 5]
    state = RunState.replay("r", kept)
    assert [e.content for e in state.threads["t"]] == ["turn 1", "turn 2"]
    assert state.seq == 5
