"""Sample events of every kind in the `Event` union, made from the models' own fields.

`bare(kind)` sets only the required fields; `full(kind)` sets every field to a value
that is not its default. Both are stamped with an envelope (run_id, seq, ts, step_id,
visit), so a test over `samples()` covers every event kind there is, including ones
added later: a field of a type this module cannot fill is an error, not a skip.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from swell.events import models as ev
from swell.store.rows import StoredRow

ENVELOPE_FIELDS = set(ev.BaseEvent.model_fields)


def _value(name: str, annotation: Any, default: Any) -> Any:
    """A valid value of `annotation` that differs from `default`."""
    origin = get_origin(annotation)
    if origin is Annotated:  # FreeText
        return _value(name, get_args(annotation)[0], default)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        return _value(name, options[0], default)
    if origin is Literal:
        choices = [c for c in get_args(annotation) if c != default]
        return choices[-1]
    if origin is list:
        (item,) = get_args(annotation)
        return [_value(name, item, None), _value(name + "2", item, None)]
    if origin is dict and get_args(annotation)[1:] not in ((), (Any,)):  # typed values
        return {"outcome": _value(name, get_args(annotation)[1], None), "ü": ""}
    if origin is dict:
        return {"outcome": "failure", "exit_code": 2, "nested": {"a": [1, None, "ü"]}}
    if annotation is Any:
        return {"any": [1.5, "x"]}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation.model_validate(_fields(annotation, every=True))
    if annotation is bool:
        return not default
    if annotation is int:
        return 7 if default != 7 else 8
    if annotation is float:
        return 0.625 if default != 0.625 else 0.75
    if annotation is str:
        return f'{name} ✓ "quoted"\n' if default != name else f"{name}!"
    raise AssertionError(f"event_samples cannot fill a field of type {annotation!r}")


def _fields(model: type[BaseModel], *, every: bool) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in ENVELOPE_FIELDS or name == "type":
            continue
        if info.is_required() or every:
            values[name] = _value(name, info.annotation, _default(info))
    return values


def _default(info: FieldInfo) -> Any:
    return None if info.is_required() else info.get_default(call_default_factory=True)


def _stamp(event: ev.BaseEvent, seq: int) -> ev.BaseEvent:
    event.run_id, event.seq, event.ts = "sample-run", seq, f"2026-11-24T10:00:{seq % 60:02d}.000Z"
    event.step_id, event.visit = "implement", seq
    return event


def kinds() -> list[type[ev.BaseEvent]]:
    """Every model in the `Event` union."""
    return list(ev.EVENT_TYPES.values())


def bare(kind: type[ev.BaseEvent], seq: int = 1) -> ev.BaseEvent:
    return _stamp(kind.model_validate(_fields(kind, every=False)), seq)


def full(kind: type[ev.BaseEvent], seq: int = 1) -> ev.BaseEvent:
    return _stamp(kind.model_validate(_fields(kind, every=True)), seq)


def samples() -> Iterator[ev.BaseEvent]:
    """One bare and one full event of every kind, seq 1, 2, 3, ..."""
    seq = 0
    for kind in kinds():
        for make in (bare, full):
            seq += 1
            yield make(kind, seq)


def stored_row(event: ev.BaseEvent, data: str | None = None) -> StoredRow:
    """`event` as a store keeps it: its envelope columns and its `event_data` (or `data`)."""
    kind = str(getattr(event, "type", ""))
    data = ev.event_data(event) if data is None else data
    return StoredRow(event.seq, event.ts, kind, event.step_id, event.visit, data)
