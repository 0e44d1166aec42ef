"""Fan-out of committed events to observers (printers, live views)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from swell.events.models import BaseEvent


class EventSink(Protocol):
    """Receives a batch of events that belong together (committed as one)."""

    def emit(self, events: Sequence[BaseEvent]) -> None: ...


class EventBus:
    """Sends each batch to every sink in order; the first sink is usually the store."""

    def __init__(self, *sinks: EventSink) -> None:
        self._sinks = list(sinks)

    def add(self, sink: EventSink) -> None:
        self._sinks.append(sink)

    def emit(self, events: Sequence[BaseEvent]) -> None:
        for sink in self._sinks:
            sink.emit(events)
