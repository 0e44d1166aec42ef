"""One process executes a run at a time: a claim that is atomic and dies with its
process; a live run is never called stale; resume runs the pipeline as it was when the
run started; cancelling a run cancels its sub-pipeline runs."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

SLOW = """
kind: WavePipeline
metadata: {name: slow}
steps:
  - id: first
    script: echo first >> log.txt
  - id: second
    dependencies: [first]
    script: |
      echo second >> log.txt
      [ -f go-on ] || sleep 60
  - id: third
    dependencies: [second]
    script: echo third >> log.txt
"""


def _killed_midway(project: Path, state: Path, name: str = "slow") -> str:
    """Start a run, kill -9 it while `second` runs; its run id."""
    proc = start_swell("run", name, cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    log = state / "workspaces" / run_id / "log.txt"
    wait_for(lambda: log.exists() and "second" in log.read_text())
    proc.kill()
    proc.communicate(timeout=10)
    return run_id


def _resume(project: Path, run_id: str) -> subprocess.Popen[str]:
    return start_swell("resume", run_id, cwd=project)


def test_two_resumes_at_once_one_executes_the_other_is_told_who(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "slow", SLOW)
    run_id = _killed_midway(project, isolated_state)
    (isolated_state / "workspaces" / run_id / "go-on").write_text("")
    first, second = _resume(project, run_id), _resume(project, run_id)
    results = [p.communicate(timeout=60) for p in (first, second)]
    codes = sorted(p.returncode for p in (first, second))
    assert codes in ([0, 4], [0, 1]), results  # 1: the loser started after the run ended
    loser = next(err for p, (_, err) in zip((first, second), results, strict=True) if p.returncode)
    winner = first if first.returncode == 0 else second
    assert loser.strip() == (
        f"error: run {run_id} is already being executed by pid {winner.pid} "
        f"on {socket.gethostname()}"
        if codes == [0, 4]
        else f"error: run {run_id} already succeeded; start a new run instead"
    )
    assert "Traceback" not in loser
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    started = Counter((e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started")
    assert max(started.values()) == 1
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_a_live_run_is_never_stale_and_cannot_be_resumed(
    project: Path, isolated_state: Path
) -> None:
    write_pipeline(project, "slow", SLOW)
    proc = start_swell("run", "slow", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    log = isolated_state / "workspaces" / run_id / "log.txt"
    wait_for(lambda: log.exists() and "second" in log.read_text())
    status = swell_json("status", run_id, cwd=project)
    assert status["stale"] is False
    assert status["owner"] == {"pid": proc.pid, "host": socket.gethostname()}
    listed = swell_json("list", cwd=project)
    assert [(r["id"], r["stale"]) for r in listed] == [(run_id, False)]
    busy = swell("resume", run_id, cwd=project)
    assert busy.returncode == 4
    assert f"is already being executed by pid {proc.pid}" in busy.stderr
    approve = swell("approve", run_id, cwd=project)  # no gate: the store says so, no traceback
    assert approve.returncode == 1 and "Traceback" not in approve.stderr

    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    status = swell_json("status", run_id, cwd=project)
    assert status["stale"] is True and status["owner"] is None


def test_resume_runs_the_pipeline_as_it_was_when_the_run_started(
    project: Path, isolated_state: Path
) -> None:
    path = write_pipeline(project, "slow", SLOW)
    run_id = _killed_midway(project, isolated_state)
    # the file changes under the run: `second` renamed, `third` now does something else
    path.write_text(
        SLOW.replace("id: second", "id: middle")
        .replace("[second]", "[middle]")
        .replace("echo third", "echo changed")
    )
    (isolated_state / "workspaces" / run_id / "go-on").write_text("")
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"slow.yaml changed since run {run_id} started" in resumed.stderr
    log = (isolated_state / "workspaces" / run_id / "log.txt").read_text().split()
    assert log[-1] == "third" and "changed" not in log


def test_an_old_run_whose_step_is_gone_is_a_clear_error(
    project: Path, isolated_state: Path
) -> None:
    path = write_pipeline(project, "slow", SLOW)
    run_id = _killed_midway(project, isolated_state)
    with sqlite3.connect(isolated_state / "state.db") as db:  # as stored before copies were kept
        db.execute("UPDATE runs SET pipeline_text = NULL WHERE id = ?", (run_id,))
    path.write_text(SLOW.replace("id: second", "id: middle").replace("[second]", "[middle]"))
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 1
    assert resumed.stderr.strip() == (
        f"error: run {run_id} cannot continue: pipeline slow no longer has step 'second' "
        "(renamed or removed since the run started)"
    )
    # nothing was written; the run can still be resumed once the step is back
    path.write_text(SLOW)
    (isolated_state / "workspaces" / run_id / "go-on").write_text("")
    assert swell("resume", run_id, cwd=project).returncode == 0


FAMILY_CHILD = """
kind: WavePipeline
metadata: {name: kid}
steps:
  - id: work
    script: |
      touch kid.running
      sleep 60
"""
FAMILY_PARENT = """
kind: WavePipeline
metadata: {name: parent}
steps:
  - id: sub
    pipeline: kid
"""


def _family(project: Path) -> None:
    write_pipeline(project, "kid", FAMILY_CHILD)
    write_pipeline(project, "parent", FAMILY_PARENT)


def _statuses(project: Path, run_id: str) -> dict[str, str]:
    status = swell_json("status", run_id, cwd=project)
    found = {"parent": status["status"]}
    for child in status["children"]:
        found[child] = swell_json("status", child, cwd=project)["status"]
    return found


def test_cancelling_a_running_parent_cancels_its_child(project: Path, isolated_state: Path) -> None:
    _family(project)
    proc = start_swell("run", "parent", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: (isolated_state / "workspaces" / run_id / "kid.running").exists())
    cancelled = swell("cancel", run_id, cwd=project)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    proc.communicate(timeout=30)
    assert set(_statuses(project, run_id).values()) == {"cancelled"}


def test_cancelling_a_dead_parent_cancels_its_child(project: Path, isolated_state: Path) -> None:
    _family(project)
    proc = start_swell("run", "parent", "-o", "json", cwd=project)
    run_id = ""
    for line in proc.stdout:  # type: ignore[union-attr]
        event = json.loads(line)
        run_id = run_id or event["run_id"]
        if event["type"] == "step.started" and event["step_id"] == "work":
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    cancelled = swell("cancel", run_id, cwd=project)
    assert cancelled.returncode == 0, cancelled.stderr
    statuses = _statuses(project, run_id)
    assert len(statuses) == 2 and set(statuses.values()) == {"cancelled"}
    (child,) = [k for k in statuses if k != "parent"]
    assert cancelled.stdout.splitlines() == [f"cancelled run {child}", f"cancelled run {run_id}"]


# ------------------------------------ a step cannot reach or fool its run's claim

# a step's workspace is STATE/workspaces/RUN: where swell kept a run's lock file
# (STATE/locks/RUN.lock) until claims became the kernel's lock on the database itself
TAMPERS = {
    "fifo": 'mkdir -p ../../locks && rm -f "../../locks/$RUN.lock" && mkfifo "../../locks/$RUN.lock"',
    "link to a file": 'mkdir -p ../../locks && ln -sf "{elsewhere}/precious" "../../locks/$RUN.lock"',
    "link to a directory": 'rm -rf ../../locks && ln -s "{elsewhere}" ../../locks',
    "deleted": "rm -rf ../../locks",
}
TAMPERING = """
kind: WavePipeline
metadata: {{name: tamper}}
steps:
  - id: tamper
    script: |
      RUN=$(basename "$PWD")
      {tamper}
      echo tampered >> log.txt
  - id: wait
    dependencies: [tamper]
    script: |
      echo waiting >> log.txt
      for i in $(seq 600); do [ -f go-on ] && break; sleep 0.1; done
      [ -f go-on ]
"""


def _answer(project: Path, *args: str) -> Any:
    """A reading command's JSON, bounded: a reader that hangs fails the test."""
    result = swell(*args, "-o", "json", cwd=project, timeout=30)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _tampering_run(
    project: Path, state: Path, tamper: str, elsewhere: Path
) -> tuple[subprocess.Popen[str], str]:
    """A run whose first step tampered with its claim as `tamper` says, now waiting."""
    script = TAMPERS[tamper].format(elsewhere=elsewhere)
    write_pipeline(project, "tamper", TAMPERING.format(tamper=script))
    proc = start_swell("run", "tamper", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    log = state / "workspaces" / run_id / "log.txt"
    wait_for(lambda: log.exists() and "waiting" in log.read_text())
    return proc, run_id


def _dashboard_says(project: Path, run_id: str) -> Any:
    """The dashboard's API on the run, from a real `swell serve`, bounded."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    serving = start_swell("serve", "--port", str(port), cwd=project)
    url = f"http://127.0.0.1:{port}/api/runs/{run_id}"

    def answer() -> Any:
        try:
            reply = httpx.get(url, timeout=2)
        except httpx.HTTPError:
            return None
        return reply.json() if reply.status_code == 200 else None

    try:
        return wait_for(answer, timeout=60)
    finally:
        serving.terminate()
        serving.communicate(timeout=30)


@pytest.mark.parametrize("tamper", list(TAMPERS))
def test_what_a_step_plants_under_the_state_dir_neither_hangs_nor_fools_a_reader(
    project: Path, isolated_state: Path, tmp_path: Path, tamper: str
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "precious").write_text("precious\n")
    proc, run_id = _tampering_run(project, isolated_state, tamper, elsewhere)
    me = {"pid": proc.pid, "host": socket.gethostname()}
    try:
        status = _answer(project, "status", run_id)
        assert (status["status"], status["stale"], status["owner"]) == ("running", False, me)
        listed = _answer(project, "list")
        assert [(r["id"], r["status"], r["stale"]) for r in listed] == [(run_id, "running", False)]
        assert _dashboard_says(project, run_id)["owner_alive"] is True
        busy = swell("resume", run_id, cwd=project, timeout=30)
        assert (busy.returncode, busy.stderr.strip()) == (
            4,
            f"error: run {run_id} is already being executed by pid {proc.pid} on {me['host']}",
        )
        approve = swell("approve", run_id, cwd=project, timeout=30)
        assert approve.returncode == 1 and "Traceback" not in approve.stderr
    finally:
        (isolated_state / "workspaces" / run_id / "go-on").write_text("")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, out + err
    assert _answer(project, "status", run_id)["status"] == "succeeded"
    evs = events(project, run_id)
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    started = Counter((e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started")
    assert set(started.values()) == {1}
    # nothing outside the workspace was written through the links
    assert sorted(os.listdir(elsewhere)) == ["precious"]
    assert (elsewhere / "precious").read_text() == "precious\n"


def test_a_killed_run_is_gone_and_resumes_whatever_a_step_planted(
    project: Path, isolated_state: Path, tmp_path: Path
) -> None:
    proc, run_id = _tampering_run(project, isolated_state, "fifo", tmp_path)
    proc.kill()
    proc.communicate(timeout=10)
    status = _answer(project, "status", run_id)
    assert (status["status"], status["stale"], status["owner"]) == ("running", True, None)
    (isolated_state / "workspaces" / run_id / "go-on").write_text("")
    resumed = swell("resume", run_id, cwd=project, timeout=60)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert _answer(project, "status", run_id)["status"] == "succeeded"


def test_claims_leave_no_file_per_run(project: Path, isolated_state: Path) -> None:
    write_pipeline(project, "slow", SLOW)
    for _ in range(2):
        _killed_midway(project, isolated_state)
    # what stays is the runs' data (time travel's checkpoints and artifact versions,
    # docs/time-travel.md), never a claim's file
    assert sorted(
        p.name for p in isolated_state.iterdir() if not p.name.startswith("state.db")
    ) == ["checkpoints.git", "runs", "workspaces"]
    claims = [
        p for p in (isolated_state / "runs").rglob("*") if "claim" in p.name or "lock" in p.name
    ]
    assert claims == []


def test_a_fifo_in_place_of_the_database_is_one_error_not_a_hang(
    project: Path, isolated_state: Path
) -> None:
    isolated_state.mkdir(parents=True)
    os.mkfifo(isolated_state / "state.db")
    for args in (("list",), ("status", "some-run"), ("resume", "some-run")):
        result = swell(*args, cwd=project, timeout=30)
        assert (result.returncode, result.stderr.strip()) == (
            1,
            f"error: cannot open the state database {isolated_state / 'state.db'}: "
            "not a regular file",
        )
