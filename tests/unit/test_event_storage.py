"""Events as a store keeps them: `event_data` (no envelope, no defaults) next to the
envelope columns, read back by `stored_event` as the same event, for every kind."""

from __future__ import annotations

import json

import pytest

from event_samples import ENVELOPE_FIELDS, bare, full, kinds, samples, stored_row
from swell.events import models as ev


def _stored(event: ev.BaseEvent, data: str | None = None) -> ev.Event:
    return stored_row(event, data).event(event.run_id)


def test_the_samples_cover_every_kind_of_the_union() -> None:
    assert len(kinds()) == len(ev.Event.__origin__.__args__)  # type: ignore[attr-defined]
    assert {type(e) for e in samples()} == set(kinds())


@pytest.mark.parametrize("kind", kinds(), ids=lambda k: k.model_fields["type"].default)
@pytest.mark.parametrize("make", [bare, full])
def test_every_kind_reads_back_the_same_from_its_stored_form(kind: type, make: object) -> None:
    event = make(kind)  # type: ignore[operator]
    stored = _stored(event)
    assert type(stored) is kind
    assert stored == event
    assert stored.model_dump() == event.model_dump()
    assert stored.model_fields_set >= ENVELOPE_FIELDS
    # the NDJSON line of what was read is the line of what was written
    assert ev.event_json(stored) == ev.event_json(event)
    assert ev.parse_event(ev.event_json(event)) == event


@pytest.mark.parametrize("event", list(samples()), ids=lambda e: f"{e.type}-{e.seq}")  # type: ignore[attr-defined]
def test_stored_data_holds_neither_the_envelope_nor_defaults(event: ev.BaseEvent) -> None:
    data = json.loads(ev.event_data(event))
    assert not set(data) & ev.ENVELOPE
    for name, value in data.items():
        info = type(event).model_fields[name]
        if not info.is_required():
            assert value != info.get_default(call_default_factory=True), name


def test_a_bare_event_is_stored_as_its_required_fields_only() -> None:
    queued = ev.StepQueued(reason="entry", run_id="r", seq=2, ts="t", step_id="implement")
    assert ev.event_data(queued) == '{"reason":"entry"}'
    finished = ev.StepFinished(outcome="success", exit_code=0, output_tail="")
    assert ev.event_data(finished) == '{"outcome":"success","exit_code":0,"output_tail":""}'


def test_rows_stored_whole_by_earlier_versions_read_back_the_same() -> None:
    for event in samples():
        assert _stored(event, ev.event_json(event)) == event


def test_an_unknown_kind_is_the_unions_error() -> None:
    with pytest.raises(ValueError, match="does not match any of the expected tags"):
        ev.stored_event("no.such", "{}", run_id="r", seq=1, ts="t", step_id=None, visit=None)


def test_the_stored_form_is_much_smaller() -> None:
    """What makes state.db smaller: a typical visit's events, stored whole and stored now."""
    visit = [
        ev.StepQueued(step_id="run-tests", reason="dependency", source_step="implement"),
        ev.StepStarted(step_id="run-tests", visit=3, kind="command", detail="make test"),
        ev.StepFinished(step_id="run-tests", visit=3, outcome="failure", exit_code=1, error="x"),
        ev.RouteTaken(step_id="run-tests", visit=3, target="implement", outcome="failure"),
    ]
    whole = sum(len(ev.event_json(e)) for e in visit)
    stored = sum(len(ev.event_data(e)) for e in visit)
    assert stored * 3 < whole
