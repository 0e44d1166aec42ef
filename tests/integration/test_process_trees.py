"""A step's whole process tree ends with the step: on a timeout, on `swell cancel`, on
Ctrl-C, and when a successful command step leaves background children behind, even
those that left the step's process group (`setsid`, `nohup`, a double fork, a process
that ignores SIGTERM). Every process a visit starts carries SWELL_RUN_ID, SWELL_STEP_ID
and SWELL_VISIT in its environment; these tests look for them in /proc."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from conftest import events, run_id_of, start_swell, swell, swell_json, wait_for, write_pipeline

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc to find the processes"
)

# children that leave the step's process group in every way a shell script can, and one
# that ignores SIGTERM; then the step hangs (or, with {end} = "exit 0", succeeds)
ESCAPES = """
      setsid sleep 1000 > /dev/null 2>&1 &
      nohup sleep 1001 > /dev/null 2>&1 &
      setsid sh -c 'sleep 1002 > /dev/null 2>&1 &' &
      setsid sh -c 'trap "" TERM HUP INT; exec sleep 1003' > /dev/null 2>&1 &
      sleep 0.3
      echo started > started
      {end}
"""


def _pipeline(project: Path, end: str, timeout: str = "") -> None:
    write_pipeline(
        project,
        "tree",
        f"""
kind: WavePipeline
metadata: {{name: tree}}
steps:
  - id: spawn
    type: command
    {timeout}
    script: |
{ESCAPES.format(end=end)}
""",
    )


def marked(run_id: str) -> list[str]:
    """Live processes (not zombies) whose environment names this run: 'PID cmdline'."""
    needle = f"SWELL_RUN_ID={run_id}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if state != "Z":
            found.append(f"{entry.name} {cmdline}")
    return found


def _started(ws: Path, run_id: str) -> bool:
    return (ws / "started").exists() and len(marked(run_id)) >= 5


def test_a_timeout_ends_every_process_the_step_started(project: Path, isolated_state: Path) -> None:
    _pipeline(project, "sleep 1000", timeout="timeout_minutes: 0.05")
    result = swell("run", "tree", cwd=project)
    assert result.returncode == 1
    assert "timed out after 3s" in result.stdout
    assert marked(run_id_of(result.stdout)) == []


def test_cancel_from_another_process_ends_every_process_the_step_started(
    project: Path, isolated_state: Path
) -> None:
    _pipeline(project, "sleep 1000")
    proc = start_swell("run", "tree", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    ws = isolated_state / "workspaces" / run_id
    try:
        wait_for(lambda: _started(ws, run_id))
        cancelled = swell("cancel", run_id, cwd=project)
        assert cancelled.returncode == 0, cancelled.stderr
        proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1
    assert swell_json("status", run_id, cwd=project)["status"] == "cancelled"
    assert marked(run_id) == []


def test_ctrl_c_ends_every_process_the_step_started(project: Path, isolated_state: Path) -> None:
    _pipeline(project, "sleep 1000")
    proc = start_swell("run", "tree", cwd=project)
    run_id = run_id_of(proc.stdout.readline())  # type: ignore[union-attr]
    ws = isolated_state / "workspaces" / run_id
    try:
        wait_for(lambda: _started(ws, run_id))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, out + err
    assert marked(run_id) == []


def test_background_children_of_a_successful_step_are_ended_and_named(
    project: Path, isolated_state: Path
) -> None:
    _pipeline(project, "exit 0")
    result = swell("run", "tree", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert marked(run_id) == []
    warnings = [e["message"] for e in events(project, run_id) if e["type"] == "warning"]
    assert len(warnings) == 1, warnings
    message = warnings[0]
    assert message.startswith("step 'spawn' left processes running after it ended; stopped them:")
    for n in (1000, 1001, 1002, 1003):
        assert f"sleep {n}" in message
    assert swell_json("status", run_id, cwd=project)["status"] == "succeeded"


def test_background_children_holding_the_output_are_ended_and_named(
    project: Path, isolated_state: Path
) -> None:
    """A child left in the step's own group holding its stdout (`sleep 1004 &`): the
    runner stops reading after the shell exits and kills the group; the warning names it
    (it used to be killed without one), also when it holds only stderr."""
    write_pipeline(
        project,
        "hold",
        """
kind: WavePipeline
metadata: {name: hold}
steps:
  - id: spawn
    type: command
    script: |
      sleep 1004 &
      sleep 1005 > /dev/null &
      echo started
""",
    )
    result = swell("run", "hold", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    run_id = run_id_of(result.stdout)
    assert marked(run_id) == []
    assert "left processes running after it ended" in result.stdout
    warnings = [e["message"] for e in events(project, run_id) if e["type"] == "warning"]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("step 'spawn' left processes running after it ended;")
    assert "sleep 1004" in warnings[0] and "sleep 1005" in warnings[0]
    logs = swell("logs", run_id, cwd=project)
    assert "sleep 1004" in logs.stdout
