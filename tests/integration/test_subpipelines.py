"""Sub-pipelines run as child runs linked to their parent (failures and resume inside a
child: tests/engine/test_child_runs.py)."""

from __future__ import annotations

from pathlib import Path

from conftest import run_id_of, swell, swell_json, write_pipeline


def test_sub_pipeline_is_a_linked_child_run(project: Path, isolated_state: Path) -> None:
    result = swell("run", "release", "--input", "v1", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    parent = run_id_of(result.stdout)
    status = swell_json("status", parent, cwd=project)
    assert [s["step_id"] for s in status["steps"]] == ["build", "tag"]
    assert len(status["children"]) == 1
    child = swell_json("status", status["children"][0], cwd=project)
    assert child["pipeline"] == "loop" and child["status"] == "succeeded"
    assert child["parent_run_id"] == parent and child["parent_step_id"] == "build"
    assert child["input"] == "release build of v1"
    assert child["visits"] == 9
    # the child works in its parent's workspace
    assert (isolated_state / "workspaces" / parent / "work.txt").is_file()
    runs = swell_json("list", cwd=project)
    assert {r["id"] for r in runs} == {parent, child["id"]}


def test_kill_9_inside_a_child_run_resumes_that_child(project: Path) -> None:
    import json
    import os
    import signal

    from conftest import events, start_swell

    write_pipeline(
        project,
        "slowchild",
        """
kind: WavePipeline
metadata: {name: slowchild}
steps:
  - id: one
    type: command
    script: echo one >> child.log
  - id: two
    type: command
    dependencies: [one]
    script: sleep 1; echo two >> child.log
""",
    )
    write_pipeline(
        project,
        "outer",
        """
kind: WavePipeline
metadata: {name: outer}
steps:
  - id: sub
    pipeline: slowchild
  - id: after
    type: command
    dependencies: [sub]
    script: cat child.log
""",
    )
    proc = start_swell("run", "outer", "-o", "json", cwd=project)
    assert proc.stdout is not None
    parent = ""
    for line in proc.stdout:
        event = json.loads(line)
        parent = parent or event["run_id"]
        if event["type"] == "step.started" and event["step_id"] == "two":
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=10)

    resumed = swell("resume", parent, cwd=project)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    status = swell_json("status", parent, cwd=project)
    assert status["status"] == "succeeded" and len(status["children"]) == 1
    child_id = status["children"][0]
    child_events = events(project, child_id)
    assert [e["type"] for e in child_events].count("run.resumed") == 1
    assert [
        (e["step_id"], e["visit"]) for e in child_events if e["type"] == "step.interrupted"
    ] == [("two", 1)]
    assert len(swell_json("list", cwd=project)) == 2
