"""Traces of runs for OpenTelemetry (the optional `otel` extra): an observer of a
run's events that turns the run and its visits into spans, exported over OTLP/HTTP
when OTEL_EXPORTER_OTLP_ENDPOINT (or ..._TRACES_ENDPOINT) is set (docs/service.md,
"Tracing")."""

from __future__ import annotations

from swell.telemetry.traces import trace_observers

__all__ = ["trace_observers"]
