"""Run and visit spans from a run's events.

A run is a span (`run PIPELINE`) whose children are its visits (`visit STEP#N`) and
the runs of its sub-pipelines (under the visit that started them). Spans take their
times from the events, not from when this observer saw them. The SDK's batch
processor exports from a thread of its own; `emit` only builds spans in memory, so a
slow or absent collector costs the run nothing. Spans still open when the process
ends (a run that stopped at a gate) end then, with `swell.status` saying so.
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import weakref
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from swell.events import models as ev

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer

ENDPOINTS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
MISSING = (
    "warning: {var} is set, but the OpenTelemetry SDK is not installed: no traces are "
    "sent (pip install 'swell[otel]')"
)


def _ns(ts: str) -> int | None:
    try:
        return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1e9)
    except ValueError:
        return None


@atexit.register
def _close_all() -> None:
    for observer in list(_observers):
        observer.close()


@functools.cache
def tracer() -> Tracer | None:
    """The process's tracer exporting over OTLP/HTTP, or None (not configured, or the
    extra is missing: then one warning)."""
    var = next((v for v in ENDPOINTS if os.environ.get(v)), None)
    if var is None:
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        print(MISSING.format(var=var), file=sys.stderr, flush=True)
        return None
    service = os.environ.get("OTEL_SERVICE_NAME") or "swell"
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider.get_tracer("swell")


_observers: weakref.WeakSet[TraceObserver] = weakref.WeakSet()


class TraceObserver:
    """Spans of one run (and its sub-pipeline runs executed in this process)."""

    def __init__(self, tracer: Tracer, pipeline: str) -> None:
        self.tracer, self.pipeline = tracer, pipeline
        self.runs: dict[str, Span] = {}
        self.visits: dict[tuple[str, str, int], Span] = {}
        _observers.add(self)

    def emit(self, events: Sequence[ev.BaseEvent]) -> None:
        for event in events:
            try:
                self._one(event)
            except Exception as exc:  # tracing must never take the run down
                print(f"warning: tracing: {exc}", file=sys.stderr)

    def _one(self, e: ev.BaseEvent) -> None:
        when = _ns(e.ts)
        if isinstance(e, ev.RunStarted | ev.RunResumed) and e.run_id not in self.runs:
            self._run_span(e, when)
        elif isinstance(e, ev.StepStarted) and e.run_id in self.runs:
            self._visit_span(e, when)
        elif isinstance(e, ev.StepFinished):
            self._end_visit(e, when)
        elif isinstance(e, ev.RunFinished) and e.run_id in self.runs:
            for key in [k for k in self.visits if k[0] == e.run_id]:
                self.visits.pop(key).end(end_time=when)
            span = self.runs.pop(e.run_id)
            span.set_attribute("swell.status", e.status)
            span.set_attribute("swell.visits", e.visits)
            if e.status != "succeeded":
                from opentelemetry.trace import Status, StatusCode

                span.set_status(Status(StatusCode.ERROR, e.error or e.status))
            span.end(end_time=when)

    def _run_span(self, e: ev.RunStarted | ev.RunResumed, when: int | None) -> None:
        from opentelemetry import context, trace

        pipeline = e.pipeline if isinstance(e, ev.RunStarted) else self.pipeline
        parent = None
        if isinstance(e, ev.RunStarted) and e.parent_run_id:
            parent = self._open_visit(e.parent_run_id, e.parent_step_id)
            parent = parent or self.runs.get(e.parent_run_id)
        ctx = trace.set_span_in_context(parent) if parent else context.Context()
        attributes: dict[str, Any] = {"swell.run_id": e.run_id, "swell.pipeline": pipeline}
        if isinstance(e, ev.RunResumed):
            attributes["swell.resumed"] = True
        self.runs[e.run_id] = self.tracer.start_span(
            f"run {pipeline}", context=ctx, start_time=when, attributes=attributes
        )

    def _open_visit(self, run_id: str, step_id: str | None) -> Span | None:
        found = [s for (r, st, _), s in self.visits.items() if r == run_id and st == step_id]
        return found[-1] if found else None

    def _visit_span(self, e: ev.StepStarted, when: int | None) -> None:
        from opentelemetry import trace

        ctx = trace.set_span_in_context(self.runs[e.run_id])
        attributes: dict[str, Any] = {
            "swell.run_id": e.run_id,
            "swell.step_id": e.step_id or "",
            "swell.visit": e.visit or 0,
            "swell.kind": e.kind,
        }
        for key, value in (("persona", e.persona), ("adapter", e.adapter), ("model", e.model)):
            if value:
                attributes[f"swell.{key}"] = value
        name = f"visit {e.step_id}#{e.visit}"
        self.visits[(e.run_id, e.step_id or "", e.visit or 0)] = self.tracer.start_span(
            name, context=ctx, start_time=when, attributes=attributes
        )

    def _end_visit(self, e: ev.StepFinished, when: int | None) -> None:
        span = self.visits.pop((e.run_id, e.step_id or "", e.visit or 0), None)
        if span is None:
            return
        span.set_attribute("swell.outcome", e.outcome)
        span.set_attribute("swell.tokens_in", e.tokens_in)
        if e.exit_code is not None:
            span.set_attribute("swell.exit_code", e.exit_code)
        if e.outcome != "success":
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, e.error or "failure"))
        span.end(end_time=when)

    def close(self) -> None:
        """End what is still open (the run stopped here without finishing)."""
        for span in [*self.visits.values(), *self.runs.values()]:
            span.set_attribute("swell.status", "stopped")
            span.end()
        self.visits.clear()
        self.runs.clear()


def trace_observers(pipeline: str) -> list[TraceObserver]:
    """The run's trace observer, when traces are configured and can be sent."""
    found = tracer()
    return [TraceObserver(found, pipeline)] if found is not None else []
