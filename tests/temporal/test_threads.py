"""Threads on the engine: a thread's next visit resumes the agent's native session
only on the worker that keeps it; on another worker it gets the thread's transcript,
as an adapter without resume does."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from conftest import events, swell, wait_for, write_pipeline
from temporal.conftest import Workers, run_end
from temporal_server import TemporalServer

MANIFEST = """
kind: WaveManifest
adapters:
  scripted:
    options: {script: replies.yaml, calls: calls.jsonl}
personas:
  coder: {adapter: scripted, system_prompt: "You write code."}
"""

PIPELINE = """kind: WavePipeline
metadata: {{name: talk}}
steps:
  - id: first
    persona: coder
    thread: t
    exec: {{type: prompt, source: "Write the first line"}}
  - id: hold
    type: command
    dependencies: [first]
    script: |
      touch {signals}/hold.started
      while [ ! -f {signals}/hold.go ]; do sleep 0.1; done
  - id: second
    persona: coder
    thread: t
    dependencies: [hold]
    exec: {{type: prompt, source: "Write the second line"}}
"""

REPLIES = """
replies:
  - {step: first, text: "First line written.", files: {work.txt: "one\\n"}, session_id: sess-1}
  - {step: second, text: "Second line written.", files: {work.txt: "one\\ntwo\\n"}}
"""


def _setup(project: Path, signals: Path) -> None:
    signals.mkdir()
    (project / "wave.yaml").write_text(MANIFEST)
    (project / "replies.yaml").write_text(REPLIES)
    write_pipeline(project, "talk", PIPELINE.format(signals=signals))


def _calls(project: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (project / "calls.jsonl").read_text().splitlines()]


def _start(project: Path) -> str:
    started = swell("run", "talk", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    assert started.returncode == 0, started.stderr
    return started.stdout.strip()


def _succeeded(project: Path, run_id: str) -> None:
    status = run_end(project, run_id)
    assert status["status"] == "succeeded", status.get("error")


def _contexts(project: Path, run_id: str) -> list[tuple[object, ...]]:
    found = [e for e in events(project, run_id) if e["type"] == "thread.context"]
    return [(e["fidelity"], e["native_resume"], e["session_id"]) for e in found]


def test_a_thread_resumes_its_session_on_the_worker_that_keeps_it(
    project: Path, workers: Workers, engine: TemporalServer, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    _setup(project, signals)
    (signals / "hold.go").touch()
    workers.start()
    run_id = _start(project)
    _succeeded(project, run_id)
    first, second = _calls(project)
    assert first["resume_session"] is None
    assert second["resume_session"] == "sess-1"
    assert _contexts(project, run_id) == [("fresh", False, None), ("full", True, "sess-1")]


def test_a_thread_on_another_worker_gets_the_transcript(
    project: Path, workers: Workers, engine: TemporalServer, tmp_path: Path
) -> None:
    signals = tmp_path / "signals"
    _setup(project, signals)
    first_worker = workers.start()
    run_id = _start(project)
    wait_for(lambda: (signals / "hold.started").is_file(), 60)
    # the worker that keeps the agent's session dies; the run goes on on another one
    os.killpg(first_worker.pid, signal.SIGKILL)
    first_worker.wait()
    workers.start()
    (signals / "hold.go").touch()
    _succeeded(project, run_id)
    first, second = _calls(project)
    assert first["resume_session"] is None
    assert second["resume_session"] is None  # not a session id this host does not have
    assert "First line written." in second["prompt"]  # the thread's transcript instead
    assert _contexts(project, run_id) == [("fresh", False, None), ("full", False, None)]
