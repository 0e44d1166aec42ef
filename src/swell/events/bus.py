"""Fan-out of committed events to observers (printers, live views)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from swell.events.models import BaseEvent


class EventSink(Protocol):
    """Receives a batch of events that belong together (committed as one)."""

    def emit(self, events: Sequence[BaseEvent]) -> None: ...


Redact = Callable[[Sequence[BaseEvent]], Sequence[BaseEvent]]


class EventBus:
    """Sends each batch to every sink in order; the first sink is usually the store.
    `redact` (events.redact) masks secrets before any sink sees a batch."""

    def __init__(self, *sinks: EventSink, redact: Redact | None = None) -> None:
        self._sinks = list(sinks)
        self._redact = redact

    def add(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def emit(self, events: Sequence[BaseEvent]) -> None:
        if self._redact is not None:
            events = self._redact(events)
        for sink in self._sinks:
            sink.emit(events)
