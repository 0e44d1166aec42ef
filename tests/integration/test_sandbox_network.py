"""A persona narrows the sandbox's network, never widens what the runtime's list allows
(runtime.sandbox, real bwrap; docs/security.md, "Sandbox")."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import events, run_id_of, swell, write_pipeline


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_persona_narrows_the_runtime_list_and_cannot_widen_it(
    tmp_path: Path, isolated_state: Path, port: int
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "wave.yaml").write_text("""
kind: WaveManifest
metadata: {name: narrow}
runtime:
  sandbox: {enabled: true, default_allowed_domains: ["127.0.0.1", "localhost"]}
personas:
  narrow: {adapter: scripted, sandbox: {allowed_domains: ["localhost", "127.0.0.2"]}}
""")
    probe = (
        "get() { curl -sS -m 10 -o /dev/null -w '%{http_code}' \"$@\" 2>/dev/null; }\n"
        f'echo "ip=$(get http://127.0.0.1:{port}/) name=$(get http://localhost:{port}/)'
        f' widened=$(get http://127.0.0.2:{port}/)" > report.txt\n'
    )
    write_pipeline(
        project,
        "net",
        f"""
kind: WavePipeline
metadata: {{name: net}}
steps:
  - id: runtime
    type: command
    script: |
{_indent(probe)}
  - id: persona
    type: command
    persona: narrow
    dependencies: [runtime]
    script: |
{_indent(probe.replace("report.txt", "narrowed.txt"))}
""",
    )
    result = swell("run", "net", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    workspace = isolated_state / "workspaces" / run_id
    # the runtime's list: both names; 127.0.0.2 is in neither list
    assert (workspace / "report.txt").read_text().split() == ["ip=200", "name=200", "widened=403"]
    # the persona narrows to localhost; its 127.0.0.2 is outside the runtime's list
    assert (workspace / "narrowed.txt").read_text().split() == [
        "ip=403",
        "name=200",
        "widened=403",
    ]
    refused = [
        (e["step_id"], e["host"])
        for e in events(project, run_id)
        if e["type"] == "sandbox.connection" and not e["allowed"]
    ]
    assert refused == [("runtime", "127.0.0.2"), ("persona", "127.0.0.1"), ("persona", "127.0.0.2")]


def _indent(text: str) -> str:
    return "\n".join("      " + line for line in text.splitlines())
