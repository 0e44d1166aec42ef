"""Stamping events: the envelope (run id, sequence number, time) a run's writer gives
every event before it is stored. One place, for the run loop, the Temporal workflow
and the few commands that write a run's events themselves."""

from __future__ import annotations

from collections.abc import Sequence

from swell.events.models import BaseEvent, now_iso

_STAMPED = ("run_id", "seq", "ts")


def stamp(events: Sequence[BaseEvent], run_id: str, after: int, ts: str | None = None) -> int:
    """Give `events` the run id, the sequence numbers after `after` and the time `ts`
    (now when None); returns the last number given."""
    ts = ts or now_iso()
    seq = after
    for event in events:
        seq += 1
        # the stamp is swell's own (no validation to run): set it directly, and mark it
        # set as an assignment would (a pydantic assignment costs several times more,
        # and a loop of short visits stamps thousands of events)
        event.__dict__.update(run_id=run_id, seq=seq, ts=ts)
        event.__pydantic_fields_set__.update(_STAMPED)
    return seq
