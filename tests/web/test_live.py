"""Live events over a real `swell serve` (uvicorn on 127.0.0.1): a run started from
another process streams while it runs, and a reconnect with Last-Event-ID resumes
without losing or repeating an event."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
from helpers import server  # noqa: F401 - a fixture

from conftest import events, run_id_of, start_swell, swell_json, wait_for, write_pipeline

TICKS = """kind: WavePipeline
metadata: {name: ticks}
steps:
  - id: one
    type: command
    script: sleep 0.6; echo one
  - id: two
    type: command
    dependencies: [one]
    script: sleep 0.6; echo two
  - id: three
    type: command
    dependencies: [two]
    script: sleep 0.6; echo three
"""


def _frames(response: httpx.Response) -> Iterator[tuple[str | None, str, str]]:
    """(id, event, data) of each SSE frame."""
    fields: dict[str, str] = {}
    for line in response.iter_lines():
        if not line:
            if "data" in fields:
                yield fields.get("id"), fields.get("event", "message"), fields["data"]
            fields = {}
        elif not line.startswith(":") and ":" in line:
            name, _, value = line.partition(":")
            fields[name] = value.removeprefix(" ")


def test_stream_follows_a_running_run_and_resumes(project: Path, server: str) -> None:  # noqa: F811 - the fixture
    write_pipeline(project, "ticks", TICKS)
    proc = start_swell("run", "ticks", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    seen: list[int] = []
    with httpx.stream("GET", f"{server}/api/runs/{run_id}/stream", timeout=30) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        for frame_id, kind, data in _frames(response):
            assert kind == "swell"
            event = json.loads(data)
            assert frame_id == str(event["seq"])
            seen.append(event["seq"])
            if event["type"] == "step.finished" and event["step_id"] == "one":
                break  # drop the connection while the run still goes on
    assert swell_json("status", run_id, cwd=project)["status"] == "running"
    last = seen[-1]
    headers = {"Last-Event-ID": str(last)}
    with httpx.stream(
        "GET", f"{server}/api/runs/{run_id}/stream", headers=headers, timeout=30
    ) as response:
        for _, kind, data in _frames(response):
            if kind == "end":
                break
            seen.append(json.loads(data)["seq"])
    proc.communicate(timeout=60)
    total = len(events(project, run_id))
    assert seen == list(range(1, total + 1))


def test_runs_stream_tells_of_a_new_run(project: Path, server: str) -> None:  # noqa: F811 - the fixture
    write_pipeline(project, "ticks", TICKS)
    with httpx.stream("GET", f"{server}/api/stream", timeout=30) as response:
        proc = start_swell("run", "ticks", cwd=project)
        for _, kind, _ in _frames(response):
            assert kind == "runs"
            break
    proc.communicate(timeout=60)
    wait_for(lambda: httpx.get(f"{server}/api/runs").json()["total"] == 1)


def test_ctrl_c_stops_the_server_with_a_stream_open(project: Path) -> None:

    write_pipeline(project, "forever", FOREVER)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serving = start_swell("serve", "--port", str(port), cwd=project)
    run = start_swell("run", "forever", cwd=project)
    try:
        run_id = run_id_of(run.stdout.readline())  # type: ignore[union-attr]
        url = f"http://127.0.0.1:{port}/api/runs/{run_id}/stream"
        wait_for(lambda: _up(f"http://127.0.0.1:{port}"), timeout=30)
        opened = threading.Event()

        def listen() -> None:
            try:
                with httpx.stream("GET", url, timeout=30) as response:
                    for _ in response.iter_lines():
                        opened.set()
            except httpx.HTTPError:
                pass

        reader = threading.Thread(target=listen, daemon=True)
        reader.start()
        assert opened.wait(10)
        serving.send_signal(signal.SIGINT)
        serving.communicate(timeout=15)  # within the grace, not when the run ends
        reader.join(10)
    finally:
        for proc in (serving, run):
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)  # swell run ends its steps on Ctrl-C
            try:
                proc.communicate(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()


FOREVER = """kind: WavePipeline
metadata: {name: forever}
steps:
  - {id: wait, type: command, script: sleep 60}
"""


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/runs", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False
