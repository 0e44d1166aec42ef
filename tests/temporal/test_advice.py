"""What swell tells a person to do about a run the Temporal engine executes works for
it: `swell logs RUN --follow` follows it through a killed worker, Ctrl-C and `swell
resume` point there, and the dashboard's buttons reach its workflow (never `swell
resume`, which an engine run refuses)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import httpx
import pytest

from conftest import run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline
from swell.web.app import create_app
from swell.web.state import ServeSettings
from temporal.conftest import Workers

TWICE = """kind: WavePipeline
metadata: {name: twice}
steps:
  - id: work
    type: command
    script: |
      echo "try" >> tries.txt
      [ $(grep -c . tries.txt) -ge 2 ] || sleep 300
  - id: after
    type: command
    dependencies: [work]
    script: echo done > done.txt
"""
SLOW = """kind: WavePipeline
metadata: {name: slow}
steps:
  - id: wait
    type: command
    script: |
      echo $$ > wait.pid
      sleep 300
"""


def _workspace(project: Path, run_id: str) -> Path:
    return Path(str(swell_json("status", run_id, cwd=project)["workspace"]))


@pytest.mark.slow
def test_logs_follow_an_engine_run_through_a_killed_worker(project: Path, workers: Workers) -> None:
    write_pipeline(project, "twice", TWICE)
    first = workers.start()
    run = start_swell("run", "twice", "--engine", "temporal", cwd=project)
    assert run.stdout is not None
    run_id = run_id_of(run.stdout.readline())
    wait_for(lambda: (_workspace(project, run_id) / "tries.txt").is_file())
    run.send_signal(signal.SIGINT)  # Ctrl-C: the run goes on on the engine
    _, err = run.communicate(timeout=30)
    assert run.returncode == 130, err
    assert f"`swell logs {run_id} --follow`, `swell cancel {run_id}`" in err
    os.killpg(first.pid, signal.SIGKILL)  # the worker and the visit's processes with it
    first.wait()
    follow = start_swell("logs", run_id, "--follow", cwd=project)
    refused = swell("resume", run_id, cwd=project)
    assert refused.returncode != 0
    assert "goes on there by itself, on any worker of queue" in refused.stderr
    assert f"(follow it: swell logs {run_id} --follow)" in refused.stderr
    workers.start()  # the visit runs again here, and the run ends
    out, err = follow.communicate(timeout=180)
    assert follow.returncode == 0, out + err
    assert "swell resume" not in err and "no process is executing" not in err
    assert "run succeeded" in out
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def _client(project: Path) -> httpx.AsyncClient:
    app = create_app(ServeSettings(root=project))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


async def _post(project: Path, path: str, body: dict[str, str] | None = None) -> httpx.Response:
    async with _client(project) as http:
        token = (await http.get("/api/csrf")).json()["token"]
        return await http.post(path, json=body, headers={"X-CSRF-Token": token})


def test_the_dashboard_decides_and_cancels_engine_runs_through_their_workflow(
    project: Path, workers: Workers
) -> None:
    workers.start()
    started = swell(
        "run", "review", "v2", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
    done = asyncio.run(
        _post(project, f"/api/runs/{run_id}/gates/approve/approve", {"choice": "ship"})
    )
    assert done.status_code == 200, done.text
    assert done.json()["message"] == f"approved gate 'approve' of run {run_id} (choice ship)"
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)

    write_pipeline(project, "slow", SLOW)
    started = swell("run", "slow", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    slow = started.stdout.strip()
    pid_file = wait_for(lambda: (p := _workspace(project, slow) / "wait.pid").is_file() and p)
    pid = int(wait_for(lambda: pid_file.read_text().strip()))
    done = asyncio.run(_post(project, f"/api/runs/{slow}/cancel"))
    assert done.status_code == 200, done.text
    assert done.json()["message"] == f"cancel requested for run {slow}"
    wait_for(lambda: swell_json("status", slow, cwd=project)["status"] == "cancelled", 60)
    with pytest.raises(ProcessLookupError):  # the workflow stopped the visit's processes
        os.kill(pid, 0)
