"""Crashes and stops with real processes: kill -9 then resume, Ctrl-C, cancel, timeouts,
leftover processes. The engine rules behind them (a crash at every batch boundary,
concurrency, fail-fast, cancel) are tested in process in
tests/engine/test_crashes_and_stops.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from conftest import (
    events,
    process_gone,
    run_id_of,
    start_swell,
    swell,
    swell_json,
    wait_for,
    write_pipeline,
)

SLOW_LOOP = """
kind: WavePipeline
metadata: {name: slow}
steps:
  - id: implement
    type: command
    script: |
      sleep 0.15
      echo "attempt" >> work.txt
  - id: run-tests
    type: command
    dependencies: [implement]
    script: |
      sleep 0.1
      n=$(grep -c . work.txt)
      [ "$n" -ge 4 ] || { echo "FAIL: $n of 4 (case $(echo a b c d | cut -d' ' -f$n))" >&2; exit 1; }
    output:
      context:
        passed: "{{ exit_code == 0 }}"
  - id: check
    type: conditional
    dependencies: [run-tests]
    edges:
      - {target: _complete, condition: "context.passed=true"}
      - {target: implement}
"""


def _check_event_log(evs: list[dict[str, object]]) -> None:
    """Contiguous sequence; every started visit closed exactly once; no visit started twice."""
    assert [e["seq"] for e in evs] == list(range(1, len(evs) + 1))
    started = Counter((e["step_id"], e["visit"]) for e in evs if e["type"] == "step.started")
    closed = Counter(
        (e["step_id"], e["visit"])
        for e in evs
        if e["type"] in ("step.finished", "step.interrupted")
    )
    assert all(n == 1 for n in started.values()), started
    assert started == closed


def test_kill_9_then_resume_loses_and_repeats_nothing(project: Path, isolated_state: Path) -> None:
    # one kill point here; a crash at every batch boundary: tests/engine/test_crashes_and_stops.py
    kill_after = 3  # step.finished events seen
    write_pipeline(project, "slow", SLOW_LOOP)
    proc = start_swell("run", "slow", "-o", "json", cwd=project)
    assert proc.stdout is not None
    seen = 0
    run_id = ""
    for line in proc.stdout:
        event = json.loads(line)
        run_id = event["run_id"]
        if event["type"] == "step.finished":
            seen += 1
            if seen == kill_after:
                break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    proc.stdout.close()
    proc.stderr.close()  # type: ignore[union-attr]

    before = events(project, run_id)
    status = swell_json("status", run_id, cwd=project)
    assert status["status"] == "running" and status["stale"] is True

    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    after = events(project, run_id)
    assert after[: len(before)] == before  # nothing stored was lost or rewritten
    _check_event_log(after)
    finished = [(e["step_id"], e["outcome"]) for e in after if e["type"] == "step.finished"]
    assert finished.count(("run-tests", "success")) == 1
    final = swell_json("status", run_id, cwd=project)
    assert final["status"] == "succeeded" and final["context"] == {"passed": "true"}
    # an interrupted visit runs again (at-least-once): the killed one may have appended
    # its line before it died, so the work file has at most one line more than visits
    implements = sum(1 for s, _ in finished if s == "implement")
    interrupted = [
        e for e in after if e["type"] == "step.interrupted" and e["step_id"] == "implement"
    ]
    lines = (isolated_state / "workspaces" / run_id / "work.txt").read_text().splitlines()
    assert len(lines) - implements in ((0, 1) if interrupted else (0,))
    assert implements in (3, 4) and len(lines) >= 4


def test_ctrl_c_interrupts_and_resume_continues(project: Path, isolated_state: Path) -> None:
    write_pipeline(
        project,
        "pause",
        """
kind: WavePipeline
metadata: {name: pause}
steps:
  - id: first
    type: command
    script: echo one >> log.txt
  - id: second
    type: command
    dependencies: [first]
    script: |
      echo two >> log.txt
      [ -f go-on ] || sleep 60
""",
    )
    proc = start_swell("run", "pause", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    ws = isolated_state / "workspaces" / run_id
    wait_for(lambda: "two" in (ws / "log.txt").read_text() if (ws / "log.txt").exists() else False)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, out + err
    assert "second interrupted" in out and f"swell resume {run_id}" in err
    assert swell_json("status", run_id, cwd=project)["status"] == "interrupted"

    (ws / "go-on").write_text("")
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout
    assert "re-running" not in resumed.stdout  # Ctrl-C already closed the visit
    assert (ws / "log.txt").read_text().splitlines() == ["one", "two", "two"]
    evs = events(project, run_id)
    _check_event_log(evs)
    assert [(e["step_id"], e["visit"]) for e in evs if e["type"] == "step.interrupted"] == [
        ("second", 1)
    ]


def test_resume_of_a_finished_run_is_refused(project: Path) -> None:
    run_id = run_id_of(swell("run", "loop", cwd=project).stdout)
    result = swell("resume", run_id, cwd=project)
    assert result.returncode == 1
    assert f"run {run_id} already succeeded" in result.stderr


def test_cancel_stops_a_running_run_and_its_processes(project: Path, tmp_path: Path) -> None:
    marker = f"swellsleep{os.getpid()}x{int(time.time())}"
    write_pipeline(
        project,
        "long",
        f"""
kind: WavePipeline
metadata: {{name: long}}
steps:
  - id: wait
    type: command
    script: ln -sf "$(command -v sleep)" ./{marker} && ./{marker} 60
""",
    )
    proc = start_swell("run", "long", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: not process_gone(marker))
    cancelled = swell("cancel", run_id, cwd=project)
    assert cancelled.returncode == 0, cancelled.stderr
    proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert swell_json("status", run_id, cwd=project)["status"] == "cancelled"
    wait_for(lambda: process_gone(marker), timeout=10)


def test_cancel_of_a_dead_run(project: Path) -> None:
    # the second step never ends by itself: the run is alive until it is killed
    marker = f"swelldead{os.getpid()}x{time.monotonic_ns()}"
    write_pipeline(
        project,
        "stuck",
        f"""
kind: WavePipeline
metadata: {{name: stuck}}
steps:
  - id: first
    type: command
    script: echo first
  - id: second
    type: command
    dependencies: [first]
    script: |
      ln -sf "$(command -v sleep)" ./{marker}
      ./{marker} 600
""",
    )
    proc = start_swell("run", "stuck", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: not process_gone(marker))
    proc.kill()
    proc.communicate(timeout=10)
    try:
        assert swell("cancel", run_id, cwd=project).returncode == 0
        assert swell_json("status", run_id, cwd=project)["status"] == "cancelled"
        _check_event_log(events(project, run_id))
    finally:
        subprocess.run(["pkill", "-f", marker], check=False)


def test_step_timeout_ends_the_whole_process_group(project: Path) -> None:
    marker = f"swelltimeout{os.getpid()}x{int(time.time())}"
    write_pipeline(
        project,
        "hang",
        f"""
kind: WavePipeline
metadata: {{name: hang}}
steps:
  - id: hang
    type: command
    timeout_minutes: 0.02
    script: |
      ln -sf "$(command -v sleep)" ./{marker}
      ./{marker} 60 &
      ./{marker} 60
""",
    )
    started = time.monotonic()
    result = swell("run", "hang", cwd=project)
    assert result.returncode == 1
    assert "timed out after 1.2s" in result.stdout
    assert time.monotonic() - started < 30
    wait_for(lambda: process_gone(marker), timeout=10)


def test_resume_stops_what_a_killed_run_left_behind(project: Path, isolated_state: Path) -> None:
    marker = f"swellorphan{os.getpid()}x{int(time.time())}"
    write_pipeline(
        project,
        "orphan",
        f"""
kind: WavePipeline
metadata: {{name: orphan}}
steps:
  - id: slow
    type: command
    script: |
      [ -f go-on ] && exit 0
      ln -sf "$(command -v sleep)" ./{marker}
      ./{marker} 600
      echo late >> late.txt
""",
    )
    proc = start_swell("run", "orphan", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    wait_for(lambda: not process_gone(marker))
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)
    assert not process_gone(marker)  # the step's process group outlived swell
    ws = isolated_state / "workspaces" / run_id
    (ws / "go-on").write_text("")
    resumed = swell("resume", run_id, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert process_gone(marker)
    # had only the sleep been stopped, its shell would write late.txt at once
    time.sleep(1)
    assert not (ws / "late.txt").exists()
    reasons = [e["reason"] for e in events(project, run_id) if e["type"] == "step.interrupted"]
    assert reasons == [
        "the process running this visit ended; the processes it left behind were stopped"
    ]
