"""Traces of runs over OTLP/HTTP: a stand-in collector on 127.0.0.1 decodes what
swell sends (opentelemetry-proto) and finds a run span with its visits as children;
without the `otel` extra, a set endpoint is one clear warning and the run goes on."""

from __future__ import annotations

import gzip
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from conftest import swell, swell_json, write_pipeline

PIPELINE = """kind: WavePipeline
metadata: {name: traced}
steps:
  - {id: build, type: command, script: echo built}
  - {id: check, type: command, dependencies: [build], script: exit 2}
"""


@contextmanager
def collector() -> Iterator[tuple[str, list[Any]]]:
    spans: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            assert self.path == "/v1/traces", self.path
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    spans.extend(scope.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


def _attrs(span: Any) -> dict[str, Any]:
    out = {}
    for kv in span.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_a_run_is_a_span_with_its_visits_as_children(project: Path) -> None:
    write_pipeline(project, "traced", PIPELINE)
    with collector() as (url, spans):
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": url}
        done = swell("run", "traced", cwd=project, env=env)
        assert done.returncode != 0 and "warning" not in done.stderr, done.stderr
    [run] = [s for s in spans if s.name == "run traced"]
    visits = sorted((s for s in spans if s.name.startswith("visit ")), key=lambda s: s.name)
    assert [v.name for v in visits] == ["visit build#1", "visit check#1"]
    for visit in visits:
        assert visit.trace_id == run.trace_id and visit.parent_span_id == run.span_id
        assert run.start_time_unix_nano <= visit.start_time_unix_nano
        assert visit.end_time_unix_nano <= run.end_time_unix_nano
    assert _attrs(run)["swell.status"] == "failed" and run.status.code == 2  # ERROR
    assert _attrs(visits[1])["swell.exit_code"] == 2
    assert _attrs(visits[0])["swell.outcome"] == "success"
    run_id = swell_json("list", cwd=project)[0]["id"]
    assert _attrs(run)["swell.run_id"] == run_id


HIDE_SDK = """import sys
class _Gone:
    def find_spec(self, name, path=None, target=None):
        if name == "opentelemetry.sdk" or name.startswith("opentelemetry.sdk."):
            raise ImportError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _Gone())
"""


def test_without_the_extra_a_set_endpoint_is_one_warning(project: Path, tmp_path: Path) -> None:
    """As on a machine without `swell[otel]`: the SDK cannot be imported."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(HIDE_SDK)
    write_pipeline(project, "traced", PIPELINE.replace("exit 2", "echo ok"))
    path = os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "PYTHONPATH": path}
    done = swell("run", "traced", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
    assert warnings == [
        "warning: OTEL_EXPORTER_OTLP_ENDPOINT is set, but the OpenTelemetry SDK is not "
        "installed: no traces are sent (pip install 'swell[otel]')"
    ]
