"""Live events over a real `swell serve` (uvicorn on 127.0.0.1): a run started from
another process streams while it runs, and a reconnect with Last-Event-ID resumes
without losing or repeating an event."""

from __future__ import annotations

import json
import shlex
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
from helpers import chatty, server  # noqa: F401 - a fixture

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

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
    release = project / "release-two"  # step two waits for it: the run is still running
    wait = f"until [ -f {shlex.quote(str(release))} ]; do sleep 0.05; done; echo two"
    write_pipeline(project, "ticks", TICKS.replace("sleep 0.6; echo two", wait))
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
    release.touch()
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


def test_a_batched_stream_sends_a_windows_events_as_one_message(
    project: Path,
    server: str,  # noqa: F811 - the fixture
) -> None:
    run_id = run_pipeline_quietly(project)
    total = len(events(project, run_id))
    messages: list[tuple[str | None, str, str]] = []
    url = f"{server}/api/runs/{run_id}/stream?batch=1&after=2"
    with httpx.stream("GET", url, timeout=30) as response:
        for message in _frames(response):
            messages.append(message)
            if message[1] == "end":
                break
    batches = [(i, json.loads(data)) for i, kind, data in messages if kind == "batch"]
    assert [kind for _, kind, _ in messages] == ["batch"] * len(batches) + ["end"]
    seqs = [e["seq"] for _, batch in batches for e in batch]
    assert seqs == list(range(3, total + 1))  # every event once, in order
    assert all(i == str(batch[-1]["seq"]) for i, batch in batches)  # resumable
    assert len(batches) < len(seqs)  # a stored run: many events to one message


def run_pipeline_quietly(project: Path) -> str:
    write_pipeline(project, "ticks", TICKS.replace("sleep 0.6; ", ""))
    result = swell("run", "ticks", cwd=project)
    assert result.returncode == 0, result.stderr
    return run_id_of(result.stdout)


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


REJECTED = """kind: WavePipeline
metadata: {name: triage}
steps:
  - id: assess
    script: echo "not reproducible" > verdict.txt
    handover:
      contracts:
        - type: test_suite
          command: grep -q reproducible-yes verdict.txt
          on_failure: rejected
"""


def test_stream_of_a_rejected_run_ends(project: Path, server: str) -> None:  # noqa: F811 - the fixture
    write_pipeline(project, "triage", REJECTED)
    run_id = run_id_of(swell("run", "triage", cwd=project).stdout)
    kinds: list[str] = []

    def read() -> None:
        with httpx.stream("GET", f"{server}/api/runs/{run_id}/stream", timeout=10) as response:
            for _, kind, data in _frames(response):
                kinds.append(kind if kind == "end" else json.loads(data)["type"])
                if kind == "end":
                    break

    # keep-alive comments would hold a stream that never ends open forever
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert kinds[-2:] == ["run.finished", "end"], kinds


def test_a_running_visits_output_streams_to_its_page(project: Path, server: str) -> None:  # noqa: F811 - the fixture
    # the step goes on only when the test has seen it running: no race with the clock
    release = project.parent / "release"
    write_pipeline(project, "chatty", chatty(release))
    proc = start_swell("run", "chatty", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    visit_url = f"{server}/runs/{run_id}/visits/talk/1"
    wait_for(lambda: "line 1" in httpx.get(visit_url, timeout=5).text, timeout=30)
    page = httpx.get(visit_url, timeout=5).text
    assert 'id="live-output"' in page and "Output (live)" in page
    texts: list[str] = []
    running_at_first = None
    url = f"{server}/api/runs/{run_id}/visits/talk/1/output"
    with httpx.stream("GET", url, timeout=30) as response:
        for _, kind, data in _frames(response):
            if kind == "end":
                break
            texts.append(json.loads(data)["text"])
            if running_at_first is None:
                detail = httpx.get(f"{server}/api/runs/{run_id}/visits/talk/1", timeout=5).json()
                running_at_first = detail["visit"]["status"] == "running"
                release.touch()
    proc.communicate(timeout=60)
    assert running_at_first  # output arrived while the step still ran
    assert "".join(texts).split() == [w for i in range(1, 7) for w in ("line", str(i))]
    # once the visit is over its page shows the tail instead
    assert "Output (tail)" in httpx.get(visit_url, timeout=5).text
