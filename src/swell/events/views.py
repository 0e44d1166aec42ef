"""Stored events read without their pydantic models: for readers that only show them.

`swell logs` prints a few events and exits; importing pydantic and building the event
models would be most of its time. A view has the attributes its model would have (the
stored fields, the defaults of the rest from `shapes`, the envelope columns), nested
models as views too; it is not validated again (it was when it was stored) and has no
methods. Writers, resume and `-o json` use the models (`events.models.stored_event`).
"""

from __future__ import annotations

import json
from typing import Any

from swell.events.shapes import FIELDS, MODELS, NESTED, REQUIRED

# The Unicode bidirectional overrides and isolates (a regex character range): they
# reorder what is shown, so that text reads other than it is ("Trojan Source",
# CVE-2021-42574); every view of stored text (terminal, dashboard) shows them escaped.
BIDI_CONTROLS = "\u202a-\u202e\u2066-\u2069"


class EventView:
    """A stored event's fields as attributes (`type`, the envelope, the kind's fields)."""

    type: str
    run_id: str
    seq: int
    ts: str
    step_id: str | None
    visit: int | None

    def __init__(self, fields: dict[str, Any]) -> None:
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        return f"EventView({self.__dict__!r})"


def _filled(owner: str, shape: tuple[tuple[str, object], ...], data: dict[str, Any]) -> Any:
    fields: dict[str, Any] = {}
    for name, default in shape:
        if name in data:
            value = data[name]
        elif default is REQUIRED:
            raise ValueError(f"stored {owner} event lacks its field {name!r}")
        else:  # a copy: a default list or dict is not shared between views
            value = default.copy() if isinstance(default, (list, dict)) else default
        model = NESTED.get((owner, name))
        if model is not None and value is not None:
            if isinstance(value, list):
                value = [EventView(_filled(model, MODELS[model], item)) for item in value]
            else:
                value = EventView(_filled(model, MODELS[model], value))
        fields[name] = value
    return fields


def view(
    kind: str,
    data: str | bytes,
    *,
    run_id: str,
    seq: int,
    ts: str,
    step_id: str | None,
    visit: int | None,
) -> EventView | None:
    """The event a store row holds (`stored_event`'s arguments), or None for a kind
    this version does not know (the caller reads it through the models, which say so)."""
    shape = FIELDS.get(kind)
    if shape is None:
        return None
    fields = _filled(kind, shape, json.loads(data))
    fields.update(type=kind, run_id=run_id, seq=seq, ts=ts, step_id=step_id, visit=visit)
    return EventView(fields)
