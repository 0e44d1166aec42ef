"""Runs on the Temporal engine, driven through the CLI as a user would: a real dev
server, real `swell worker` processes, the runs' events in SQLite or a real Postgres."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from temporalio.client import Client

from conftest import events, start_swell, swell, swell_json, wait_for, write_pipeline
from postgres_server import PostgresServer
from temporal.conftest import Workers
from temporal_server import TemporalServer

SLOW = """kind: WavePipeline
metadata: {name: slow}
steps:
  - id: wait
    type: command
    script: |
      echo $$ > wait.pid
      sleep 300
"""


def _gapless(project: Path, run_id: str) -> list[dict[str, object]]:
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    return evs


def _workspace(project: Path, run_id: str) -> Path:
    return Path(str(swell_json("status", run_id, cwd=project)["workspace"]))


def test_a_command_loop_runs_on_the_engine_with_postgres(
    project: Path,
    workers: Workers,
    postgres_server: PostgresServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SWELL_STORE", postgres_server.fresh_schema())
    workers.start()
    result = swell("run", "loop", "--engine", "temporal", "--input", "hi", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = result.stdout.splitlines()[0].split()[1]
    assert "→ implement" in result.stdout and "run succeeded" in result.stdout
    evs = _gapless(project, run_id)
    started = [(e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started"]
    assert started == [(step, n) for n in (1, 2, 3) for step in ("implement", "run-tests", "check")]
    work = _workspace(project, run_id) / "work.txt"
    assert work.read_text().splitlines() == ["attempt: hi"] * 3
    # which store keeps the run, beside its workspace: `swell clean` over SQLite keeps it
    owner = work.parent.parent / ".owners" / run_id
    assert owner.read_text().startswith("postgresql://127.0.0.1:")
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "succeeded"
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode != 0
    assert "already succeeded" in resumed.stderr or "Temporal engine" in resumed.stderr


def test_runtime_engine_in_wave_yaml_selects_the_engine(project: Path, workers: Workers) -> None:
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    manifest.write_text(text.replace("runtime:\n", "runtime:\n  engine: temporal\n", 1))
    workers.start()
    result = swell("run", "loop", "--input", "x", "-o", "quiet", cwd=project)
    assert result.returncode == 0, result.stderr
    run = swell_json("list", cwd=project)
    newest = run[0] if isinstance(run, list) else run["runs"][0]
    assert swell_json("status", newest["id"], cwd=project)["status"] == "succeeded"
    assert "temporal" in swell("run", "--help", cwd=project).stdout


def test_a_gate_is_approved_through_swell_approve(project: Path, workers: Workers) -> None:
    workers.start()
    started = swell(
        "run", "review", "v2", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project
    )
    assert started.returncode == 0, started.stderr
    run_id = started.stdout.strip()

    def waiting() -> list[dict[str, object]]:
        return list(swell_json("status", run_id, cwd=project)["waiting_gates"])

    gate = wait_for(waiting)[0]
    assert gate["step_id"] == "approve" and gate["message"] == "Ship the change for v2?"
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"
    bad = swell("approve", run_id, "--choice", "yolo", cwd=project)
    assert bad.returncode == 1 and "'yolo' is not a choice" in bad.stderr
    assert "Temporal engine" in swell("resume", run_id, cwd=project).stderr

    approved = swell("approve", run_id, "--choice", "ship", cwd=project)
    assert approved.returncode == 0, approved.stderr
    assert f"approved gate 'approve' of run {run_id} (choice ship)" in approved.stdout
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded")
    evs = _gapless(project, run_id)
    resolved = [e for e in evs if e["type"] == "gate.resolved"]
    assert [(e["decision"], e["choice"]) for e in resolved] == [("approved", "ship")]
    again = swell("approve", run_id, cwd=project)
    assert again.returncode == 1 and "no gate is waiting" in again.stderr


def test_a_rejected_gate_fails_the_run(project: Path, workers: Workers) -> None:
    workers.start()
    started = swell("run", "review", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    run_id = started.stdout.strip()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"])
    rejected = swell("reject", run_id, "--reason", "not now", cwd=project)
    assert rejected.returncode == 0, rejected.stderr
    status = wait_for(
        lambda: (s := swell_json("status", run_id, cwd=project))["status"] == "failed" and s
    )
    assert "not now" in str(status["error"])


def test_cancel_stops_the_visit_and_its_processes(project: Path, workers: Workers) -> None:
    write_pipeline(project, "slow", SLOW)
    workers.start()
    started = swell("run", "slow", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    run_id = started.stdout.strip()
    pid_file = wait_for(lambda: (p := _workspace(project, run_id) / "wait.pid").is_file() and p)
    pid = int(wait_for(lambda: pid_file.read_text().strip()))
    running = swell_json("status", run_id, cwd=project)
    assert running["status"] == "running" and running["stale"] is False
    assert "running (on the Temporal engine)" in swell("status", run_id, cwd=project).stdout
    begun = time.monotonic()
    cancelled = swell("cancel", run_id, cwd=project)
    latency = time.monotonic() - begun
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert f"cancelled run {run_id}" in cancelled.stdout
    with pytest.raises(ProcessLookupError):  # gone before the run was marked cancelled
        os.kill(pid, 0)
    evs = _gapless(project, run_id)
    assert [e["type"] for e in evs][-2:] == ["step.interrupted", "run.finished"]
    assert evs[-1]["status"] == "cancelled"
    assert latency < 10, latency


@pytest.mark.slow
def test_a_killed_worker_s_visit_runs_again_on_another(project: Path, workers: Workers) -> None:
    write_pipeline(
        project,
        "twice",
        """kind: WavePipeline
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
""",
    )
    first = workers.start()
    started = swell("run", "twice", "--engine", "temporal", "--detach", "-o", "quiet", cwd=project)
    run_id = started.stdout.strip()
    tries = wait_for(lambda: (p := _workspace(project, run_id) / "tries.txt").is_file() and p)
    os.killpg(first.pid, signal.SIGKILL)  # the worker and the visit's processes with it
    first.wait()
    workers.start()
    wait_for(lambda: swell_json("status", run_id, cwd=project)["status"] == "succeeded", 60)
    assert tries.read_text().splitlines() == ["try", "try"]
    evs = _gapless(project, run_id)
    assert [(e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started"] == [
        ("work", 1),
        ("after", 1),
    ]


def test_visits_as_local_activities_run_the_loop(project: Path, workers: Workers) -> None:
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    manifest.write_text(
        text.replace("runtime:\n", "runtime:\n  temporal: {local_visits: true}\n", 1)
    )
    workers.start()
    result = swell("run", "loop", "--engine", "temporal", "--input", "hi", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = result.stdout.splitlines()[0].split()[1]
    assert len([e for e in _gapless(project, run_id) if e["type"] == "step.started"]) == 9
    assert (_workspace(project, run_id) / "work.txt").read_text().count("attempt") == 3


def test_an_unreachable_server_is_one_clear_error_and_records_nothing(
    project: Path, engine: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("SWELL_TEMPORAL_ADDRESS", f"127.0.0.1:{port}")
    result = swell("run", "loop", "--engine", "temporal", cwd=project)
    assert result.returncode == 1
    assert f"cannot reach the Temporal server at 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
    runs = swell_json("list", cwd=project)
    assert not (runs if isinstance(runs, list) else runs["runs"])
    bad = swell("run", "loop", "--engine", "spark", cwd=project)
    assert bad.returncode == 2 and "unknown engine 'spark'" in bad.stderr


def test_a_long_run_continues_as_new_with_its_state(
    project: Path, workers: Workers, engine: TemporalServer
) -> None:
    manifest = project / "wave.yaml"
    text = manifest.read_text()
    manifest.write_text(
        text.replace("runtime:\n", "runtime:\n  temporal: {continue_after: 2}\n", 1)
    )
    workers.start()
    result = swell("run", "loop", "--engine", "temporal", "--input", "hi", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "run succeeded" in result.stdout and "(9 visits)" in result.stdout
    run_id = result.stdout.splitlines()[0].split()[1]
    evs = _gapless(project, run_id)
    assert [e["type"] for e in evs].count("run.started") == 1
    assert len([e for e in evs if e["type"] == "step.started"]) == 9

    async def continued() -> bool:
        client = await Client.connect(engine.address)
        described = await client.get_workflow_handle(run_id).describe()
        first = described.raw_description.workflow_execution_info.first_run_id
        return described.run_id != first

    assert asyncio.run(continued())


COMMENT = """kind: WavePipeline
metadata: {name: comment}
steps:
  - id: publish
    persona: "{{ forge.type }}-commenter"
    exec: {type: prompt, source: "Post the comment."}
"""


def test_step_started_names_a_templated_persona_as_rendered(
    project: Path, workers: Workers
) -> None:
    """The workflow cannot detect the forge (no git in a workflow); the run's
    `step.started` still names the persona the visit runs as, as a local run does."""
    manifest = project / "wave.yaml"
    manifest.write_text(
        manifest.read_text()
        .replace(
            "personas:\n",
            "personas:\n  local-commenter:\n    adapter: commenter\n"
            '    system_prompt: "You comment."\n',
            1,
        )
        .replace(
            "adapters:\n",
            "adapters:\n  commenter:\n    type: scripted\n"
            "    options: {script: comment-replies.yaml}\n",
            1,
        )
        .replace("metadata:\n", "metadata:\n  forge: local\n", 1)
    )
    (project / "comment-replies.yaml").write_text("replies:\n  - text: posted\n")
    write_pipeline(project, "comment", COMMENT)
    workers.start()
    result = swell("run", "comment", "--engine", "temporal", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = result.stdout.splitlines()[0].split()[1]
    started = [e for e in _gapless(project, run_id) if e["type"] == "step.started"]
    assert [e["persona"] for e in started] == ["local-commenter"]


def test_a_run_without_a_terminal_stops_following_at_a_gate(
    project: Path, workers: Workers
) -> None:
    """As a local run does, `swell run --engine temporal` with nobody to ask (stdin is
    not a terminal) exits 3 at an approval gate with the commands that decide it; the
    workflow waits on the engine and goes on by itself once decided."""
    workers.start()
    stopped = swell("run", "review", "v3", "--engine", "temporal", cwd=project, timeout=300)
    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    run_id = stopped.stdout.splitlines()[0].split()[1]
    assert f"run {run_id} is waiting at gate 'approve': Ship the change for v3?" in stopped.stdout
    assert (
        f"  decide:   swell approve {run_id} approve --choice ship|rework|drop"
        f"   (or: swell reject {run_id} approve --reason TEXT)" in stopped.stdout
    )
    assert f"follow it: swell logs {run_id} --follow" in stopped.stdout
    assert "swell resume" not in stopped.stdout + stopped.stderr  # an engine run refuses it
    assert swell_json("status", run_id, cwd=project)["status"] == "waiting"

    follow = start_swell("logs", run_id, "--follow", cwd=project)
    approved = swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    assert approved.returncode == 0, approved.stderr
    out, err = follow.communicate(timeout=300)
    assert follow.returncode == 0 and "run succeeded" in out, out + err
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_wait_keeps_an_engine_run_following_at_a_gate(project: Path, workers: Workers) -> None:
    workers.start()
    run = start_swell("run", "review", "v4", "--engine", "temporal", "--wait", cwd=project)
    assert run.stdout is not None
    run_id = run.stdout.readline().split()[1]
    wait_for(lambda: swell_json("status", run_id, cwd=project)["waiting_gates"], timeout=300)
    assert run.poll() is None  # still following
    approved = swell("approve", run_id, "approve", "--choice", "ship", cwd=project)
    assert approved.returncode == 0, approved.stderr
    out, err = run.communicate(timeout=300)
    assert run.returncode == 0 and "run succeeded" in out, out + err


def test_on_a_terminal_an_engine_run_asks_at_its_gate(project: Path, workers: Workers) -> None:
    """As a local run does: the question shows the gate's default, Enter takes it, and
    the answer goes to the workflow, which goes on."""
    workers.start()
    leader, follower = pty.openpty()
    run = subprocess.Popen(
        [sys.executable, "-m", "swell", "run", "review", "v5", "--engine", "temporal"],
        cwd=project,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    seen = b""

    def read_until(token: bytes) -> None:
        nonlocal seen
        deadline = time.monotonic() + 300  # a hang bound only
        while token not in seen and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.5)[0]:
                try:
                    seen += os.read(leader, 4096)
                except OSError:
                    break
        assert token in seen, seen.decode(errors="replace")

    try:
        read_until(b"approve? [ship/rework/drop] (Enter: ship) ")
        os.write(leader, b"\n")
        read_until(b"run succeeded")
        assert run.wait(timeout=60) == 0
    finally:
        if run.poll() is None:
            run.kill()
        run.wait()
        os.close(leader)
    assert b"gate approve approved (ship) by terminal" in seen
